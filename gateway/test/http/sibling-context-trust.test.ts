/**
 * Sibling contexts the cluster did not issue, on the embedded cluster (issue 23, item 1): a
 * context is signed for its key, so the context of another key of the partition cannot claim a
 * write to this key that its region has not made (it was checked against the partition's log),
 * and a forged counter of another region cannot reach that region's counter for the key.
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import {
  expectForeignCounterHarmless,
  expectOtherKeysContextHarmless,
} from '../support/forged-context.js'

const PARTITIONS = 2
let dev: DevCluster
let urls: [string, string]

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 2,
    port: 0,
    wanDelayMs: 100,
    replicaLagMs: 10,
    namespaces: { cart: { conflicts: 'siblings' } },
  })
  urls = dev.urls as [string, string]
})
afterAll(() => dev.close())

describe('sibling contexts the cluster did not issue (embedded)', () => {
  it("refuses another key's context, which named a write of r1 to this key not yet made", async () => {
    await expectOtherKeysContextHarmless(urls, PARTITIONS, 'cart:borrowed')
  })

  it("a forged counter of r1 neither makes the key unwritable in r1 nor drops r1's sibling", async () => {
    await expectForeignCounterHarmless(urls, 'cart:forged-r1')
  })
})
