/**
 * Regions whose wall clocks disagree (the embedded cluster's `clockOffsetsMs`): a session that
 * comes from a region whose clock runs ahead may write in one whose clock is behind, however far,
 * once that region knows the other's clock from its shipped entries (waiting a bounded time for
 * them when they are still on their way); a dependency time further ahead than every region's
 * clock is still refused with `CLOCK_SKEW_EXCEEDED`, writing nothing, and the regions cannot
 * ratchet each other's clocks forward through their clients. (The same over Redis, through the
 * SDK: `test/deploy/redis-clock-skew.test.ts`.)
 */
import { CausewayError, HLC_ZERO, hlcFrom, hlcMillis, type Hlc } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WriteRequest } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster, type EmbeddedClusterOptions } from '../../src/cluster/embedded-cluster.js'

const MINUTE = 60_000

function write(key: string, options: Partial<WriteRequest> = {}): WriteRequest {
  return {
    key,
    partition: 0,
    value: '"v"',
    dt: HLC_ZERO,
    durability: 'leader',
    level: 'session',
    ...options,
  }
}

async function rejection(promise: Promise<unknown>): Promise<CausewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!(error instanceof CausewayError))
    throw new Error(`expected a CausewayError, got ${String(error)}`)
  return error
}

describe('clock skew between regions', () => {
  const clusters: EmbeddedCluster[] = []
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.close()))
  })

  async function start(options: Partial<EmbeddedClusterOptions> = {}) {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 2,
      replicas: 1,
      // Region 1's clock runs a minute ahead: twice the default maxSkewMs.
      clockOffsetsMs: [0, MINUTE],
      ...options,
    })
    clusters.push(cluster)
    return cluster
  }

  it('serves a session write in the region whose clock is behind, ordered after what it saw', async () => {
    const cluster = await start()
    const first = await cluster.service(1).write(write('k'))
    expect(hlcMillis(first.ts)).toBeGreaterThan(Date.now() + MINUTE - 1000)
    await cluster.replica(0, 0, 0).waitFor([0, first.idx], Date.now() + 5000)
    const second = await cluster.service(0).write(write('k', { dt: first.ts }))
    expect(second.ts > first.ts).toBe(true)
  })

  it('waits, bounded, for the entries that carry the other clock, of any partition', async () => {
    // Shipping takes 300 ms each way: the write in region 0 comes before region 1's entry.
    const cluster = await start({ wanDelayMs: 300, skewWaitMs: 5000 })
    const first = await cluster.service(1).write(write('k', { partition: 1 }))
    const started = performance.now()
    const second = await cluster.service(0).write(write('j', { dt: first.ts }))
    expect(second.ts > first.ts).toBe(true)
    // It waited until region 0 had region 1's entry (of another partition).
    expect(performance.now() - started).toBeGreaterThanOrEqual(200)
    expect(cluster.replica(0, 1, 0).sv()[1]).toBe(first.idx)
  })

  it('still refuses a time further ahead than every region clock, after the wait, writing nothing', async () => {
    const cluster = await start({ limits: { maxSkewMs: 5000 }, skewWaitMs: 200 })
    const known = await cluster.service(1).write(write('k'))
    await cluster.replica(0, 0, 0).waitFor([0, known.idx], Date.now() + 5000)
    // Region 1's clock (a minute ahead) is known in region 0; ten seconds past it is not allowed.
    const dt = hlcFrom(Date.now() + MINUTE + 10_000, 0)
    const started = performance.now()
    const error = await rejection(cluster.service(0).write(write('k', { dt })))
    expect(error.code).toBe('CLOCK_SKEW_EXCEEDED')
    expect(error.status).toBe(400)
    expect(error.details).toMatchObject({ dt, maxSkewMs: 5000 })
    expect(error.details?.aheadMs).toBeGreaterThan(5000)
    expect(error.details?.aheadMs).toBeLessThan(11_000)
    expect(performance.now() - started).toBeGreaterThanOrEqual(150)
    expect(cluster.replica(0, 0, 0).sv()).toEqual([0, known.idx])
    // Within maxSkewMs of region 1's clock is fine.
    const ok = await cluster
      .service(0)
      .write(write('k', { dt: hlcFrom(Date.now() + MINUTE + 3000, 0) }))
    expect(ok.idx).toBe(1)
  })

  it('refuses at once a time further ahead than any region clock may run (maxClockOffsetMs)', async () => {
    const cluster = await start({ clockOffsetsMs: [0, 0], skewWaitMs: 30_000 })
    const started = performance.now()
    const error = await rejection(
      cluster.service(0).write(write('k', { dt: hlcFrom(Date.now() + 24 * 60 * MINUTE, 0) })),
    )
    expect(error.code).toBe('CLOCK_SKEW_EXCEEDED')
    // An hour past the clock by default: no wait for a later clock to be known.
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(error.details?.waitedMs).toBeLessThan(1000)
    expect(cluster.replica(0, 0, 0).sv()).toEqual([0, 0])
  })

  it('admits sessions from a region known to run further ahead than maxClockOffsetMs', async () => {
    const cluster = await start({ maxClockOffsetMs: 1000 })
    const first = await cluster.service(1).write(write('k'))
    await cluster.replica(0, 0, 0).waitFor([0, first.idx], Date.now() + 5000)
    const second = await cluster.service(0).write(write('k', { dt: first.ts }))
    expect(second.ts > first.ts).toBe(true)
  })

  it('measures other regions by their wall clocks, so clients cannot ratchet the clocks forward', async () => {
    // Same clocks. A client pushes region 1's HLC 4 s ahead (allowed: maxSkewMs is 5 s) ...
    const cluster = await start({
      clockOffsetsMs: [0, 0],
      limits: { maxSkewMs: 5000 },
      skewWaitMs: 200,
    })
    const pushed = await cluster.service(1).write(write('k', { dt: hlcFrom(Date.now() + 4000, 0) }))
    await cluster.replica(0, 0, 0).waitFor([0, pushed.idx], Date.now() + 5000)
    // ... and another client, in region 0, 4 s past that: region 1's entry says its wall clock
    // is now, not 4 s ahead, so 8 s ahead is refused.
    const further: Hlc = hlcFrom(hlcMillis(pushed.ts) + 4000, 0)
    expect((await rejection(cluster.service(0).write(write('k', { dt: further })))).code).toBe(
      'CLOCK_SKEW_EXCEEDED',
    )
    // The pushed time itself is a session's dependency like any: served.
    const after = await cluster.service(0).write(write('k', { dt: pushed.ts }))
    expect(after.ts > pushed.ts).toBe(true)
  })
})
