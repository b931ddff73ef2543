/**
 * Causal shipping and clocks ahead (issue 23, item 2): a label leaves its region only once every
 * partition's time has passed it, so a write stamped 25 s ahead (a client's `causeway-dt`, or its
 * `causeway-clock` at level causal, both within `maxSkewMs`) used to hold back the cross-region
 * visibility of every later write of its partition, whoever made it, for 25 s. A causal cluster
 * bounds dependency times to `causal.maxAheadMs` (250 ms by default) past the latest region
 * clock known: further ahead, a write waits up to `skewWaitMs` for the clocks, then is refused.
 */
import { CausewayError, HLC_ZERO, hlcFrom, type Hlc } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WriteRequest } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'

function write(key: string, options: Partial<WriteRequest> = {}): WriteRequest {
  return {
    key,
    partition: 0,
    value: JSON.stringify(key),
    dt: HLC_ZERO,
    durability: 'leader',
    level: 'session',
    ...options,
  }
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'accepted'
  } catch (error) {
    if (error instanceof CausewayError) return error.code
    throw error
  }
}

/** Resolves once region `d` shows `key` (partition 0) with its own value, or rejects after `ms`. */
async function visibleIn(
  cluster: EmbeddedCluster,
  d: number,
  key: string,
  ms: number,
): Promise<number> {
  const started = performance.now()
  for (;;) {
    const read = await cluster.service(d).read({
      key,
      partition: 0,
      replica: 'leader',
      timeoutMs: 0,
      level: 'eventual',
    })
    if (read.version?.value === JSON.stringify(key)) return performance.now() - started
    if (performance.now() - started > ms)
      throw new Error(`${key} not visible in region ${d} after ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('a causal cluster and dependency times ahead of the clocks', () => {
  const clusters: EmbeddedCluster[] = []
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.close()))
  })

  async function start(): Promise<EmbeddedCluster> {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 2,
      replicas: 1,
      shipping: 'causal',
      causal: { thetaMs: 5, deltaMs: 10 },
      skewWaitMs: 300,
    })
    clusters.push(cluster)
    return cluster
  }

  it("a writer 25 s ahead does not hold back other sessions' writes in the other region", async () => {
    const cluster = await start()
    const ahead: Hlc = hlcFrom(Date.now() + 25_000, 0)
    // Both ways of sending a time 25 s ahead (within maxSkewMs, 30 s): a dependency time, and a
    // causal write's vector clock.
    const byDt = await outcome(cluster.service(0).write(write('ahead-dt', { dt: ahead })))
    const byClock = await outcome(
      cluster.service(0).write(write('ahead-clock', { level: 'causal', clock: [ahead, HLC_ZERO] })),
    )
    // Another session writes the same partition after it, with no dependency at all.
    await cluster.service(0).write(write('victim'))
    // Visible in the other region within the usual bound (WAN 0 ms + theta + Delta, with room for
    // a busy machine), not 25 s later.
    await visibleIn(cluster, 1, 'victim', 8_000)
    expect([byDt, byClock]).toEqual(['CLOCK_SKEW_EXCEEDED', 'CLOCK_SKEW_EXCEEDED'])
    // A dependency time a little ahead is still served: at once within maxAheadMs, and 400 ms
    // ahead (past maxAheadMs, 250 ms) after waiting for the clock, within skewWaitMs (300 ms).
    const near = await cluster.service(0).write(write('near', { dt: hlcFrom(Date.now() + 100, 0) }))
    const later = await cluster
      .service(0)
      .write(write('later', { dt: hlcFrom(Date.now() + 400, 0) }))
    expect(later.ts > near.ts).toBe(true)
    await visibleIn(cluster, 1, 'later', 8_000)
  }, 30_000)

  it('causal.maxAheadMs must be an integer of ms in 0..3600000', async () => {
    for (const maxAheadMs of [-1, 1.5, 3_600_001])
      await expect(
        EmbeddedCluster.start({
          regions: 2,
          partitions: 1,
          replicas: 1,
          shipping: 'causal',
          causal: { maxAheadMs },
        }),
      ).rejects.toMatchObject({ code: 'INVALID_OPTION' })
  })
})
