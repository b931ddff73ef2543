/**
 * Issue 12, defect 1, on the Redis deployment: a forged causal context (counter 2^53 - 1)
 * answered 400 but the Lua script committed a counter of 2^53, which TypeScript then refused on
 * every read and write of the key and on every shipping attempt of its partition (a growing
 * backlog, the other region's reads 503). Now it is refused before the script runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectForgedContextHarmless } from '../support/forged-context.js'
import { call } from '../support/http-calls.js'
import { failures, startRedisDeployment, type RedisDeployment } from './redis-cluster-fixture.js'

const PARTITIONS = 2
let deployment: RedisDeployment

beforeAll(async () => {
  deployment = await startRedisDeployment(PARTITIONS)
}, 30_000)
afterAll(() => deployment?.close())

describe('a forged causal context on the Redis deployment', () => {
  it('is a 400 that leaves the key readable, writable and its partition shipping', async () => {
    await expectForgedContextHarmless(deployment.urls, PARTITIONS)
    for (const url of deployment.urls) {
      const status = await call(`${url}/v1/status`)
      const shippers = status.body.shippers as { backlog: number }[]
      expect(shippers.length).toBeGreaterThan(0)
      for (const s of shippers) expect(s.backlog, JSON.stringify(s)).toBe(0)
    }
    expect(failures(deployment.events)).toEqual([])
  }, 40_000)
})
