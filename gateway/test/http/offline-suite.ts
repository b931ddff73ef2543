/**
 * Offline-first over HTTP (issue 14), written once and run on every deployment (the embedded
 * cluster on disk, gateways over real Redis servers): operation ids on the write routes, the batch
 * replay route and the change feed. A deployment has two regions; `restart()` restarts region 0's
 * gateway (and, in the embedded cluster, reopens every replica from disk).
 */
import { hlcFrom, partitionOf } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { openSse, type SseEvent, type SseStream } from '../support/sse-client.js'

/** A running two-region deployment. */
export interface Deployment {
  /** Region 0's and region 1's gateway URLs (region 0's may change on restart). */
  urls: string[]
  partitions: number
  /** Headers every client request carries (credentials). */
  headers: Record<string, string>
  /** The `maxWatchers` each gateway was started with. */
  maxWatchers: number
  /** Restarts region 0's gateway. */
  restart(): Promise<void>
  /** Closes region 1's gateway and resolves when it has closed (the last test). */
  closeRegion1(): Promise<void>
  close(): Promise<void>
}

/** Options every deployment of the suite starts with. */
export const SUITE_OPTIONS = {
  /** Siblings namespace. */
  namespaces: { cart: { conflicts: 'siblings' as const } },
  maxWatchers: 40,
  wanDelayMs: 30,
}

interface Reply {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

const OP_CLIENT = `suite-${Math.random().toString(36).slice(2, 10)}`
let seq = 0
const nextOp = () => `${OP_CLIENT}.${++seq}`

/** `count` keys `<prefix><n>`, each in a different partition (as far as there are). */
function spreadKeys(prefix: string, count: number, partitions: number): string[] {
  const keys: string[] = []
  const seen = new Set<number>()
  for (let i = 0; keys.length < count && i < 10_000; i++) {
    const key = `${prefix}${i}`
    const p = partitionOf(key, partitions)
    if (seen.has(p) && seen.size < partitions) continue
    seen.add(p)
    keys.push(key)
  }
  return keys
}

export function offlineSuite(name: string, deploy: () => Promise<Deployment>): void {
  describe(`offline-first over HTTP: ${name}`, () => {
    let dep: Deployment

    beforeAll(async () => {
      dep = await deploy()
    }, 60_000)
    afterAll(() => dep?.close(), 30_000)

    async function call(
      region: number,
      path: string,
      init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
    ): Promise<Reply> {
      const headers: Record<string, string> = { ...dep.headers, ...init.headers }
      if (init.json !== undefined) headers['content-type'] = 'application/json'
      const res = await fetch(dep.urls[region] + path, {
        method: init.method ?? 'GET',
        headers,
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      })
      return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] }
    }
    const kv = (key: string) => `/v1/kv/${encodeURIComponent(key)}`
    const put = (
      region: number,
      key: string,
      value: unknown,
      headers: Record<string, string> = {},
    ) => call(region, kv(key), { method: 'PUT', json: { value }, headers })
    const watch = (region: number, query: string, headers: Record<string, string> = {}) =>
      openSse(`${dep.urls[region]}/v1/watch?${query}`, { ...dep.headers, ...headers })

    async function stream(region: number, query: string, headers: Record<string, string> = {}) {
      const opened = await watch(region, query, headers)
      if (!opened.ok) throw new Error(`watch refused: ${JSON.stringify(opened.body)}`)
      return opened.stream
    }
    /** The next `change` events, skipping heartbeats. */
    async function changes(s: SseStream, count: number, timeoutMs = 5000): Promise<SseEvent[]> {
      const out: SseEvent[] = []
      while (out.length < count) out.push(await s.nextOf('change', timeoutMs))
      return out
    }
    const dataOf = (e: SseEvent) => JSON.parse(e.data) as Record<string, unknown>

    describe('operation ids', () => {
      it('applies a put once and answers a repeat with the first reply, marked replayed', async () => {
        const id = nextOp()
        const first = await put(0, 'opk:1', { n: 1 }, { 'causeway-op-id': id })
        expect(first.status).toBe(200)
        expect(first.headers.get('causeway-op-replayed')).toBeNull()
        const again = await put(
          0,
          'opk:1',
          { n: 1 },
          { 'causeway-op-id': id, 'causeway-dt': hlcFrom(Date.now(), 0) },
        )
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        expect(again.headers.get('causeway-op-replayed')).toBe('1')
        // Nothing was written by the repeat: the next write takes the next idx.
        const next = await put(0, 'opk:1', { n: 2 })
        expect(next.body.idx).toBe((first.body.idx as number) + 1)
      })

      it('refuses an id reused with another body (409) or malformed (400), writing nothing', async () => {
        const id = nextOp()
        await put(0, 'opk:2', 'a', { 'causeway-op-id': id })
        const reused = await put(0, 'opk:2', 'b', { 'causeway-op-id': id })
        expect(reused.status).toBe(409)
        expect(reused.body.code).toBe('OP_ID_REUSED')
        const asDelete = await call(0, kv('opk:2'), {
          method: 'DELETE',
          headers: { 'causeway-op-id': id },
        })
        expect(asDelete.body.code).toBe('OP_ID_REUSED')
        for (const bad of [
          'short.1',
          `${OP_CLIENT}.0`,
          `${OP_CLIENT}.01`,
          `${OP_CLIENT}`,
          'x'.repeat(90) + '.1',
          `${OP_CLIENT}.1.2`,
        ]) {
          const r = await put(0, 'opk:2', 'c', { 'causeway-op-id': bad })
          expect([r.status, r.body.code]).toEqual([400, 'INVALID_OP_ID'])
        }
        const read = await call(0, kv('opk:2'))
        expect(read.body.value).toBe('a')
      })

      it('applies concurrent duplicates once', async () => {
        const id = nextOp()
        const replies = await Promise.all(
          Array.from({ length: 12 }, () => put(0, 'opk:3', 'once', { 'causeway-op-id': id })),
        )
        expect(replies.map((r) => r.status)).toEqual(new Array(12).fill(200))
        expect(replies.filter((r) => r.headers.get('causeway-op-replayed') === null)).toHaveLength(
          1,
        )
        for (const r of replies) expect(r.body).toEqual(replies[0]!.body)
        const next = await put(0, 'opk:3', 'after')
        expect(next.body.idx).toBe((replies[0]!.body.idx as number) + 1)
      })

      it('keeps set writes and sibling writes idempotent too', async () => {
        const id = nextOp()
        const add = (ids: string) =>
          call(0, '/v1/sets/optags:1/add', {
            method: 'POST',
            json: { elements: ['red'] },
            headers: { 'causeway-op-id': ids },
          })
        const first = await add(id)
        const again = await add(id)
        expect(again.body).toEqual(first.body)
        expect(again.headers.get('causeway-op-replayed')).toBe('1')
        // Reads carry the write's vector: a follower serves them only once it has the write.
        const after = (w: Reply) =>
          `${w.body.epoch as number}@${w.body.dc as number}:${w.body.idx as number}`
        const size = await call(0, '/v1/sets/optags:1/size', {
          headers: { 'causeway-after': after(first) },
        })
        expect(size.body.size).toBe(1)
        const sid = nextOp()
        const s1 = await put(0, 'cart:op1', 'x', { 'causeway-op-id': sid })
        const s2 = await put(0, 'cart:op1', 'x', { 'causeway-op-id': sid })
        expect(s2.body).toEqual(s1.body)
        expect(s1.body.context).toEqual(expect.any(String))
        const read = await call(0, kv('cart:op1'), { headers: { 'causeway-after': after(s1) } })
        expect(read.body.siblings).toHaveLength(1)
      })

      it('remembers applied ids across a gateway restart', async () => {
        const id = nextOp()
        const first = await put(0, 'opk:4', 'before', { 'causeway-op-id': id })
        await dep.restart()
        const again = await put(0, 'opk:4', 'before', { 'causeway-op-id': id })
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        expect(again.headers.get('causeway-op-replayed')).toBe('1')
      }, 60_000)
    })

    describe('POST /v1/ops', () => {
      it('applies ops in order with stamps increasing across partitions, and replays a repeat', async () => {
        const keys = spreadKeys('batch:a', 4, dep.partitions)
        // The first op depends on a time ahead of every clock: the ones after it follow it.
        const ahead = hlcFrom(Date.now() + 5000, 0)
        const ops = [
          { opId: nextOp(), kind: 'put', key: keys[0], value: 1, dt: ahead },
          { opId: nextOp(), kind: 'put', key: keys[1], value: 2 },
          { opId: nextOp(), kind: 'set-add', name: keys[2], elements: ['x', { element: 'y' }] },
          { opId: nextOp(), kind: 'delete', key: keys[3] },
          { opId: nextOp(), kind: 'put', key: keys[0], value: 3, level: 'eventual' },
        ]
        const r = await call(0, '/v1/ops', { method: 'POST', json: { ops } })
        expect(r.status).toBe(200)
        expect(r.body.error).toBeUndefined()
        const results = r.body.results as { ts: string; idx: number; replayed?: boolean }[]
        expect(results).toHaveLength(5)
        expect(results[0]!.ts > ahead).toBe(true)
        for (let i = 1; i < results.length; i++)
          expect(results[i]!.ts > results[i - 1]!.ts).toBe(true)
        expect(results.some((x) => x.replayed)).toBe(false)
        // The whole batch again (an outbox replayed after an unknown outcome): nothing applies twice.
        const again = await call(0, '/v1/ops', { method: 'POST', json: { ops } })
        expect(
          (again.body.results as unknown[]).map((x) => ({ ...(x as object), replayed: undefined })),
        ).toEqual(results.map((x) => ({ ...x, replayed: undefined })))
        expect(
          (again.body.results as { replayed?: boolean }[]).every((x) => x.replayed === true),
        ).toBe(true)
        expect((await call(0, kv(keys[0]!))).body.value).toBe(3)
        // An op sent alone first, then in a batch, is one operation.
        const alone = nextOp()
        const single = await put(0, keys[1]!, 'solo', { 'causeway-op-id': alone })
        const batched = await call(0, '/v1/ops', {
          method: 'POST',
          json: { ops: [{ opId: alone, kind: 'put', key: keys[1], value: 'solo' }] },
        })
        expect(batched.body.results).toEqual([{ ...single.body, replayed: true }])
      })

      it('stops at the first op that fails and applies nothing after it', async () => {
        const ops = [
          { opId: nextOp(), kind: 'put', key: 'stop:1', value: 'applied' },
          { opId: nextOp(), kind: 'put', key: '', value: 'bad key' },
          { opId: nextOp(), kind: 'put', key: 'stop:3', value: 'never' },
        ]
        const r = await call(0, '/v1/ops', { method: 'POST', json: { ops } })
        expect(r.status).toBe(200)
        expect(r.body.results).toHaveLength(1)
        expect(r.body.error).toMatchObject({ index: 1, statusCode: 400, code: 'INVALID_KEY' })
        expect((await call(0, kv('stop:3'))).body.found).toBe(false)
        const reused = await call(0, '/v1/ops', {
          method: 'POST',
          json: { ops: [{ opId: ops[0]!.opId, kind: 'put', key: 'stop:1', value: 'other' }] },
        })
        expect(reused.body).toMatchObject({
          results: [],
          error: { index: 0, code: 'OP_ID_REUSED' },
        })
        const noId = await call(0, '/v1/ops', {
          method: 'POST',
          json: { ops: [{ kind: 'delete', key: 'stop:1' }] },
        })
        expect(noId.body.error).toMatchObject({ index: 0, code: 'INVALID_OP_ID' })
      })

      it('refuses a malformed envelope as a whole, applying nothing', async () => {
        const key = 'envelope:1'
        const good = { opId: nextOp(), kind: 'put', key, value: 1 }
        for (const body of [
          { ops: [good, { opId: nextOp(), kind: 'rename', key }] },
          { ops: [] },
          { ops: Array.from({ length: 501 }, () => good) },
          { ops: good },
          { ops: [good], extra: true },
        ]) {
          const r = await call(0, '/v1/ops', { method: 'POST', json: body })
          expect([r.status, r.body.code]).toEqual([400, 'INVALID_REQUEST'])
        }
        expect((await call(0, kv(key))).body.found).toBe(false)
      })
    })

    describe('GET /v1/watch', () => {
      it('delivers a write in region 0 to a watcher on region 1', async () => {
        const s = await stream(1, `prefix=${encodeURIComponent('feed:')}`)
        const hello = await s.next()
        expect(hello.event).toBe('heartbeat')
        expect(JSON.parse(hello.data)).toEqual({ cursor: hello.id })
        const w = await put(0, 'feed:1', { hello: 'world' })
        await put(0, 'other:1', 'not watched')
        const [change] = await changes(s, 1)
        expect(dataOf(change!)).toEqual({
          key: 'feed:1',
          p: partitionOf('feed:1', dep.partitions),
          dc: 0,
          idx: w.body.idx,
          ts: w.body.ts,
          deleted: false,
          value: { hello: 'world' },
        })
        await call(0, kv('feed:1'), { method: 'DELETE' })
        const [gone] = await changes(s, 1)
        expect(dataOf(gone!)).toMatchObject({ key: 'feed:1', deleted: true })
        expect(dataOf(gone!).value).toBeUndefined()
        s.close()
      })

      it('shows siblings and set writes as a read would', async () => {
        const s = await stream(1, `keys=${['cart:w1', 'wset:1'].map(encodeURIComponent).join(',')}`)
        await s.next()
        await put(0, 'cart:w1', 'a')
        const [c] = await changes(s, 1)
        expect(dataOf(c!)).toMatchObject({
          key: 'cart:w1',
          deleted: false,
          value: 'a',
          context: expect.any(String),
        })
        expect(dataOf(c!).siblings).toHaveLength(1)
        await call(0, '/v1/sets/wset:1/add', { method: 'POST', json: { elements: ['a', 'b'] } })
        const [set] = await changes(s, 1)
        expect(dataOf(set!)).toMatchObject({
          key: 'wset:1',
          set: { added: ['a', 'b'], removed: [] },
        })
        s.close()
      })

      it('resumes from a cursor with every later change exactly once, and none before it', async () => {
        const keys = spreadKeys('resume:', 6, dep.partitions)
        const s = await stream(1, 'prefix=resume%3A')
        await s.next()
        for (const key of keys.slice(0, 3)) await put(0, key, key)
        // Keys of different partitions: ordered per partition only, so compare as sets.
        const seen = await changes(s, 3)
        expect(new Set(seen.map((e) => dataOf(e).key))).toEqual(new Set(keys.slice(0, 3)))
        const cursor = seen[1]!.id!
        const before = new Set(seen.slice(0, 2).map((e) => dataOf(e).key))
        s.close()
        // Written while nobody watches, in both regions.
        await put(0, keys[3]!, keys[3])
        await put(1, keys[4]!, keys[4])
        await put(0, keys[5]!, keys[5])
        for (const how of ['since', 'last-event-id'] as const) {
          const resumed =
            how === 'since'
              ? await stream(1, `prefix=resume%3A&since=${cursor}`)
              : await stream(1, 'prefix=resume%3A&since=ignored-when-last-event-id-is-there', {
                  'last-event-id': cursor,
                })
          expect((await resumed.next()).event).toBe('heartbeat')
          const got = await changes(resumed, 4, 8000)
          expect(new Set(got.map((e) => dataOf(e).key))).toEqual(
            new Set(keys.filter((k) => !before.has(k))),
          )
          // Nothing more: no duplicate and nothing from before the cursor.
          await expect(resumed.nextOf('change', 700)).rejects.toThrow(/no event/)
          resumed.close()
        }
      })

      it('sends heartbeats with the current cursor', async () => {
        const s = await stream(1, 'prefix=hb%3A&heartbeatMs=1000')
        const first = await s.next()
        await put(1, 'hb:1', 1)
        const change = await s.nextOf('change')
        const beat = await s.nextOf('heartbeat', 2500)
        expect(beat.id).toBe(change.id)
        expect(JSON.parse(beat.data)).toEqual({ cursor: change.id })
        expect(first.id).not.toBe(change.id)
        s.close()
      })

      it('starts once the serving replicas cover causeway-after', async () => {
        const key = 'after:1'
        const p = partitionOf(key, dep.partitions)
        const w = await put(0, key, 'first')
        // Region 1 gets the write one WAN delay later: the feed starts only once it covers it, so
        // the write is behind the start and never delivered.
        const need = `${p}=${w.body.epoch as number}@0:${w.body.idx as number}`
        const opened = await watch(1, `keys=${key}&timeoutMs=8000`, { 'causeway-after': need })
        if (!opened.ok) throw new Error(JSON.stringify(opened.body))
        const hello = await opened.stream.next()
        expect(hello.event).toBe('heartbeat')
        const w2 = await put(0, key, 'second')
        const [c] = await changes(opened.stream, 1)
        expect(dataOf(c!)).toMatchObject({ value: 'second', idx: w2.body.idx })
        opened.stream.close()
        const late = await watch(1, `keys=${key}&timeoutMs=200`, {
          'causeway-after': `${p}=1@1:999999`,
        })
        expect(late.ok).toBe(false)
        if (!late.ok) expect([503, 400]).toContain(late.status)
      })

      it('needs the credentials a read needs', async () => {
        if (dep.headers.authorization === undefined) return
        const anonymous = await openSse(`${dep.urls[1]}/v1/watch?prefix=auth%3A`)
        expect(!anonymous.ok && [anonymous.status, anonymous.body.code]).toEqual([
          401,
          'UNAUTHORIZED',
        ])
        const batch = await fetch(`${dep.urls[0]}/v1/ops`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ops: [{ opId: nextOp(), kind: 'put', key: 'auth:1', value: 1 }] }),
        })
        expect(batch.status).toBe(401)
      })

      it('refuses bad watches with a clear 4xx before streaming', async () => {
        const cases: [string, Record<string, string>, string][] = [
          ['', {}, 'INVALID_REQUEST'],
          ['prefix=a&keys=b', {}, 'INVALID_REQUEST'],
          ['prefix=a&since=garbage!', {}, 'INVALID_CURSOR'],
          ['prefix=a&since=AQAAAAACBAA', {}, 'INVALID_CURSOR'],
          ['prefix=a&level=strong', {}, 'INVALID_LEVEL'],
          ['prefix=a&heartbeatMs=5', {}, 'INVALID_OPTION'],
          ['prefix=a', { 'causeway-after': '1@0:1' }, 'INVALID_VECTOR'],
          [
            `keys=${Array.from({ length: 101 }, (_, i) => `k${i}`).join(',')}`,
            {},
            'INVALID_OPTION',
          ],
          // A key that is not one percent-encoded key breaks the option's grammar.
          ['keys=%E0%A4%A', {}, 'INVALID_OPTION'],
          // One that is, but is not UTF-8, is a bad key.
          ['keys=%25E0%25A4', {}, 'INVALID_KEY'],
        ]
        for (const [query, headers, code] of cases) {
          const r = await watch(1, query, headers)
          expect(r.ok, query).toBe(false)
          if (!r.ok) expect([query, r.body.code]).toEqual([query, code])
        }
        // A cursor of a keys watch does not cover a prefix watch's partitions.
        const s = await stream(1, 'keys=cursor%3A1')
        const { id } = await s.next()
        s.close()
        if (dep.partitions > 1) {
          const r = await watch(1, `prefix=cursor%3A&since=${id}`)
          expect(!r.ok && r.body.code).toBe('INVALID_CURSOR')
        }
      })

      it('limits watchers per gateway: 10,000 watch requests are refused past the limit and the gateway keeps serving', async () => {
        const held: SseStream[] = []
        for (let i = 0; i < dep.maxWatchers; i++) held.push(await stream(0, 'prefix=flood%3A'))
        let refused = 0
        let retryAfter: string | null = null
        const total = 10_000
        let sent = 0
        const worker = async () => {
          while (sent < total) {
            sent++
            const r = await fetch(`${dep.urls[0]}/v1/watch?prefix=flood%3A`, {
              headers: dep.headers,
            })
            if (r.status === 429) {
              refused++
              retryAfter = r.headers.get('retry-after')
              const body = (await r.json()) as { code: string }
              expect(body.code).toBe('TOO_MANY_WATCHERS')
            } else {
              await r.body?.cancel()
            }
          }
        }
        // No bound on the time it takes (one run took 82 s on a loaded machine): every request is
        // answered (the test's own timeout bounds that), and each answer is the refusal.
        await Promise.all(Array.from({ length: 32 }, worker))
        expect(refused).toBe(total)
        expect(Number(retryAfter)).toBeGreaterThan(0)
        // Other requests are served, and the held feeds still deliver.
        expect((await put(0, 'flood:1', 'still here')).status).toBe(200)
        expect(dataOf((await changes(held[0]!, 1))[0]!).key).toBe('flood:1')
        for (const s of held) s.close()
        // Freed slots can be used again, once the gateway has seen the feeds close.
        const again = await vi.waitFor(() => stream(0, 'prefix=flood%3A'), { timeout: 5000 })
        again.close()
      }, 300_000)

      it('ends feeds cleanly when the gateway shuts down', async () => {
        const s = await stream(1, 'prefix=bye%3A')
        await s.next()
        const closing = dep.closeRegion1()
        const last = await s.nextOf('error', 5000)
        expect(JSON.parse(last.data)).toMatchObject({ code: 'SHUTTING_DOWN' })
        await s.ended(5000)
        await closing
      }, 30_000)
    })
  })
}
