/**
 * Siblings namespaces over HTTP, on the real embedded cluster: reads list every sibling with a
 * causal context (header and body), a write with the context supersedes what it saw, a write
 * without one adds a sibling, deletes are context-carrying tombstones, and a bad context is a
 * 400 `INVALID_CONTEXT` that writes nothing.
 */
import { decodeCausalContext, encodeCausalContext } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

let dev: DevCluster
let r0: string
let r1: string

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 2,
    port: 0,
    wanDelayMs: 100,
    replicaLagMs: 10,
    namespaces: { cart: { conflicts: 'siblings' }, user: { conflicts: 'lww' } },
  })
  ;[r0, r1] = dev.urls as [string, string]
})
afterAll(() => dev.close())

interface Reply {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

async function call(url: string, init: RequestInit & { json?: unknown } = {}): Promise<Reply> {
  const headers = new Headers(init.headers)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  const res = await fetch(url, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] }
}

const kv = (base: string, key: string) => `${base}/v1/kv/${encodeURIComponent(key)}`

function put(base: string, key: string, value: unknown, context?: string) {
  return call(kv(base, key), {
    method: 'PUT',
    json: { value },
    headers: context === undefined ? {} : { 'causeway-context': context },
  })
}

function del(base: string, key: string, context?: string) {
  return call(kv(base, key), {
    method: 'DELETE',
    headers: context === undefined ? {} : { 'causeway-context': context },
  })
}

// Leader reads, so what a region's leader holds is what is read.
const get = (base: string, key: string) => call(kv(base, key) + '?replica=leader')

const values = (reply: Reply) => (reply.body.siblings as { value?: unknown }[]).map((s) => s.value)

/** Polls `key` in region `base` until `done`, for at most 3 s; the last reply. */
async function until(base: string, key: string, done: (r: Reply) => boolean): Promise<Reply> {
  let last: Reply | undefined
  await vi
    .waitUntil(async () => done((last = await get(base, key))), { timeout: 3000, interval: 20 })
    .catch(() => undefined)
  return last ?? get(base, key)
}

describe('siblings namespaces over HTTP', () => {
  it('publishes the namespaces in the topology', async () => {
    const { body } = await call(`${r1}/v1/topology`)
    expect(body.namespaces).toEqual({
      cart: { conflicts: 'siblings' },
      user: { conflicts: 'lww' },
    })
  })

  it('keeps blind writes as siblings and collapses them with a write that sends the context', async () => {
    const key = 'cart:blind'
    const never = await get(r0, key)
    expect(never.body).toMatchObject({ found: false, siblings: [] })
    expect(decodeCausalContext(never.body.context as string)).toEqual([])
    expect(never.body).not.toHaveProperty('ts')

    await put(r0, key, ['apple'])
    const one = await get(r0, key)
    expect(one.body).toMatchObject({ found: true, value: ['apple'] })
    expect(one.body.siblings).toEqual([
      { ts: one.body.ts, dc: 0, idx: one.body.idx, value: ['apple'] },
    ])
    expect(one.headers.get('causeway-context')).toBe(one.body.context)

    await put(r0, key, ['pear'])
    const two = await get(r0, key)
    expect(two.body.found).toBe(true)
    // Two siblings: no single value, both listed oldest first, the newest in ts/dc.
    expect(two.body).not.toHaveProperty('value')
    expect(values(two)).toEqual([['apple'], ['pear']])
    expect(decodeCausalContext(two.body.context as string)).toEqual([[0, 2]])

    const merged = await put(r0, key, ['apple', 'pear'], two.body.context as string)
    expect(merged.status).toBe(200)
    const after = await get(r0, key)
    expect(after.body).toMatchObject({ found: true, value: ['apple', 'pear'], ts: merged.body.ts })
    expect(values(after)).toEqual([['apple', 'pear']])
  })

  it('keeps a write with an older context beside what it did not see', async () => {
    const key = 'cart:stale'
    await put(r0, key, 1)
    const seen = (await get(r0, key)).body.context as string
    await put(r0, key, 2) // concurrent with the next write
    await put(r0, key, 3, seen)
    expect(values(await get(r0, key))).toEqual([2, 3])
  })

  it('deletes with a context as a tombstone that still returns the context', async () => {
    const key = 'cart:deleted'
    await put(r0, key, 'x')
    const before = await get(r0, key)
    const deleted = await del(r0, key, before.body.context as string)
    expect(deleted.status).toBe(200)
    const after = await get(r0, key)
    expect(after.body).toMatchObject({ found: false, ts: deleted.body.ts, dc: 0 })
    expect(after.body).not.toHaveProperty('value')
    expect(after.body.siblings).toEqual([{ ts: deleted.body.ts, dc: 0, idx: after.body.idx }])
    expect(decodeCausalContext(after.body.context as string)).toEqual([[0, 2]])
    expect(after.headers.get('causeway-context')).toBe(after.body.context)
  })

  it('gives two regions exactly the concurrent siblings, then one value after a resolution', async () => {
    const key = 'cart:regions'
    // Written at once in both regions: neither has seen the other (WAN delay 100 ms).
    const [a, b] = await Promise.all([put(r0, key, 'from r0'), put(r1, key, 'from r1')])
    expect([a.status, b.status]).toEqual([200, 200])
    const both = (r: Reply) => Array.isArray(r.body.siblings) && r.body.siblings.length === 2
    const in0 = await until(r0, key, both)
    const in1 = await until(r1, key, both)
    expect(values(in0).sort()).toEqual(['from r0', 'from r1'])
    expect(in1.body.siblings).toEqual(
      (in0.body.siblings as { idx: number }[]).map((s, i) => ({
        ...s,
        idx: (in1.body.siblings as { idx: number }[])[i]!.idx,
      })),
    )
    expect(in1.body.context).toBe(in0.body.context)
    expect(decodeCausalContext(in0.body.context as string)).toEqual([
      [0, 1],
      [1, 1],
    ])
    // Region 1 resolves; region 0 converges on the resolution alone.
    const resolved = await put(r1, key, 'merged', in1.body.context as string)
    const done = await until(r0, key, (r) => r.body.ts === resolved.body.ts)
    expect(values(done)).toEqual(['merged'])
    expect(done.body).toMatchObject({ found: true, value: 'merged', dc: 1 })
  })

  it('hands back a context with a write only when it is exactly what was seen plus the write', async () => {
    const key = 'cart:chained'
    const first = await put(r0, key, 1)
    expect(decodeCausalContext(first.body.context as string)).toEqual([[0, 1]])
    // Chained without reading: each write supersedes the one before.
    const second = await put(r0, key, 2, first.body.context as string)
    expect(decodeCausalContext(second.body.context as string)).toEqual([[0, 2]])
    expect(values(await get(r0, key))).toEqual([2])
    // A blind write beside it: the leader holds a version this writer never saw.
    const blind = await put(r0, key, 3)
    expect(blind.body).not.toHaveProperty('context')
    // A write with the old context keeps the blind write and hands back no context either.
    const stale = await put(r0, key, 4, second.body.context as string)
    expect(stale.body).not.toHaveProperty('context')
    expect(values(await get(r0, key))).toEqual([3, 4])
    // Last-writer-wins writes never carry one.
    expect((await put(r0, 'user:chained', 1)).body).not.toHaveProperty('context')
  })

  it('refuses bad contexts with INVALID_CONTEXT and writes nothing', async () => {
    const key = 'cart:bad'
    await put(r0, key, 'kept')
    const before = await get(r0, key)
    const bad = [
      '!!!', // not base64url
      'wQ', // truncated
      'AQA', // another format byte
      encodeCausalContext([[5, 1]]), // region 5 in a two-region cluster
      'wQA' + 'A'.repeat(6000), // oversized
      '',
    ]
    for (const context of bad) {
      for (const write of [put(r0, key, 'no', context), del(r0, key, context)]) {
        const res = await write
        expect(res.status, context.slice(0, 20)).toBe(400)
        expect(res.body.code).toBe('INVALID_CONTEXT')
      }
    }
    // A context on a last-writer-wins key is refused too.
    const lww = await put(r0, 'user:1', 'x', 'wQA')
    expect(lww.status).toBe(400)
    expect(lww.body.code).toBe('INVALID_CONTEXT')
    expect((await get(r0, 'user:1')).body.found).toBe(false)
    const after = await get(r0, key)
    expect(after.body.siblings).toEqual(before.body.siblings)
    expect(after.body.context).toBe(before.body.context)
  })

  it('answers last-writer-wins keys without siblings or context', async () => {
    await put(r0, 'user:2', 'a')
    await put(r0, 'user:2', 'b')
    const r = await get(r0, 'user:2')
    expect(r.body).toMatchObject({ found: true, value: 'b' })
    expect(r.body).not.toHaveProperty('siblings')
    expect(r.body).not.toHaveProperty('context')
    expect(r.headers.get('causeway-context')).toBeNull()
  })
})
