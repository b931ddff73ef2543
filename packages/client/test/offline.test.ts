/**
 * Offline-first in Node against a real embedded cluster (two regions, a WAN delay, a `cart`
 * siblings namespace), over real HTTP. The network between the SDK and its home gateway is a
 * TCP proxy the tests switch off, cut, or make drop a batch's reply. What the gateway applied is
 * counted on its own change feed (one event per log entry), read raw, not through the SDK.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { encodeCausalContext } from '@causeway/core'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { openSse, type SseStream } from '../../../gateway/test/support/sse-client.js'
import {
  CausewayError,
  OfflineError,
  StorageFullError,
  connect,
  type Causeway,
  type PersistStore,
} from '../src/node.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'
import { recordingTransport } from './support/recording-transport.js'

const WAN_DELAY_MS = 100

let cluster: DevCluster
let proxy: NetProxy
const open: Causeway<true>[] = []

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 2,
    port: 0,
    wanDelayMs: WAN_DELAY_MS,
    namespaces: { cart: { conflicts: 'siblings' } },
  })
  proxy = await startProxy(cluster.urls[0]!)
}, 30_000)

afterAll(async () => {
  for (const db of open) await db.close()
  await proxy?.close()
  await cluster?.close()
})

let n = 0
const fresh = (name: string) => `${name}${Date.now().toString(36)}${n++}:`

function store(): PersistStore {
  return new MemoryLevel() as unknown as PersistStore
}

async function client(persist: PersistStore | string, url = proxy.url): Promise<Causeway<true>> {
  const db = await connect({ url, persist, defaults: { timeoutMs: 3000 } })
  open.push(db)
  return db
}

/** The gateway's own feed of region 0 for `prefix`, from now: one change per applied write. */
async function feed(prefix: string): Promise<SseStream> {
  const opened = await openSse(
    `${cluster.urls[0]}/v1/watch?prefix=${encodeURIComponent(prefix)}&level=eventual`,
  )
  if (!opened.ok) throw new Error(JSON.stringify(opened.body))
  await opened.stream.nextOf('heartbeat', 5000)
  return opened.stream
}

/** Counts the feed's changes per key until `total` arrived, then waits `settleMs` for extras. */
async function countChanges(
  stream: SseStream,
  total: number,
  settleMs = 300,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  let seen = 0
  while (seen < total) {
    const e = await stream.nextOf('change', 10_000)
    const key = (JSON.parse(e.data) as { key: string }).key
    counts.set(key, (counts.get(key) ?? 0) + 1)
    seen++
  }
  // Anything applied twice would show up now.
  for (;;) {
    try {
      const e = await stream.nextOf('change', settleMs)
      const key = (JSON.parse(e.data) as { key: string }).key
      counts.set(key, (counts.get(key) ?? 0) + 1)
    } catch {
      break
    }
  }
  return counts
}

/** Resolves when `predicate` holds, polling the SDK's cheap state (bounded). */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('offline writes and reads', () => {
  it('a write offline resolves pending with its op id; reads show it locally; a key never seen is OFFLINE at once', async () => {
    const p = fresh('o')
    const db = await client(store())
    await db.put(p + 'seen', { n: 1 })
    expect(await db.get(p + 'seen')).toMatchObject({ source: 'remote', value: { n: 1 } })
    const offline = new Promise((resolve) => db.on('offline', resolve))
    proxy.setOffline(true)
    try {
      const w = await db.put(p + 'a', { n: 2 })
      expect(w).toEqual({ pending: true, opId: expect.stringMatching(/^[A-Za-z0-9-]+\.\d+$/) })
      await offline
      expect(db.online).toBe(false)
      const pending = await db.pending()
      expect(pending.map((o) => [o.opId, o.kind, o.key, o.value])).toEqual([
        [w.opId, 'put', p + 'a', { n: 2 }],
      ])
      expect(await db.get(p + 'a')).toMatchObject({
        source: 'local',
        pending: true,
        found: true,
        value: { n: 2 },
      })
      expect(await db.get(p + 'seen')).toMatchObject({
        source: 'local',
        pending: false,
        value: { n: 1 },
      })
      await db.delete(p + 'seen')
      expect(await db.get(p + 'seen')).toMatchObject({
        source: 'local',
        pending: true,
        found: false,
      })
      const started = Date.now()
      const error = await db.get(p + 'never').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OfflineError)
      expect((error as CausewayError).code).toBe('OFFLINE')
      expect(Date.now() - started).toBeLessThan(200)
    } finally {
      proxy.setOffline(false)
    }
    const result = await db.sync()
    expect(result).toMatchObject({ applied: 2, failed: 0, pending: 0, owner: true })
    expect(await db.pending()).toEqual([])
    expect(await db.get(p + 'a')).toMatchObject({
      source: 'remote',
      pending: false,
      value: { n: 2 },
    })
    expect(await db.get(p + 'seen')).toMatchObject({ source: 'remote', found: false })
  })

  it('online with persist: a write is applied at once and leaves nothing queued', async () => {
    const db = await client(store())
    const w = await db.put(fresh('on') + 'k', 1)
    expect(w).toMatchObject({ pending: false, dc: 0, opId: expect.any(String) })
    expect(await db.pending()).toEqual([])
  })

  it('writes made while a replay ends are applied at once, not left queued until their deadline', async () => {
    // A client that starts replays what it finds as it takes the outbox over; the writes made
    // meanwhile queue behind that replay, and one queued as it read the outbox for the last time
    // was left there (its call said pending after its whole timeout, online).
    const p = fresh('race')
    for (let round = 0; round < 3; round++) {
      const db = await client(store())
      for (let i = 0; i < 8; i++) {
        const w = await db.put(`${p}${round}:${i}`, i)
        expect(w, `round ${round}, write ${i}`).toMatchObject({ pending: false })
      }
      expect(await db.pending()).toEqual([])
    }
  })

  it('a client writing one value after another from its start sends them alone, not through the replay', async () => {
    // Its first writes race the replay it starts as it takes the outbox over; were the replay to
    // send each next write (made as the last one's outcome arrived), it would go on sending them
    // one by one through POST /v1/ops for as long as the client writes.
    const transport = recordingTransport((req) => req.method !== 'GET')
    const db = await connect({
      url: proxy.url,
      transport,
      persist: store(),
      defaults: { timeoutMs: 3000 },
    })
    open.push(db)
    const p = fresh('seq')
    for (let i = 0; i < 40; i++)
      expect(await db.put(`${p}${i}`, i)).toMatchObject({ pending: false })
    const viaReplay = transport.sent.filter((r) => r.url.includes('/v1/ops')).length
    expect(viaReplay).toBeLessThanOrEqual(3)
  })

  it('online with persist (classic-level): one store batch per write, their removals together every few ms, no read of the outbox', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-batches-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const db = new ClassicLevel(dir)
    const batches: { type: string; sublevel: { prefix: string } }[][] = []
    let iterators = 0
    const batch = db.batch.bind(db) as (ops: unknown[]) => Promise<void>
    const iterator = db.iterator.bind(db)
    Object.assign(db, {
      batch: (ops: { type: string; sublevel: { prefix: string } }[]) => (
        batches.push(ops),
        batch(ops)
      ),
      iterator: (...args: Parameters<typeof iterator>) => (iterators++, iterator(...args)),
    })
    const c = await client(db as unknown as PersistStore)
    const p = fresh('batches')
    await c.sync() // what a client does as it starts (counting and replaying what it finds)
    const [batchesBefore, iteratorsBefore] = [batches.length, iterators]
    const writes = 40
    const started = performance.now()
    for (let i = 0; i < writes; i++) await c.put(`${p}${i % 5}`, i)
    const elapsedMs = performance.now() - started
    expect(iterators - iteratorsBefore).toBe(0)
    await c.sync() // records what waits (AppliedOps.defer), reading the outbox
    const iteratorsSynced = iterators
    const outbox = (ops: { type: string; sublevel: { prefix: string } }[], type: string) =>
      ops.some((op) => op.type === type && op.sublevel.prefix.endsWith('!outbox!'))
    const after = batches.slice(batchesBefore)
    // Each write is queued by a batch of its own before its call returns...
    expect(after.filter((ops) => outbox(ops, 'put')).length).toBe(writes)
    // ...and the removals of those applied within 10 ms of each other go in one batch (with
    // their cache entries and session rows), alone or with the next write's.
    const removals = after.filter((ops) => outbox(ops, 'del') && !outbox(ops, 'put'))
    expect(removals.length).toBeLessThanOrEqual(Math.ceil(elapsedMs / 10) + 2)
    const removed = after.flatMap((ops) =>
      ops.filter((op) => op.type === 'del' && op.sublevel.prefix.endsWith('!outbox!')),
    )
    expect(removed.length).toBe(writes)
    // Writes at once (each sent alone, queued together): still no read of the outbox.
    await Promise.all(Array.from({ length: 20 }, (_, i) => c.put(`${p}at-once-${i}`, i)))
    expect(iterators - iteratorsSynced).toBe(0)
    expect(await c.pending()).toEqual([])
    await c.close()
  })

  // An online write's removal from the outbox, its cache entry and its session row are written a
  // few milliseconds later, with the writes around it (AppliedOps.defer): what reads the cache,
  // and close(), record what waits first.
  it('a local read right after an online write sees it (its recording waits a few ms)', async () => {
    const p = fresh('rw')
    const db = await client(store())
    await db.put(p + 'k', 1)
    await sleep(50)
    await db.put(p + 'k', 2)
    proxy.setOffline(true)
    try {
      expect(await db.get(p + 'k')).toMatchObject({ source: 'local', pending: false, value: 2 })
    } finally {
      proxy.setOffline(false)
    }
  })

  it('a siblings key read right after it was written keeps one version (no sibling of itself)', async () => {
    const key = `cart:${fresh('rs')}item`
    const db = await client(store())
    const conflicts: string[] = []
    db.on('conflict', (e) => conflicts.push(e.key))
    await db.put(key, { v: 1 })
    expect((await db.get(key)).siblings).toEqual([{ v: 1 }])
    await sleep(50)
    proxy.setOffline(true)
    try {
      expect(await db.get(key)).toMatchObject({ source: 'local', siblings: [{ v: 1 }] })
    } finally {
      proxy.setOffline(false)
    }
    expect(conflicts).toEqual([])
  })

  it('close() records the writes whose recording waits: reopened offline, nothing is pending and the session holds them', async () => {
    // A store the app passes in stays open after close(): the next client opens it at once.
    const shared = store()
    const p = fresh('cl')
    const db = await connect({ url: proxy.url, persist: shared, defaults: { timeoutMs: 3000 } })
    let last = await db.put(p + 'k', 0)
    for (let i = 1; i < 5; i++) last = await db.put(p + 'k', i)
    if (last.pending) throw new Error('the write was meant to be applied online')
    const partition = db.partitionOf(p + 'k')
    await db.close()
    proxy.setOffline(true)
    try {
      const again = await client(shared)
      expect(await again.pending()).toEqual([])
      expect(again.session.row(partition)?.hwm[last.dc] ?? 0).toBeGreaterThanOrEqual(last.idx)
      expect(await again.get(p + 'k')).toMatchObject({ source: 'local', pending: false, value: 4 })
      await again.close()
    } finally {
      proxy.setOffline(false)
    }
  })

  it('connect() resolves offline from a persisted topology, and what was cached is readable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-sdk-'))
    try {
      const p = fresh('c')
      const first = await client(dir)
      await first.put(p + 'k', 'v1')
      await first.close()
      proxy.setOffline(true)
      try {
        const started = Date.now()
        const db = await client(dir)
        expect(Date.now() - started).toBeLessThan(1000)
        await until(() => !db.online)
        expect(await db.get(p + 'k')).toMatchObject({ source: 'local', value: 'v1' })
        expect(await db.put(p + 'k', 'v2')).toMatchObject({ pending: true })
        await db.close()
      } finally {
        proxy.setOffline(false)
      }
      // A later connect (online) replays what the closed one queued.
      const db = await client(dir)
      await until(async () => (await db.pending()).length === 0)
      expect(await db.get(p + 'k')).toMatchObject({ source: 'remote', value: 'v2' })
      await db.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('replay', () => {
  it('1,200 queued writes over four partitions replay in order, each applied exactly once', async () => {
    const p = fresh('r')
    const db = await client(store())
    const changes = await feed(p)
    proxy.setOffline(true)
    const ops: string[] = []
    try {
      for (let i = 0; i < 1200; i++) {
        const w = await db.put(`${p}${i % 37}`, i)
        expect(w.pending).toBe(true)
        ops.push(w.opId)
      }
    } finally {
      proxy.setOffline(false)
    }
    expect((await db.pending()).map((o) => o.opId)).toEqual(ops)
    const requests = proxy.opsRequests
    const result = await db.sync()
    expect(result).toMatchObject({ applied: 1200, failed: 0, pending: 0 })
    expect(proxy.opsRequests - requests).toBeGreaterThanOrEqual(3) // batched: at most 500 per request
    const counts = await countChanges(changes, 1200)
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(1200)
    // In order: each key holds its last write, and stamps grow with the queue order.
    let lastTs = ''
    for (let k = 0; k < 37; k++) {
      const last = 1200 - 1 - ((1200 - 1 - k) % 37)
      const r = await db.get(`${p}${k}`)
      expect(r.value).toBe(last)
      expect(r.ts! > lastTs || k > 0).toBe(true)
    }
    const stamps = await Promise.all(
      [1163, 1164, 1165, 1166].map(async (i) => (await db.get(`${p}${i % 37}`)).ts!),
    )
    expect([...stamps].sort()).toEqual(stamps)
    lastTs = stamps[3]!
    expect(lastTs > '').toBe(true)
    changes.close()
  }, 60_000)

  it('the reply of a batch is lost (sockets closed): the replay answers it from the op ids, nothing applied twice', async () => {
    const p = fresh('cut')
    const db = await client(store())
    const changes = await feed(p)
    proxy.setOffline(true)
    try {
      for (let i = 0; i < 700; i++) await db.put(`${p}${i}`, i)
    } finally {
      proxy.setOffline(false)
    }
    proxy.dropOpsReplies(1)
    const first = await db.sync()
    expect(first.error?.code).toMatch(/NETWORK_ERROR|TIMEOUT/)
    expect(first.pending).toBe(700)
    expect((await db.pending()).length).toBe(700)
    const second = await db.sync()
    expect(second).toMatchObject({ applied: 700, failed: 0, pending: 0 })
    const counts = await countChanges(changes, 700)
    expect(counts.size).toBe(700)
    expect([...counts.values()].every((c) => c === 1)).toBe(true)
    for (const i of [0, 499, 500, 699]) expect((await db.get(`${p}${i}`)).value).toBe(i)
    changes.close()
  }, 60_000)

  it('a write refused for good moves to failed() with its error; the ones around it apply', async () => {
    const p = fresh('f')
    const db = await client(store())
    const errors: CausewayError[] = []
    db.on('error', ({ error }) => errors.push(error))
    proxy.setOffline(true)
    let bad
    try {
      await db.put(p + 'a', 1)
      // A context naming writes the key never had: the gateway refuses it (INVALID_CONTEXT).
      bad = await db.put(`cart:${p}x`, 2, { context: encodeCausalContext([[0, 999_999]]) })
      await db.put(p + 'b', 3)
    } finally {
      proxy.setOffline(false)
    }
    const result = await db.sync()
    expect(result).toMatchObject({ applied: 2, failed: 1, pending: 0 })
    const failed = await db.failed()
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatchObject({ opId: bad!.opId, key: `cart:${p}x`, kind: 'put' })
    expect(failed[0]!.error).toBeInstanceOf(CausewayError)
    expect(failed[0]!.error.code).toBe('INVALID_CONTEXT')
    expect(errors.map((e) => e.code)).toEqual(['INVALID_CONTEXT'])
    expect((await db.get(p + 'b')).value).toBe(3)
    // Not retried: another sync leaves it where it is.
    expect(await db.sync()).toMatchObject({ applied: 0, failed: 0 })
    expect(await db.discardFailed()).toBe(1)
    expect(await db.failed()).toEqual([])
  })

  it('after a replay the session holds its writes: a read in the other region sees them', async () => {
    const p = fresh('s')
    const db = await client(store())
    proxy.setOffline(true)
    try {
      await db.put(p + 'k', 'offline')
    } finally {
      proxy.setOffline(false)
    }
    await db.sync()
    const r = await db.get(p + 'k', { region: 1, read: 'read-your-writes', fallback: 'none' })
    expect(r).toMatchObject({ source: 'remote', region: 1, value: 'offline' })
  })

  it('reconnecting replays by itself (the retry with backoff finds the gateway again)', async () => {
    const p = fresh('auto')
    const db = await client(store())
    await db.put(p + 'seen', 0)
    proxy.setOffline(true)
    try {
      await db.put(p + 'k', 1)
    } finally {
      proxy.setOffline(false)
    }
    const synced = new Promise((resolve) => db.on('synced', resolve))
    await synced
    expect(await db.pending()).toEqual([])
  })

  it('sync() with nothing queued while offline asks the gateway: online again when it returns', async () => {
    const p = fresh('probe')
    const db = await client(store())
    await db.put(p + 'seen', 0)
    proxy.setOffline(true)
    try {
      expect(await db.get(p + 'seen')).toMatchObject({ source: 'local' })
      expect(db.online).toBe(false)
      // Still offline: the probe fails, sync says so without a wait.
      await db.sync()
      expect(db.online).toBe(false)
    } finally {
      proxy.setOffline(false)
    }
    const online = new Promise((resolve) => db.on('online', resolve))
    // No timer has to fire first: the call itself finds the gateway.
    await db.sync()
    expect(db.online).toBe(true)
    await online
    expect(await db.get(p + 'seen')).toMatchObject({ source: 'remote', value: 0 })
  })
})

describe('conflicts', () => {
  it('two devices edit one key offline: after sync both see the siblings, a conflict event fires, resolve converges', async () => {
    const key = `cart:${fresh('x')}item`
    const a = await client(store())
    const b = await client(store())
    await a.put(key, { name: 'milk' })
    await until(async () => (await b.get(key)).found)
    await a.get(key)
    const conflicts: string[] = []
    a.on('conflict', (e) => conflicts.push(e.key))
    proxy.setOffline(true)
    try {
      expect(
        await a.put(key, { name: 'milk', qty: 2 }, { context: (await a.get(key)).context! }),
      ).toMatchObject({ pending: true })
      expect(
        await b.put(key, { name: 'oat milk' }, { context: (await b.get(key)).context! }),
      ).toMatchObject({ pending: true })
      // Locally each sees its own edit, superseding what it read.
      expect(await a.get(key)).toMatchObject({
        source: 'local',
        siblings: [{ name: 'milk', qty: 2 }],
      })
    } finally {
      proxy.setOffline(false)
    }
    await b.sync()
    await a.sync()
    expect(conflicts).toContain(key)
    const r = await a.get(key)
    expect(r.siblings).toHaveLength(2)
    expect(r.siblings).toEqual(
      expect.arrayContaining([{ name: 'milk', qty: 2 }, { name: 'oat milk' }]),
    )
    await b.resolve<{ name: string; qty?: number }>(key, (values) => ({
      name: values
        .map((v) => v.name)
        .sort()
        .join(' / '),
    }))
    await until(async () => (await a.get(key)).siblings?.length === 1)
    expect((await a.get(key)).value).toEqual({ name: 'milk / oat milk' })
  })

  it('two writes of one key offline on one device: the second supersedes the first (no sibling of itself)', async () => {
    const key = `cart:${fresh('y')}item`
    const db = await client(store())
    await db.put(key, { v: 0 })
    proxy.setOffline(true)
    try {
      const r0 = await db.get(key)
      await db.put(key, { v: 1 }, { context: r0.context! })
      const r1 = await db.get(key)
      expect(r1).toMatchObject({ source: 'local', pending: true, siblings: [{ v: 1 }] })
      await db.put(key, { v: 2 }, { context: r1.context! })
    } finally {
      proxy.setOffline(false)
    }
    expect(await db.sync()).toMatchObject({ applied: 2, pending: 0 })
    expect((await db.get(key)).siblings).toEqual([{ v: 2 }])
  })

  // Issue 24.2: each offline edit reads (locally) and writes with the context it read; another
  // device edits the key once, online, meanwhile. Only the device's last edit and the other's
  // are concurrent: the key must end with exactly those two versions.
  for (const edits of [2, 5])
    for (const region of [0, 1])
      it(`a chain of ${edits} offline edits against an online edit in region ${region}: exactly the two concurrent versions`, async () => {
        const key = `cart:${fresh('ch')}item`
        const a = await client(store())
        const other = await connect({ url: cluster.urls[region]!, defaults: { timeoutMs: 3000 } })
        onTestFinished(() => other.close())
        await a.put(key, { v: 0 })
        await until(async () => (await other.get(key, { read: 'eventual' })).found)
        const seen = await other.get(key)
        proxy.setOffline(true)
        try {
          for (let i = 1; i <= edits; i++) {
            const r = await a.get(key)
            expect(r.siblings).toEqual([{ v: i - 1 }])
            expect(await a.put(key, { v: i }, { context: r.context! })).toMatchObject({
              pending: true,
            })
          }
          expect(await other.put(key, { b: 1 }, { context: seen.context! })).toMatchObject({
            pending: false,
          })
          // The online edit reaches region 0 before the replay (each region ships to the other).
          const home = await connect({ url: cluster.urls[0]!, defaults: { timeoutMs: 3000 } })
          onTestFinished(() => home.close())
          await until(async () => {
            const r = await home.get(key, { read: 'eventual' })
            return JSON.stringify(r.siblings) === '[{"b":1}]'
          })
        } finally {
          proxy.setOffline(false)
        }
        expect(await a.sync()).toMatchObject({ applied: edits, pending: 0 })
        const after = await a.get(key)
        expect(after.siblings).toHaveLength(2)
        expect(after.siblings).toEqual(expect.arrayContaining([{ v: edits }, { b: 1 }]))
        // In the other region too, once shipped.
        await until(async () => {
          const r = await other.get(key)
          return r.siblings?.length === 2
        })
        expect((await other.get(key)).siblings).toEqual(
          expect.arrayContaining([{ v: edits }, { b: 1 }]),
        )
      })

  it('set writes offline keep add-wins: a remove made offline removes only what was observed', async () => {
    const name = fresh('set')
    const a = await client(store())
    const b = await client(store())
    await a.set(name).add(['milk', 'eggs'])
    expect((await a.set(name).has('milk')).found).toBe(true)
    proxy.setOffline(true)
    try {
      expect(await a.set(name).remove('milk')).toMatchObject({ pending: true })
      expect(await a.set(name).add('bread')).toMatchObject({ pending: true })
      expect(await a.set(name).has('milk')).toMatchObject({ found: false, source: 'local' })
      expect(await a.set(name).has('bread')).toMatchObject({ found: true, source: 'local' })
    } finally {
      proxy.setOffline(false)
    }
    // Meanwhile another device adds milk again (concurrently with the offline remove).
    await b.set(name).add('milk')
    await a.sync()
    expect((await b.set(name).has('milk')).found).toBe(true)
    expect((await a.set(name).has('bread')).found).toBe(true)
  })
})

describe('the change feed', () => {
  it('watch resumes from its cursor after the connection is cut: every change once, in order', async () => {
    const p = fresh('w')
    const db = await client(store())
    const writer = await connect({ url: cluster.urls[0]! })
    const feedOf = db.watch(p, { heartbeatMs: 1000 })
    await feedOf.ready
    const got: { key: string; value: unknown }[] = []
    const done = (async () => {
      for await (const change of feedOf) {
        got.push({ key: change.key, value: change.value })
        if (got.length === 6) break
      }
    })()
    for (let i = 0; i < 3; i++) await writer.put(`${p}k`, i)
    await until(() => got.length === 3)
    proxy.cutAll()
    for (let i = 3; i < 6; i++) await writer.put(`${p}k`, i)
    await done
    expect(got.map((c) => c.value)).toEqual([0, 1, 2, 3, 4, 5])
    // The feed filled the read cache: offline, the last value is there.
    proxy.setOffline(true)
    try {
      expect(await db.get(`${p}k`)).toMatchObject({ source: 'local', value: 5 })
    } finally {
      proxy.setOffline(false)
    }
    await writer.close()
  })

  it('a watch whose retries backed off while offline resumes as soon as the client is online again', async () => {
    const p = fresh('wb')
    const db = await client(store())
    await db.put(p + 'seen', 0)
    const seen: unknown[] = []
    const feedOf = db.watch(p + 'k', (change) => seen.push(change.value), { heartbeatMs: 1000 })
    await feedOf.ready
    proxy.setOffline(true)
    try {
      expect(await db.get(p + 'seen')).toMatchObject({ source: 'local' })
      // Retries at 0.25, 0.75, 1.75 and 3.75 s failed: the next one would wait 4 s more.
      await new Promise((r) => setTimeout(r, 3900))
    } finally {
      proxy.setOffline(false)
    }
    const writer = await connect({ url: cluster.urls[0]! })
    await writer.put(p + 'k', 'back')
    const back = Date.now()
    await db.sync() // the app's way of saying "the network is back": online, the watch resumes
    await until(() => seen.length === 1, 3000)
    expect(seen).toEqual(['back'])
    expect(Date.now() - back).toBeLessThan(2000)
    feedOf.close()
    await writer.close()
  })

  it('a callback watch in region 1 sees a write made in region 0 within the WAN delay and a margin', async () => {
    const p = fresh('cb')
    const db = await client(store())
    const seen: number[] = []
    const started: number[] = []
    const feedOf = db.watch(p, () => seen.push(Date.now() - started[0]!), { region: 1 })
    await feedOf.ready
    started.push(Date.now())
    await db.put(p + 'k', 1)
    await until(() => seen.length === 1, 5000)
    expect(seen[0]).toBeLessThan(2000)
    feedOf.close()
  })
})

describe('storage limits', () => {
  it('a store that refuses writes surfaces STORAGE_FULL on the write that hit it; what was queued stays', async () => {
    // An abstract-level store whose private _batch fails as IndexedDB does when full.
    const level = new MemoryLevel() as MemoryLevel & { full: boolean }
    type Batch = (...args: unknown[]) => Promise<void>
    const store = level as unknown as { _batch: Batch }
    const inner = store._batch.bind(level)
    level.full = false
    store._batch = async (...args) => {
      if (level.full) {
        const error = new Error('the quota is exceeded')
        error.name = 'QuotaExceededError'
        throw error
      }
      return inner(...args)
    }
    const db = await client(level as unknown as PersistStore)
    const p = fresh('q')
    proxy.setOffline(true)
    try {
      await db.put(p + 'a', 1)
      await db.put(p + 'b', 2)
      level.full = true
      const started = Date.now()
      const error = await db.put(p + 'c', 3).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StorageFullError)
      expect((error as CausewayError).code).toBe('STORAGE_FULL')
      expect((error as CausewayError).details?.quota).toBe(true)
      expect(Date.now() - started).toBeLessThan(500)
      expect((await db.pending()).map((o) => o.key)).toEqual([p + 'a', p + 'b'])
      level.full = false
    } finally {
      proxy.setOffline(false)
    }
    expect(await db.sync()).toMatchObject({ applied: 2, pending: 0 })
    expect((await db.get(p + 'c')).found).toBe(false)
  })
})

/**
 * An abstract-level store that, while `full`, refuses every batch that puts anything, as
 * IndexedDB over its quota does (a batch of removals alone still goes through: it frees space).
 */
function quotaStore(): MemoryLevel & { full: boolean; refused: number } {
  const level = new MemoryLevel() as MemoryLevel & { full: boolean; refused: number }
  type Batch = (ops: { type: string }[], ...rest: unknown[]) => Promise<void>
  const inner = (level as unknown as { _batch: Batch })._batch.bind(level)
  level.full = false
  level.refused = 0
  ;(level as unknown as { _batch: Batch })._batch = async (ops, ...rest) => {
    if (level.full && ops.some((o) => o.type === 'put')) {
      level.refused++
      const error = new Error('')
      error.name = 'QuotaExceededError'
      throw error
    }
    return inner(ops, ...rest)
  }
  return level
}

describe('a full store during a replay (issue 24.1)', () => {
  it('the queue is uploaded once: outcomes that cannot be recorded stay in memory, the replay stops with STORAGE_FULL, and drains once space returns', async () => {
    const level = quotaStore()
    const transport = recordingTransport((req) => req.url.includes('/v1/ops'))
    const db = await connect({
      url: proxy.url,
      persist: level as unknown as PersistStore,
      transport,
      defaults: { timeoutMs: 3000 },
    })
    open.push(db)
    const errors: string[] = []
    db.on('error', ({ error }) => errors.push(error.code))
    const p = fresh('full')
    const changes = await feed(p)
    proxy.setOffline(true)
    try {
      for (let i = 0; i < 40; i++) await db.put(`${p}${i}`, { i })
      level.full = true
      const error = await db.put(`${p}x`, 1).catch((e: unknown) => e)
      expect((error as CausewayError).code).toBe('STORAGE_FULL')
    } finally {
      proxy.setOffline(false)
    }
    const first = await db.sync()
    expect(first.error?.code).toBe('STORAGE_FULL')
    // Applied once each; their removals (alone) went through, so the badge counted down.
    const counts = await countChanges(changes, 40)
    expect(counts.size).toBe(40)
    expect([...counts.values()].every((c) => c === 1)).toBe(true)
    expect(transport.sent).toHaveLength(1)
    expect(errors).toContain('STORAGE_FULL')
    // Still full: a sync sends nothing again, and reads show the writes.
    const again = await db.sync()
    expect(again.error?.code).toBe('STORAGE_FULL')
    expect(transport.sent).toHaveLength(1)
    expect(await db.pending()).toEqual([])
    proxy.setOffline(true)
    try {
      expect(await db.get(`${p}7`)).toMatchObject({ source: 'local', value: { i: 7 } })
    } finally {
      proxy.setOffline(false)
    }
    // Space returns: the outcomes are recorded, nothing is sent again.
    level.full = false
    expect(await db.sync()).toMatchObject({ pending: 0 })
    expect(transport.sent).toHaveLength(1)
    await db.close()
    const reopened = await client(level as unknown as PersistStore)
    proxy.setOffline(true)
    try {
      expect(await reopened.get(`${p}39`)).toMatchObject({ source: 'local', value: { i: 39 } })
      expect(await reopened.pending()).toEqual([])
    } finally {
      proxy.setOffline(false)
    }
    changes.close()
  }, 60_000)
})

describe('clients sharing one store (tabs)', () => {
  it('one owns the outbox; the other sees its pending ops and takes over when it closes; each op applied once', async () => {
    const p = fresh('t')
    const shared = store()
    const a = await client(shared)
    const b = await client(shared)
    expect([a.outboxOwner, b.outboxOwner]).toEqual([true, false])
    const changes = await feed(p)
    proxy.setOffline(true)
    try {
      await a.put(p + 'a', 1)
      await b.put(p + 'b', 2)
      expect((await b.pending()).map((o) => o.key)).toEqual([p + 'a', p + 'b'])
      expect((await a.pending()).map((o) => o.key)).toEqual([p + 'a', p + 'b'])
      await a.close()
      await until(() => b.outboxOwner)
    } finally {
      proxy.setOffline(false)
    }
    const result = await b.sync()
    expect(result).toMatchObject({ applied: 2, pending: 0, owner: true })
    const counts = await countChanges(changes, 2)
    expect(Object.fromEntries(counts)).toEqual({ [p + 'a']: 1, [p + 'b']: 1 })
    changes.close()
  })

  it('one order across clients of a store whatever their clocks: writes 1 (A), 2 (B), the clock corrected back 2 h, 3 (B), 4 (A) replay as 1, 2, 3, 4 (issue 24.4)', async () => {
    const key = `${fresh('clock')}k`
    const shared = store()
    const a = await client(shared)
    const b = await client(shared)
    const realNow = Date.now.bind(Date)
    let skewMs = 2 * 3600_000
    const now = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs)
    onTestFinished(() => now.mockRestore())
    proxy.setOffline(true)
    try {
      await a.put(key, 1)
      await b.put(key, 2)
      skewMs = 0
      await b.put(key, 3)
      await a.put(key, 4)
      expect((await a.pending()).map((o) => o.value)).toEqual([1, 2, 3, 4])
    } finally {
      proxy.setOffline(false)
    }
    now.mockRestore()
    expect(await a.sync()).toMatchObject({ applied: 4, pending: 0 })
    expect((await a.get(key)).value).toBe(4)
    expect((await b.get(key)).value).toBe(4)
  })

  it('a tab that does not own the outbox asks the owner to replay and learns the outcome', async () => {
    const p = fresh('t2')
    const shared = store()
    const a = await client(shared)
    const b = await client(shared)
    proxy.setOffline(true)
    try {
      await b.put(p + 'k', 'from b')
    } finally {
      proxy.setOffline(false)
    }
    const result = await b.sync()
    expect(result).toMatchObject({ owner: false, applied: 1, pending: 0 })
    expect((await a.get(p + 'k')).value).toBe('from b')
  })

  it('the pending count stays exact: a recount racing the first write, and ops another owner replayed (the lease fallback, for a moment)', async () => {
    const p = fresh('t3')
    const shared = new MemoryLevel<string, unknown>()
    const db = await client(shared as unknown as PersistStore)
    const counts: number[] = []
    db.on('pending', ({ count }) => counts.push(count))
    proxy.setOffline(true)
    try {
      await db.put(p + 'a', 1)
      await db.put(p + 'b', 2)
      expect(counts.at(-1)).toBe(2)
      // What a second owner's replay leaves: the ops gone from the store under this client.
      const json = { keyEncoding: 'utf8', valueEncoding: 'json' } as const
      await shared.sublevel('causeway', json).sublevel('outbox', json).clear()
      // Still offline: this client's replay finds nothing to send, and says so. (The first
      // sync may join a retry that read the outbox before it was emptied.)
      await db.sync()
      expect(await db.sync()).toMatchObject({ applied: 0, pending: 0 })
      expect(counts.at(-1)).toBe(0)
    } finally {
      proxy.setOffline(false)
    }
  })
})
