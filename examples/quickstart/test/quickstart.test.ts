import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevCluster, startDevCluster } from '@causeway/gateway'
import { quickstart } from '../src/quickstart.js'

describe('quick start example', () => {
  let dev: DevCluster
  beforeAll(async () => {
    dev = await startDevCluster({
      regions: 2,
      partitions: 4,
      replicas: 3,
      port: 0,
      // Long enough that the read in region 1 comes well before the write's shipment even on a
      // busy machine (at 200 ms a slow run once found the read waiting only 38 ms), and short
      // enough for the gateway's wait (at 1 s the SDK fell back to the home region).
      wanDelayMs: 500,
      replicaLagMs: 20,
    })
  })
  afterAll(() => dev?.close())

  it('reads its own write in the other region at once, and a restored session keeps it', async () => {
    const lines: string[] = []
    const report = await quickstart(dev.urls[0]!, (l) => lines.push(l))
    expect(report.readInOtherRegion).toMatchObject({
      found: true,
      value: { name: 'Ada' },
      region: 1,
    })
    // The write had to cross a 500 ms WAN link: the replica in region 1 waited for it.
    expect(report.readInOtherRegion.waitedMs).toBeGreaterThan(100)
    expect(report.restoredSessionRead).toEqual({ found: true, value: { name: 'Ada' } })
    expect(lines.length).toBe(4)
  })
})
