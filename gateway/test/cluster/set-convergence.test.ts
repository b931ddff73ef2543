/**
 * Sets across regions through the real replication paths: concurrent adds and removes in every
 * region of an embedded cluster (leaders, lagging followers, FIFO shippers with a WAN delay), and
 * of Redis leaders linked by the same shippers, converge to one set on every replica, element by
 * element and dot by dot, with exact sizes; a concurrent add wins over a remove.
 */
import { randomUUID } from 'node:crypto'
import { HLC_ZERO, partitionOf, type SetEntry } from '@causeway/core'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import type { RegionSets } from '../../src/cluster/region-sets.js'
import { InProcessLink } from '../../src/replication/in-process-link.js'
import { Shipper } from '../../src/replication/shipper.js'
import type { AbstractPartitionReplica } from '../../src/storage/abstract-partition-replica.js'
import { RedisPartitionReplica } from '../../src/storage/redis/index.js'
import { startRedis, stopAllRedis } from '../support/redis-server.js'
import { entriesOf, setsOf } from '../storage/set-compliance.js'

afterAll(stopAllRedis)

const ELEMENTS = Array.from({ length: 12 }, (_, i) => `e${i}`)

/** A small deterministic PRNG, so a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Waits until every replica has applied what every leader wrote (bounded). */
async function settle(
  replicas: readonly AbstractPartitionReplica[],
  leaders: readonly AbstractPartitionReplica[],
) {
  const target = leaders.map((leader) => leader.sv()[leader.region]!)
  const deadline = Date.now() + 10_000
  for (const r of replicas) expect(await r.waitFor(target, deadline)).toBe(true)
}

/** Every replica holds the same entries and size for `name`; returns them. */
async function sameEverywhere(replicas: readonly AbstractPartitionReplica[], name: string) {
  const first = await entriesOf(replicas[0]!, name)
  for (const r of replicas) {
    expect(await entriesOf(r, name)).toEqual(first)
    expect((await setsOf(r).size(name)).size).toBe(first.length)
  }
  return first
}

describe('sets across regions', () => {
  const cleanup: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn()
  })

  it('converge on every replica of an embedded cluster under concurrent writes', async () => {
    const cluster = await EmbeddedCluster.start({
      regions: 3,
      partitions: 2,
      replicas: 2,
      wanDelayMs: 15,
      replicaLagMs: 5,
      sync: false,
    })
    cleanup.push(() => cluster.close())
    const sets = (d: number): RegionSets => cluster.service(d).sets as RegionSets
    const names = ['tags', 'other']
    const random = prng(42)
    const ops: Promise<unknown>[] = []
    for (let round = 0; round < 4; round++) {
      for (let d = 0; d < 3; d++) {
        for (let i = 0; i < 8; i++) {
          const name = names[Math.floor(random() * names.length)]!
          const partition = partitionOf(name, 2)
          const element = ELEMENTS[Math.floor(random() * ELEMENTS.length)]!
          const roll = random()
          const base = {
            name,
            partition,
            dt: HLC_ZERO,
            durability: 'leader' as const,
            timeoutMs: 5000,
          }
          if (roll < 0.6) {
            ops.push(
              sets(d).write({ ...base, op: 'add', elements: [{ element }], level: 'session' }),
            )
          } else if (roll < 0.8) {
            ops.push(
              sets(d).write({ ...base, op: 'remove', elements: [{ element }], level: 'eventual' }),
            )
          } else {
            // Remove, in this region, what another region's follower shows of the element.
            const from = (d + 1) % 3
            ops.push(
              sets(from)
                .has({
                  name,
                  partition,
                  element,
                  replica: 'follower',
                  timeoutMs: 1000,
                  level: 'eventual',
                })
                .then((seen) =>
                  seen.ctx === undefined
                    ? undefined
                    : sets(d).write({
                        ...base,
                        op: 'remove',
                        elements: [{ element, ctx: seen.ctx }],
                        level: 'session',
                      }),
                ),
            )
          }
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await Promise.all(ops)
    for (let p = 0; p < 2; p++) {
      const replicas = [0, 1, 2].flatMap((d) => [0, 1].map((i) => cluster.replica(d, p, i)))
      await settle(
        replicas,
        [0, 1, 2].map((d) => cluster.replica(d, p, 0)),
      )
    }
    for (const name of names) {
      const p = partitionOf(name, 2)
      const replicas = [0, 1, 2].flatMap((d) => [0, 1].map((i) => cluster.replica(d, p, i)))
      const entries = await sameEverywhere(replicas, name)
      expect(entries.length).toBeGreaterThan(0)
      // A merge of every replica of a region reads the same set.
      const scan = await sets(1).scan({
        name,
        partition: p,
        replica: 'any',
        timeoutMs: 1000,
        level: 'eventual',
        limit: 100,
        merge: true,
      })
      const merged: string[] = []
      for await (const e of scan.elements) merged.push(e.element)
      expect(merged).toEqual(entries.map((e) => e.element))
      expect((await scan.finish()).merged).toBe(2)
    }
  })

  it('let a concurrent add win over a remove in another region', async () => {
    const cluster = await EmbeddedCluster.start({
      regions: 2,
      partitions: 1,
      replicas: 1,
      wanDelayMs: 30,
      sync: false,
    })
    cleanup.push(() => cluster.close())
    const sets = (d: number): RegionSets => cluster.service(d).sets as RegionSets
    const base = {
      name: 's',
      partition: 0,
      dt: HLC_ZERO,
      durability: 'leader' as const,
      timeoutMs: 5000,
    }
    await sets(0).write({ ...base, op: 'add', elements: [{ element: 'x' }], level: 'session' })
    const leaders = [cluster.replica(0, 0, 0), cluster.replica(1, 0, 0)]
    await settle(leaders, leaders)
    // Concurrently: region 1 removes x (what it holds), region 0 adds x again.
    await Promise.all([
      sets(1).write({ ...base, op: 'remove', elements: [{ element: 'x' }], level: 'session' }),
      sets(0).write({ ...base, op: 'add', elements: [{ element: 'x' }], level: 'session' }),
    ])
    await settle(leaders, leaders)
    const entries: SetEntry[] = await sameEverywhere(leaders, 's')
    expect(entries).toEqual([{ element: 'x', dots: [{ actor: 0, counter: 2 }] }])
  })

  it('converge across Redis leaders linked by the FIFO shippers', { tags: ['redis'] }, async () => {
    const servers = await Promise.all([0, 1].map(() => startRedis({ appendfsync: 'everysec' })))
    const namespace = `conv-${randomUUID()}`
    const leaders = servers.map(
      (server, region) =>
        new RedisPartitionReplica({
          url: server.url,
          namespace,
          region,
          partition: 0,
          replica: 0,
          regions: 2,
        }),
    )
    await Promise.all(leaders.map((r) => r.open()))
    cleanup.push(() => Promise.all(leaders.map((r) => r.close())))
    const shippers = [0, 1].map(
      (from) =>
        new Shipper({
          source: leaders[from]!,
          to: 1 - from,
          link: new InProcessLink({ origin: from, destination: leaders[1 - from]!, delayMs: 10 }),
          batchSize: 5,
        }),
    )
    for (const s of shippers) s.start()
    cleanup.push(() => Promise.all(shippers.map((s) => s.stop())))
    const random = prng(7)
    const writes: Promise<unknown>[] = []
    for (let i = 0; i < 60; i++) {
      const r = leaders[i % 2]!
      const element = ELEMENTS[Math.floor(random() * ELEMENTS.length)]!
      const op = random() < 0.65 ? 'add' : 'remove'
      writes.push(setsOf(r).write('s', { op, elements: [{ element }] }, HLC_ZERO))
      if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await Promise.all(writes)
    await settle(leaders, leaders)
    await sameEverywhere(leaders, 's')
  })
})
