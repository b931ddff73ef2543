/**
 * Transactions across regions (embedded cluster, two regions 80 ms apart): an applied
 * transaction's writes reach the other region as one unit and become visible there at once (a
 * snapshot read there holds all of them or none; a session that saw one of them sees the others);
 * a session that committed in one region reads its writes in a transaction of the other; the
 * regions converge on the same value of a key written by transactions in both; and the partition
 * logs, commit entries included, ship gap-free.
 */
import { HLC_ZERO, type TxWrite, partitionOf, sortWrites } from '@causeway/core'
import { connect } from '@causeway/client'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type DevCluster, startDevCluster } from '../../src/dev-server.js'

const PARTITIONS = 4
let dev: DevCluster

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 2,
    port: 0,
    sync: false,
    wanDelayMs: 80,
    namespaces: { acct: { transactions: true } },
  })
})
afterAll(() => dev.close())

function writes(keys: string[], value: unknown): TxWrite[] {
  return sortWrites(keys.map((k) => [k, JSON.stringify(value)]))
}

// Keys spread over every partition.
function spread(prefix: string, n: number): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < n; i++) keys.push(`acct:${prefix}${i}`)
  expect(new Set(keys.map((k) => partitionOf(k, PARTITIONS))).size).toBe(PARTITIONS)
  return keys
}

describe('transactions across regions', () => {
  it('become visible in the other region at once, in every partition', async () => {
    const keys = spread('unit', 8)
    const [r0, r1] = [dev.cluster.service(0).transactions!, dev.cluster.service(1).transactions!]
    const snapshots: string[][] = []
    let seenAll = false
    const watching = (async () => {
      const deadline = Date.now() + 10_000
      while (!seenAll && Date.now() < deadline) {
        const read = await r1.read({ keys, timeoutMs: 1000 })
        const values = read.items.map((i) => i.version?.value ?? 'none')
        snapshots.push(values)
        seenAll = values.every((v) => v === '"v1"')
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    const t = await r0.commit({
      snapshot: 0,
      reads: [],
      writes: writes(keys, 'v1'),
      dt: HLC_ZERO,
      durability: 'leader',
      timeoutMs: 5000,
    })
    expect(t.outcome).toBe('applied')
    await watching
    expect(seenAll).toBe(true)
    // Every snapshot read held all of the transaction or none of it.
    for (const values of snapshots) expect(new Set(values).size, values.join()).toBe(1)
    expect(snapshots.some((v) => v[0] === 'none')).toBe(true)
  })

  it('lets a session read its own transaction in a transaction of the other region', async () => {
    const db = await connect({ url: dev.urls[0]! })
    const key = 'acct:ryw'
    await db.runTransaction((tx) => tx.put(key, { n: 1 }))
    // At once, in region 1: the read waits for the transaction to arrive there.
    const tx = await db.transaction({ region: 1, timeoutMs: 5000 })
    expect(await tx.get(key)).toEqual({ n: 1 })
    // And a plain read there too.
    expect((await db.get(key, { region: 1, timeoutMs: 5000 })).value).toEqual({ n: 1 })
    await db.close()
  })

  it('reads a transactional key after the other region wrote a plain key of its partition (issue 22.7)', async () => {
    // Region 1 relays region 0's transaction (a commit entry of region 1, shipped back here), then
    // takes a plain write of the same partition: a session that saw the plain write needs region
    // 1's log up to it, relay included, which region 0 holds already as its own transaction.
    const key = 'acct:echo'
    let plain = ''
    for (let i = 0; plain === ''; i++)
      if (partitionOf(`user:echo${i}`, PARTITIONS) === partitionOf(key, PARTITIONS))
        plain = `user:echo${i}`
    const db = await connect({ url: dev.urls[0]! })
    await db.runTransaction((tx) => tx.put(key, 100))
    // The relay is made in region 1 before the plain write there.
    await vi.waitUntil(
      async () =>
        (await dev.cluster.service(1).transactions!.read({ keys: [key], timeoutMs: 1000 }))
          .items[0]!.version?.value === '100',
      { timeout: 10_000, interval: 20 },
    )
    await db.put(plain, 'x', { region: 1 })
    const read = await db.get(key, { timeoutMs: 3000 })
    expect(read.value).toBe(100)
    await db.close()
  })

  it('converges on one value of a key written by transactions in both regions', async () => {
    const key = 'acct:both'
    const [a, b] = await Promise.all(
      [0, 1].map((d) =>
        dev.cluster.service(d).transactions!.commit({
          snapshot: 0,
          reads: [],
          writes: writes([key], `from ${d}`),
          dt: HLC_ZERO,
          durability: 'leader',
          timeoutMs: 5000,
        }),
      ),
    )
    expect([a!.outcome, b!.outcome]).toEqual(['applied', 'applied'])
    const valueIn = async (d: number) =>
      (await dev.cluster.service(d).transactions!.read({ keys: [key], timeoutMs: 1000 })).items[0]!
        .version?.value
    await vi.waitUntil(async () => (await valueIn(0)) === (await valueIn(1)), {
      timeout: 10_000,
      interval: 50,
    })
    // The winner is the one with the higher (ts, region).
    const winner = a!.ts > b!.ts ? '"from 0"' : '"from 1"'
    expect(await valueIn(0)).toBe(winner)
  })

  it('ships the partition logs, commit entries included, gap-free', async () => {
    await vi.waitUntil(() => dev.cluster.shippers().every((s) => s.backlog() === 0), {
      timeout: 10_000,
      interval: 50,
    })
    for (let p = 0; p < PARTITIONS; p++)
      for (const [from, to] of [
        [0, 1],
        [1, 0],
      ] as const) {
        const source = await dev.cluster.replica(from, p, 0).readLog(from, 0, 10_000)
        const copy = await dev.cluster.replica(to, p, 0).readLog(from, 0, 10_000)
        expect(copy).toEqual(source)
      }
  })
})
