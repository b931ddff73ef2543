import {
  CausewayError,
  DEFAULT_LIMITS,
  HLC_ZERO,
  type Hlc,
  INITIAL_HISTORY,
  SessionNotAvailableError,
  checkHistory,
  hlcFrom,
  hlcMillis,
} from '@causeway/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ReadRequest, WriteRequest } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster, type EmbeddedClusterOptions } from '../../src/cluster/embedded-cluster.js'
import { RegionService } from '../../src/cluster/region-service.js'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'

const HOUR = 3_600_000

function read(key: string, options: Partial<ReadRequest> = {}): ReadRequest {
  return { key, partition: 0, replica: 'any', timeoutMs: 2000, level: 'session', ...options }
}

function write(
  key: string,
  value: string | undefined,
  options: Partial<WriteRequest> = {},
): WriteRequest {
  return {
    key,
    partition: 0,
    value,
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

describe('RegionService', () => {
  const clusters: EmbeddedCluster[] = []
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.close()))
  })

  async function start(options: Partial<EmbeddedClusterOptions> = {}) {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 2,
      replicas: 3,
      ...options,
    })
    clusters.push(cluster)
    return cluster
  }

  describe('shape', () => {
    it('describes the cluster as the region sees it', async () => {
      const cluster = await start({ regionNames: ['eu', 'us'], limits: { maxSkewMs: 1234 } })
      expect(cluster.service(1).shape()).toEqual({
        cluster: cluster.id,
        region: 1,
        regionNames: ['eu', 'us'],
        partitions: 2,
        replicas: 3,
        epochs: [1, 1],
        limits: { ...DEFAULT_LIMITS, maxSkewMs: 1234 },
        shipping: 'fifo',
        namespaces: {},
      })
    })
  })

  describe('write', () => {
    it('writes at the leader and replies with the origin, idx, ts and epoch', async () => {
      const cluster = await start()
      const region = cluster.service(1)
      const a = await region.write(write('a', '1'))
      const b = await region.write(write('b', undefined, { partition: 1 }))
      const c = await region.write(write('c', '3'))
      expect(a).toMatchObject({ dc: 1, idx: 1, epoch: 1 })
      expect(b).toMatchObject({ dc: 1, idx: 1, epoch: 1 })
      expect(c).toMatchObject({ dc: 1, idx: 2 })
      expect(c.ts > a.ts).toBe(true)
      expect(cluster.replica(1, 0, 0).sv()).toEqual([0, 2])
      expect((await cluster.replica(1, 1, 0).read('b')).version).toEqual({ ts: b.ts, dc: 1 })
    })

    it('stamps a write after its dependency time', async () => {
      const cluster = await start()
      const dt = hlcFrom(Date.now() + 2000, 5)
      const w = await cluster.service(0).write(write('k', '1', { dt }))
      expect(w.ts > dt).toBe(true)
    })

    it('rejects a dependency time too far ahead of the region clock, writing nothing', async () => {
      const cluster = await start({ limits: { maxSkewMs: 5000 }, skewWaitMs: 100 })
      const region = cluster.service(0)
      const dt = hlcFrom(Date.now() + 60_000, 0)
      const error = await rejection(region.write(write('k', '1', { dt })))
      expect(error.code).toBe('CLOCK_SKEW_EXCEEDED')
      expect(error.status).toBe(400)
      expect(error.details).toMatchObject({ dt, maxSkewMs: 5000 })
      expect(error.details?.aheadMs).toBeGreaterThan(50_000)
      expect(cluster.replica(0, 0, 0).sv()).toEqual([0, 0])
      // The refused dependency did not move the clock either.
      const ok = await region.write(write('k', '2'))
      expect(ok.idx).toBe(1)
      expect(hlcMillis(ok.ts)).toBeLessThan(Date.now() + 1000)
    })

    it('measures skew against the region’s own clock', async () => {
      // Region 1's clock runs 10 s ahead, so a dependency 8 s ahead is fine there and not in region 0.
      const cluster = await start({
        limits: { maxSkewMs: 5000 },
        clockOffsetsMs: [0, 10_000],
        skewWaitMs: 100,
      })
      const dt = hlcFrom(Date.now() + 8000, 0)
      expect((await rejection(cluster.service(0).write(write('k', '1', { dt })))).code).toBe(
        'CLOCK_SKEW_EXCEEDED',
      )
      const w = await cluster.service(1).write(write('k', '1', { dt }))
      expect(hlcMillis(w.ts)).toBeGreaterThanOrEqual(Date.now() + 9000)
    })

    it('with majority durability, replies once a majority of replicas applied the write', async () => {
      const cluster = await start({ replicaLagMs: 80 })
      const region = cluster.service(0)
      const started = Date.now()
      const w = await region.write(write('k', '1', { durability: 'majority' }))
      expect(Date.now() - started).toBeGreaterThanOrEqual(75)
      const applied = [1, 2].filter((i) => (cluster.replica(0, 0, i).sv()[0] ?? 0) >= w.idx)
      expect(applied.length).toBeGreaterThanOrEqual(1)
    })

    it('with leader durability, replies before the followers applied the write', async () => {
      const cluster = await start({ replicaLagMs: 200 })
      await cluster.service(0).write(write('k', '1'))
      expect(cluster.replica(0, 0, 1).sv()).toEqual([0, 0])
      expect(cluster.replica(0, 0, 2).sv()).toEqual([0, 0])
    })
  })

  describe('read', () => {
    it('returns the version and the serving replica’s sv[dc] as idx', async () => {
      const cluster = await start()
      const region = cluster.service(0)
      const a = await region.write(write('a', '"a"'))
      await region.write(write('b', '"b"'))
      const r = await region.read(read('a', { replica: 'leader' }))
      expect(r).toMatchObject({
        version: { value: '"a"', ts: a.ts, dc: 0 },
        idx: 2,
        epoch: 1,
        replica: 0,
      })
      const missing = await region.read(read('nothing', { replica: 'leader' }))
      expect(missing.version).toBeUndefined()
      expect(missing.idx).toBeUndefined()
    })

    it('routes to the replica asked for', async () => {
      const cluster = await start()
      const region = cluster.service(0)
      for (let i = 0; i < 10; i++)
        expect((await region.read(read('k', { replica: 'leader' }))).replica).toBe(0)
      const followers = new Set<number>()
      for (let i = 0; i < 30; i++)
        followers.add((await region.read(read('k', { replica: 'follower' }))).replica)
      expect([...followers].sort()).toEqual([1, 2])
      const any = new Set<number>()
      for (let i = 0; i < 60; i++) any.add((await region.read(read('k'))).replica)
      expect([...any].sort()).toEqual([0, 1, 2])
    })

    it('prefers a replica that already covers the need, so it does not wait', async () => {
      const cluster = await start({ replicaLagMs: 10_000 })
      const region = cluster.service(0)
      const w = await region.write(write('k', '"v"'))
      for (let i = 0; i < 10; i++) {
        const r = await region.read(read('k', { need: { epoch: 1, need: [w.idx, 0] } }))
        expect(r.replica).toBe(0)
        // Not the followers' 10 s lag (a busy machine may take more than the 50 ms once held).
        expect(r.waitedMs).toBeLessThan(5000)
        expect(r.version?.value).toBe('"v"')
      }
    })

    it('waits at a lagging replica until it covers the need', async () => {
      // A lag long enough that a stall between the write and the read cannot hide the wait
      // (at 60 ms, a 30 ms stall let the follower catch up first and the bound below failed).
      const cluster = await start({ replicaLagMs: 1500 })
      const region = cluster.service(0)
      const w = await region.write(write('k', '"v"'))
      const r = await region.read(
        read('k', { replica: 'follower', timeoutMs: 20_000, need: { epoch: 1, need: [w.idx, 0] } }),
      )
      expect(r.replica).not.toBe(0)
      expect(r.waitedMs).toBeGreaterThanOrEqual(500)
      expect(r).toMatchObject({ version: { value: '"v"', dc: 0 }, idx: 1 })
    })

    it('waits for shipping from another region (read-your-writes across regions)', async () => {
      // A WAN delay long enough that a stall before the read cannot hide its wait (at 40 ms it could).
      const cluster = await start({ wanDelayMs: 1500 })
      const w = await cluster.service(0).write(write('k', '"from r0"'))
      expect(
        (await cluster.service(1).read(read('k', { replica: 'leader' }))).version,
      ).toBeUndefined()
      const r = await cluster
        .service(1)
        .read(read('k', { timeoutMs: 20_000, need: { epoch: 1, need: [w.idx, 0] } }))
      expect(r.version).toEqual({ value: '"from r0"', ts: w.ts, dc: 0 })
      expect(r.waitedMs).toBeGreaterThanOrEqual(500)
    })

    it('serves an eventual read at once, even from a stale follower', async () => {
      const cluster = await start({ replicaLagMs: 10_000 })
      const region = cluster.service(0)
      await region.write(write('k', '"v"'))
      const r = await region.read(read('k', { replica: 'follower' }))
      expect(r.version).toBeUndefined()
      // No vector, no wait at all (not "under 50 ms", which a busy machine can miss).
      expect(r.waitedMs).toBe(0)
    })

    it('fails with SESSION_NOT_AVAILABLE, need and sv at the deadline', async () => {
      const cluster = await start({ replicaLagMs: 10_000 })
      const region = cluster.service(0)
      const w = await region.write(write('k', '"v"'))
      const started = Date.now()
      const error = await rejection(
        region.read(
          read('k', { replica: 'follower', timeoutMs: 40, need: { epoch: 1, need: [w.idx, 0] } }),
        ),
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(35)
      expect(error).toBeInstanceOf(SessionNotAvailableError)
      expect(error.code).toBe('SESSION_NOT_AVAILABLE')
      expect(error.status).toBe(503)
      expect(error.details).toMatchObject({
        need: { 0: 1, 1: 0 },
        sv: { 0: 0, 1: 0 },
        region: 0,
        partition: 0,
      })
      expect([1, 2]).toContain(error.details?.replica)
    })

    it('fails at once for a vector no replica can ever reach', async () => {
      const cluster = await start()
      const region = cluster.service(0)
      await region.write(write('k', '"v"'))
      for (const need of [
        [2, 0],
        [0, 1],
      ]) {
        const started = Date.now()
        const error = await rejection(
          region.read(read('k', { timeoutMs: 5000, need: { epoch: 1, need } })),
        )
        // Refused, not waited on: the code says so (a wait would end SESSION_NOT_AVAILABLE at the
        // deadline); the bound is the deadline itself, not a guess at the machine's speed.
        expect(Date.now() - started).toBeLessThan(5000)
        expect(error.code).toBe('VECTOR_UNREACHABLE')
        expect(error.status).toBe(400)
      }
      const error = await rejection(region.read(read('k', { need: { need: [2, 0] } })))
      expect(error.details).toEqual({ partition: 0, region: 0, need: 2, written: 1 })
    })

    it('checks reachability against the origin leader, not the local one', async () => {
      // Region 1 wrote idx 1 but has not shipped it yet: region 0 must wait, not refuse.
      const cluster = await start({ wanDelayMs: 40 })
      const w = await cluster.service(1).write(write('k', '"v"'))
      const r = await cluster.service(0).read(read('k', { need: { epoch: 1, need: [0, w.idx] } }))
      expect(r.version).toMatchObject({ value: '"v"', dc: 1 })
    })

    it('refuses a position in an epoch this region never had', async () => {
      const cluster = await start()
      const error = await rejection(
        cluster.service(0).read(read('k', { need: { need: [1, 0], epochs: [2, 0] } })),
      )
      expect(error.code).toBe('VECTOR_UNREACHABLE')
      expect(error.details).toEqual({ partition: 0, region: 0, epoch: 2, current: 1 })
    })

    it('refuses a vector that depends on a position a failover lost, naming what was kept', async () => {
      // Region 0's epoch 1 kept 1..58; epoch 3 started at 1001 (the embedded cluster never
      // fails over: a leader with that history stands in for one that did).
      const supports = { siblings: true, sets: true, multiVersionReads: false, refresh: false }
      const history = checkHistory([
        { epoch: 1, first: 1, last: 58 },
        { epoch: 3, first: 1001 },
      ])
      const leader = {
        replica: 0,
        epoch: () => 3,
        epochHistory: (d: number) => (d === 0 ? history : INITIAL_HISTORY),
        available: true,
        supports: { ...supports, opRecords: true },
      } as unknown as AbstractPartitionReplica
      const region = new RegionService({
        cluster: 'c',
        region: 0,
        regionNames: ['a', 'b'],
        limits: DEFAULT_LIMITS,
        replicas: [[leader]],
      })
      const error = await rejection(
        region.read(read('k', { need: { need: [60, 4], epochs: [1, 1] } })),
      )
      expect(error.code).toBe('EPOCH_MISMATCH')
      expect(error.status).toBe(409)
      expect(error.details).toEqual({
        partition: 0,
        lost: [{ region: 0, epoch: 1, idx: 60, kept: 58, keptEpoch: 1 }],
        current: 3,
      })
      expect(error.message).toContain('epoch 1 kept 1..58; epoch 3 from 1001')
      // Without the epoch of the position, its index alone says it was lost.
      const unknown = await rejection(region.read(read('k', { need: { need: [700, 0] } })))
      expect(unknown.code).toBe('EPOCH_MISMATCH')
      // A write after a lost one of its session is refused too, before anything is written.
      const refused = await rejection(
        region.write(write('k', '"v"', { need: { need: [60, 0], epochs: [1, 0] } })),
      )
      expect(refused.code).toBe('EPOCH_MISMATCH')
    })
  })

  describe('status', () => {
    it('reports every replica and shipper of the region', async () => {
      const cluster = await start({ replicaLagMs: 10_000, wanDelayMs: 10_000 })
      const region = cluster.service(0)
      await region.write(write('a', '1'))
      await region.write(write('b', '1'))
      // Until the follower's missing entries are old enough to tell an age from none.
      await vi.waitFor(async () =>
        expect((await region.status()).replicas[1]!.lag.ms).toBeGreaterThanOrEqual(25),
      )
      const status = await region.status()
      expect(status.cluster).toBe(cluster.id)
      expect(status.region).toBe(0)
      expect(status.replicas).toHaveLength(6)
      const [leader, follower] = status.replicas
      expect(leader).toEqual({
        region: 0,
        partition: 0,
        replica: 0,
        role: 'leader',
        backend: 'level:memory',
        epoch: 1,
        sv: [2, 0],
        lag: { entries: 0, ms: 0 },
      })
      expect(follower).toMatchObject({
        replica: 1,
        role: 'follower',
        sv: [0, 0],
        lag: { entries: 2 },
      })
      expect(follower!.lag.ms).toBeGreaterThanOrEqual(25)
      expect(status.shippers).toMatchObject([
        { partition: 0, from: 0, to: 1, shipped: 0, backlog: 2 },
        { partition: 1, from: 0, to: 1, shipped: 0, backlog: 0, lagMs: 0 },
      ])
      // The oldest write not yet acknowledged is as old as the follower's oldest missing one.
      expect(status.shippers[0]!.lagMs).toBeGreaterThanOrEqual(25)
    })
  })

  it('keeps sessions monotonic across regions whose clocks disagree', async () => {
    // Region 1's clock is an hour ahead. A session that read its write and then writes in region
    // 0 still gets a later timestamp there, so the later write wins everywhere (writes-follow-reads).
    const cluster = await start({ clockOffsetsMs: [0, HOUR], limits: { maxSkewMs: 2 * HOUR } })
    const first = await cluster.service(1).write(write('k', '"first"'))
    const seen = await cluster
      .service(0)
      .read(read('k', { need: { epoch: 1, need: [0, first.idx] } }))
    const dt: Hlc = seen.version!.ts
    const second = await cluster.service(0).write(write('k', '"second"', { dt }))
    expect(second.ts > first.ts).toBe(true)
    const need = { epoch: 1, need: [second.idx, first.idx] }
    for (const d of [0, 1]) {
      expect(
        (await cluster.service(d).read(read('k', { need, replica: 'leader' }))).version?.value,
      ).toBe('"second"')
    }
  })
})
