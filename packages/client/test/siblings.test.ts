/**
 * The SDK on a siblings namespace of a real two-region cluster: concurrent writes come back as
 * siblings with a context, writes that pass the context (explicitly, or by writing back the object
 * that was read) supersede what was read, `resolve` merges, and the session covers every sibling.
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type Causeway, type ReadResult, connect } from '../src/index.js'

const WAN_DELAY_MS = 150

let cluster: { urls: string[]; close(): Promise<void> }
const clients: Causeway[] = []

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 2,
    port: 0,
    replicaLagMs: 20,
    wanDelayMs: WAN_DELAY_MS,
    namespaces: { cart: { conflicts: 'siblings' } },
  })
})

afterAll(async () => {
  for (const db of clients) await db.close()
  await cluster?.close()
})

async function client(region = 0): Promise<Causeway> {
  const db = await connect({ url: cluster.urls[region]! })
  clients.push(db)
  return db
}

let n = 0
const fresh = (name: string) => `cart:${name}:${Date.now()}:${n++}`

/** Reads `key` (eventual, at the leader) until `done` holds, for at most 3 s. */
async function until<T>(
  db: Causeway,
  key: string,
  done: (r: ReadResult<T>) => boolean,
): Promise<ReadResult<T>> {
  let last: ReadResult<T> | undefined
  const read = () => db.get<T>(key, { read: 'eventual', replica: 'leader' })
  await vi
    .waitUntil(async () => done((last = await read())), { timeout: 3000, interval: 20 })
    .catch(() => undefined)
  return last ?? read()
}

describe('siblings namespaces in the SDK', () => {
  it('knows each key’s conflict mode from the topology', async () => {
    const db = await client()
    expect(db.conflictMode('cart:1')).toBe('siblings')
    expect(db.conflictMode('user:1')).toBe('lww')
    expect(db.conflictMode('cart')).toBe('lww')
    const r = await db.get('user:1')
    expect([r.siblings, r.versions, r.context]).toEqual([undefined, undefined, undefined])
  })

  it('returns concurrent writes of two regions as siblings, and one value after a write with the context', async () => {
    const key = fresh('two')
    const a = await client(0)
    const b = await client(1)
    await Promise.all([a.put(key, { items: ['apple'] }), b.put(key, { items: ['pear'] })])
    const r = await until<{ items: string[] }>(a, key, (x) => x.versions?.length === 2)
    expect(r.found).toBe(true)
    expect(r.value).toBeUndefined()
    expect(r.siblings?.map((s) => s.items[0]).sort()).toEqual(['apple', 'pear'])
    expect(r.versions?.map((v) => v.dc).sort()).toEqual([0, 1])
    expect(r.versions?.every((v) => !v.deleted)).toBe(true)
    expect(typeof r.context).toBe('string')

    const merged = { items: ['apple', 'pear'] }
    const w = await a.put(key, merged, { context: r.context })
    const done = await until<{ items: string[] }>(b, key, (x) => x.ts === w.ts)
    expect(done.siblings).toEqual([merged])
    expect(done.value).toEqual(merged)
  })

  it('passes the context back when the value written is the object it read', async () => {
    const key = fresh('auto')
    const db = await client()
    await db.put(key, { n: 1 })
    const r = await db.get<{ n: number }>(key)
    r.value!.n = 2
    await db.put(key, r.value) // the object read: supersedes
    r.value!.n = 3
    await db.put(key, r.value) // the object written: supersedes that write
    expect((await db.get(key)).siblings).toEqual([{ n: 3 }])
    // A copy is a new object: without the context it is a sibling.
    const copy = { ...(await db.get<{ n: number }>(key)).value!, n: 4 }
    await db.put(key, copy)
    expect((await db.get(key)).siblings).toEqual([{ n: 3 }, { n: 4 }])
    // null makes even the object read a blind write.
    const again = await db.get<{ n: number }>(key)
    expect(again.value).toBeUndefined() // two siblings: no single value to write back
    const [first] = again.siblings!
    await db.put(key, first, { context: null })
    expect((await db.get(key)).siblings).toHaveLength(3)
  })

  it('resolves siblings with a merge function, and only when there is something to resolve', async () => {
    const key = fresh('resolve')
    const db = await client()
    await db.put(key, ['a'])
    const single = await db.resolve<string[]>(key, () => ['never'])
    expect(single).toMatchObject({ value: ['a'], written: undefined })
    await db.put(key, ['b'], { context: null })
    await db.put(key, ['c'], { context: null })
    const union = (carts: string[][]) => [...new Set(carts.flat())].sort()
    const resolved = await db.resolve<string[]>(key, union)
    expect(resolved.value).toEqual(['a', 'b', 'c'])
    expect(resolved.read.siblings).toHaveLength(3)
    expect(resolved.written?.ts).toBeDefined()
    const after = await db.get<string[]>(key)
    expect(after.siblings).toEqual([['a', 'b', 'c']])
    // A merge that returns undefined deletes what it read.
    await db.put(key, ['d'], { context: null })
    await db.resolve(key, () => undefined)
    const gone = await db.get(key)
    expect(gone.found).toBe(false)
    expect(gone.siblings).toEqual([])
    expect(gone.versions).toHaveLength(1)
    expect(gone.versions![0]!.deleted).toBe(true)
    expect(gone.context).toBeDefined()
    await expect(db.resolve('user:1', () => 1)).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
  })

  it('deletes what a read returned when the delete carries its context', async () => {
    const key = fresh('delete')
    const db = await client()
    await db.put(key, 1)
    await db.put(key, 2, { context: null })
    const r = await db.get(key)
    const blind = await db.delete(key, { context: null })
    // The leader held versions this blind delete never saw: no context comes back for it.
    expect(blind.context).toBeUndefined()
    await db.delete(key, { context: r.context })
    const after = await db.get(key)
    // The blind tombstone was not seen by the second delete, so two tombstones remain.
    expect(after.found).toBe(false)
    expect(after.versions?.map((v) => v.deleted)).toEqual([true, true])
  })

  it('refuses bad contexts before sending anything', async () => {
    const db = await client()
    await expect(db.put(fresh('bad'), 1, { context: 'not base64!' })).rejects.toMatchObject({
      code: 'INVALID_CONTEXT',
    })
    await expect(db.put('user:9', 1, { context: 'wQA' })).rejects.toMatchObject({
      code: 'INVALID_CONTEXT',
    })
  })

  it('keeps read-your-writes and monotonic reads across regions for every sibling', async () => {
    const key = fresh('session')
    const a = await client(0)
    const b = await client(1)
    await Promise.all([a.put(key, 'from-0'), b.put(key, 'from-1')])
    // a's session read both siblings in region 0 once they are there...
    const both = await until<string>(a, key, (x) => x.versions?.length === 2)
    expect(both.siblings?.sort()).toEqual(['from-0', 'from-1'])
    const seen = await a.get<string>(key)
    expect(seen.siblings?.sort()).toEqual(['from-0', 'from-1'])
    // ...so a session read in region 1 must show both too (it waits for region 0's write).
    const there = await a.get<string>(key, { region: 1 })
    expect(there.siblings?.sort()).toEqual(['from-0', 'from-1'])
    // A write of b in region 1 is read by b in region 0 at once (read-your-writes).
    const w = await b.put(key, 'resolved', { context: there.context })
    const mine = await b.get<string>(key, { region: 0 })
    expect(mine.versions?.map((v) => v.ts)).toContain(w.ts)
  })
})
