import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HLC_ZERO } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WriteResult } from '../../src/cluster/cluster-service.js'
import { EmbeddedCluster, type EmbeddedClusterOptions } from '../../src/cluster/embedded-cluster.js'

interface Acked extends WriteResult {
  key: string
  value: string
  partition: number
}

describe('EmbeddedCluster', () => {
  const cleanup: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  async function start(options: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
    const cluster = await EmbeddedCluster.start(options)
    cleanup.push(() => cluster.close())
    return cluster
  }

  async function tmp(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-cluster-'))
    cleanup.push(() => rm(dir, { recursive: true, force: true }))
    return dir
  }

  let round = 0

  /** Concurrent writes of new, distinct keys in every region, each acknowledged. */
  async function writeEverywhere(cluster: EmbeddedCluster, perRegion: number): Promise<Acked[]> {
    const writes: Promise<Acked>[] = []
    round++
    for (let d = 0; d < cluster.regions; d++) {
      for (let i = 0; i < perRegion; i++) {
        const key = `w${round}-r${d}-k${i}`
        const value = JSON.stringify({ d, i })
        const partition = i % cluster.partitions
        const request = {
          key,
          partition,
          value,
          dt: HLC_ZERO,
          durability: 'leader',
          level: 'session',
        } as const
        writes.push(
          cluster
            .service(d)
            .write(request)
            .then((w) => ({ ...w, key, value, partition })),
        )
      }
    }
    return Promise.all(writes)
  }

  /** Waits until every replica of every region has applied everything its origin leaders wrote. */
  async function converged(cluster: EmbeddedCluster, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms
    for (let p = 0; p < cluster.partitions; p++) {
      const need = Array.from(
        { length: cluster.regions },
        (_, d) => cluster.replica(d, p, 0).sv()[d]!,
      )
      for (let d = 0; d < cluster.regions; d++) {
        for (let i = 0; i < cluster.replicas; i++) {
          const replica = cluster.replica(d, p, i)
          if (!(await replica.waitFor(need, deadline))) {
            throw new Error(
              `replica ${i} of partition ${p} in region ${d} stuck at ${replica.sv()}, needs ${need}`,
            )
          }
        }
      }
    }
  }

  /** Every acknowledged write is in every replica, at its idx, exactly once. */
  async function expectAllPresent(
    cluster: EmbeddedCluster,
    acked: readonly Acked[],
  ): Promise<void> {
    for (let p = 0; p < cluster.partitions; p++) {
      for (let origin = 0; origin < cluster.regions; origin++) {
        const expected = acked
          .filter((w) => w.partition === p && w.dc === origin)
          .sort((a, b) => a.idx - b.idx)
          .map((w) => ({ idx: w.idx, key: w.key, value: w.value, ts: w.ts }))
        for (let d = 0; d < cluster.regions; d++) {
          for (let i = 0; i < cluster.replicas; i++) {
            const log = await cluster.replica(d, p, i).readLog(origin, 0, 10_000)
            expect(
              log.map((e) => ({
                idx: e.idx,
                key: e.key,
                value: e.kind === 'put' ? e.value : undefined,
                ts: e.ts,
              })),
            ).toEqual(expected)
          }
        }
      }
    }
    for (const w of acked) {
      for (let d = 0; d < cluster.regions; d++) {
        const { version } = await cluster.replica(d, w.partition, cluster.replicas - 1).read(w.key)
        expect(version).toEqual({ value: w.value, ts: w.ts, dc: w.dc })
      }
    }
  }

  it('ships every write to every region and replica, in order, under lag and WAN delay', async () => {
    const cluster = await start({
      regions: 3,
      partitions: 2,
      replicas: 2,
      replicaLagMs: 15,
      wanDelayMs: 25,
    })
    const acked = [...(await writeEverywhere(cluster, 20)), ...(await writeEverywhere(cluster, 10))]
    await converged(cluster)
    await expectAllPresent(cluster, acked)
  })

  it('resumes shipping after a restart on disk, losing and duplicating nothing', async () => {
    const dataDir = await tmp()
    const shape = { regions: 2, partitions: 2, replicas: 2 }
    // A long WAN delay, so most entries are still travelling when the cluster stops.
    const first = await start({ ...shape, dataDir, wanDelayMs: 10_000, replicaLagMs: 5 })
    const acked = await writeEverywhere(first, 15)
    const id = first.id
    await first.close()
    const manifest = JSON.parse(await readFile(join(dataDir, 'cluster.json'), 'utf8')) as Record<
      string,
      unknown
    >
    expect(manifest).toMatchObject({ id, regions: 2, partitions: 2, replicas: 2 })

    const second = await start({ ...shape, dataDir, wanDelayMs: 5 })
    expect(second.id).toBe(id)
    // What was acknowledged is back at its origin leader at once.
    for (const w of acked)
      expect((await second.replica(w.dc, w.partition, 0).read(w.key)).version?.ts).toBe(w.ts)
    await converged(second)
    await expectAllPresent(second, acked)
    // New writes continue the same logs.
    const more = await writeEverywhere(second, 4)
    expect(Math.min(...more.map((w) => w.idx))).toBeGreaterThan(1)
    await converged(second)
    await expectAllPresent(second, [...acked, ...more])
  })

  it('refuses a data directory made for another shape', async () => {
    const dataDir = await tmp()
    const cluster = await EmbeddedCluster.start({ regions: 2, partitions: 2, replicas: 1, dataDir })
    await cluster.close()
    await expect(
      EmbeddedCluster.start({ regions: 2, partitions: 3, replicas: 1, dataDir }),
    ).rejects.toThrow(/partitions 2.*partitions 3/)
  })

  it('makes a fresh id for every in-memory cluster', async () => {
    const a = await start({ regions: 1, partitions: 1, replicas: 1 })
    const b = await start({ regions: 1, partitions: 1, replicas: 1 })
    expect(a.id).not.toBe(b.id)
    expect(a.dataDir).toBeUndefined()
  })

  it('validates its options', async () => {
    const base = { regions: 2, partitions: 1, replicas: 1 }
    await expect(EmbeddedCluster.start({ ...base, regions: 0 })).rejects.toThrow(/regions/)
    await expect(EmbeddedCluster.start({ ...base, replicas: 1.5 })).rejects.toThrow(/replicas/)
    await expect(EmbeddedCluster.start({ ...base, regionNames: ['eu'] })).rejects.toThrow(
      /one name per region/,
    )
    await expect(EmbeddedCluster.start({ ...base, regionNames: ['eu', 'eu'] })).rejects.toThrow(
      /unique/,
    )
    await expect(EmbeddedCluster.start({ ...base, wanDelayMs: -1 })).rejects.toThrow(/wanDelayMs/)
  })

  it('leaves no timer behind once closed', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 2,
      replicas: 3,
      replicaLagMs: 5000,
      wanDelayMs: 5000,
    })
    await writeEverywhere(cluster, 5)
    const waiting = cluster.service(0).read({
      key: 'k',
      partition: 0,
      need: { need: [0, 1] },
      replica: 'follower',
      timeoutMs: 5000,
      level: 'session',
    })
    expect(timers()).toBeGreaterThan(before)
    await cluster.close()
    await expect(waiting).rejects.toMatchObject({ code: 'SHUTTING_DOWN' })
    expect(timers()).toBe(before)
  })
})
