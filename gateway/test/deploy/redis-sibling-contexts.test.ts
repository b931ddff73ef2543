/**
 * Sibling contexts the cluster did not issue, on the Redis deployment (issue 23, item 1):
 * `causeway-context: wQEB_v_______w8` (r1's counter at 2^53 - 2) written in r0 made the key
 * unwritable in r1 for good (`409 COUNTER_EXHAUSTED`) and dropped r1's concurrent sibling; and the
 * context of another key must not stand for this one.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import {
  expectForeignCounterHarmless,
  expectOtherKeysContextHarmless,
} from '../support/forged-context.js'
import { startRedisDeployment, type RedisDeployment } from './redis-cluster-fixture.js'

const PARTITIONS = 2
let deployment: RedisDeployment

beforeAll(async () => {
  deployment = await startRedisDeployment(PARTITIONS)
}, 30_000)
afterAll(() => deployment?.close())

describe('sibling contexts the cluster did not issue (Redis)', () => {
  it("a forged counter of r1 neither makes the key unwritable in r1 nor drops r1's sibling", async () => {
    await expectForeignCounterHarmless(deployment.urls, 'cart:v')
  }, 60_000)

  it("refuses another key's context, which named a write of r1 to this key not yet made", async () => {
    await expectOtherKeysContextHarmless(deployment.urls, PARTITIONS, 'cart:borrowed')
  }, 60_000)
})
