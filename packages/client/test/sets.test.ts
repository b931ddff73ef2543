/**
 * `db.set(name)` against a real embedded cluster (two regions, lagging followers, a WAN delay),
 * over HTTP: the set API, its session guarantees across regions, removes of observed contexts,
 * streamed scans in pages, and input errors.
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from '../src/index.js'
import { recordingTransport } from './support/recording-transport.js'

const WAN_DELAY_MS = 300

let cluster: { urls: string[]; close(): Promise<void> }

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 2,
    port: 0,
    replicaLagMs: 30,
    wanDelayMs: WAN_DELAY_MS,
  })
})

afterAll(async () => {
  await cluster?.close()
})

/** The default transport, recording the requests the test looks at. */
const recording = () => recordingTransport((req) => req.url.includes('/v1/sets/'))

let n = 0
const fresh = (prefix: string) => `${prefix}-${++n}-${Date.now()}`

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of items) out.push(item)
  return out
}

describe('db.set', () => {
  it('adds, checks, counts, scans and removes', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const set = db.set(fresh('tags'))
    await set.add(['b', 'a', 'c'])
    await set.add('a')
    expect(await set.size()).toBe(3)
    expect(await collect(set.scan())).toEqual(['a', 'b', 'c'])
    const has = await set.has('a')
    expect(has).toMatchObject({ found: true, element: 'a' })
    expect(typeof has.ctx).toBe('string')
    expect(await set.has('zz')).toMatchObject({ found: false, ctx: undefined })
    await set.remove('b')
    await set.remove({ element: 'a', ctx: has.ctx! })
    expect(await collect(set.scan())).toEqual(['c'])
    expect(await set.size()).toBe(1)
    await db.close()
  })

  it('reads its own writes in another region (the read waits for the set’s entries)', async () => {
    const db = await connect({ url: cluster.urls[0]! })
    const set = db.set(fresh('ryw'))
    const written = await set.add(['x', 'y'])
    const started = performance.now()
    // Right away, in the other region: it must wait for the shipped entry, never miss it.
    expect(await collect(set.scan({ region: 'r1' }))).toEqual(['x', 'y'])
    expect(performance.now() - started).toBeGreaterThan(WAN_DELAY_MS / 2)
    expect(db.session.row(set.partition)!.hwm[0]).toBe(written.idx)
    expect(db.session.row(set.partition)!.hrm[0]).toBe(written.idx)
    // Eventual reads send no vector and may miss it; session reads never do.
    expect((await set.has('y', { region: 'r1' })).found).toBe(true)
    await db.close()
  })

  it('removes in one region what the session saw in another, and add wins over it', async () => {
    const a = await connect({ url: cluster.urls[0]!, region: 'r0' })
    const b = await connect({ url: cluster.urls[1]!, region: 'r1' })
    const name = fresh('aw')
    await a.set(name).add('x')
    // b observes x (waiting for it), then removes what it saw, in r1.
    b.session.merge(a.session)
    const seen = await b.set(name).has('x')
    expect(seen.found).toBe(true)
    // Meanwhile a re-adds x in r0: that insertion is concurrent with b's remove.
    await a.set(name).add('x')
    await b.set(name).remove({ element: 'x', ctx: seen.ctx! })
    a.session.merge(b.session)
    b.session.merge(a.session)
    // Both regions converge on x being present (the concurrent add wins).
    for (const [db, region] of [
      [a, 'r0'],
      [b, 'r1'],
    ] as const)
      expect(await collect(db.set(name).scan({ region }))).toEqual(['x'])
    await a.close()
    await b.close()
  })

  it('removes without a context wait at the leader for the session, so nothing seen survives', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const name = fresh('observed')
    await db.set(name).add(['p', 'q'])
    // Remove in r1 straight away: the leader there has not received the add yet, so it waits.
    await db.set(name).remove('p', { region: 'r1' })
    const remove = transport.sent.find((r) => r.url.includes('/remove'))!
    expect(remove.headers['causeway-after']).toMatch(/0:\d+/)
    expect(await collect(db.set(name).scan({ region: 'r0' }))).toEqual(['q'])
    expect(await collect(db.set(name).scan({ region: 'r1' }))).toEqual(['q'])
    await db.close()
  })

  it('scans in pages, from a point, with contexts, up to a limit, and merged', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const set = db.set(fresh('pages'))
    const elements = Array.from({ length: 2500 }, (_, i) => `e${String(i).padStart(5, '0')}`)
    await set.add(elements)
    transport.sent.length = 0
    expect(await collect(set.scan({ pageSize: 1000 }))).toEqual(elements)
    expect(transport.sent.filter((r) => r.url.includes('/scan'))).toHaveLength(3)
    expect(await collect(set.scan({ from: 'e01000', limit: 3 }))).toEqual(
      elements.slice(1000, 1003),
    )
    expect(await collect(set.scan({ after: 'e02497' }))).toEqual(elements.slice(2498))
    const withCtx = await collect(set.scan({ withContext: true, limit: 2 }))
    expect(withCtx.map((e) => e.element)).toEqual(elements.slice(0, 2))
    await set.remove(withCtx)
    expect(await set.size()).toBe(2498)
    expect(await collect(set.scan({ merge: true, limit: 2 }))).toEqual(elements.slice(2, 4))
    // Breaking out of the loop stops reading.
    transport.sent.length = 0
    for await (const e of set.scan({ pageSize: 10 })) if (e === 'e00005') break
    expect(transport.sent).toHaveLength(1)
    await db.close()
  })

  it('refuses bad input with stable codes, before sending anything', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const set = db.set(fresh('bad'))
    await expect(set.add('x'.repeat(1025))).rejects.toMatchObject({ code: 'INVALID_ELEMENT' })
    await expect(set.add([])).rejects.toMatchObject({ code: 'INVALID_ELEMENT' })
    await expect(set.has('\ud800')).rejects.toMatchObject({ code: 'INVALID_ELEMENT' })
    expect(() => db.set('')).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }))
    expect(transport.sent).toHaveLength(0)
    // A forged context is refused by the gateway.
    await set.add('x')
    await expect(
      set.remove({ element: 'x', ctx: '0-1.AAAAAAAAAAAAAAAAAAAAAA' }),
    ).rejects.toMatchObject({ code: 'INVALID_CONTEXT' })
    // Another element's context does not remove this one.
    await set.add('y')
    const y = await set.has('y')
    await expect(set.remove({ element: 'x', ctx: y.ctx! })).rejects.toMatchObject({
      code: 'INVALID_CONTEXT',
    })
    expect(await collect(set.scan())).toEqual(['x', 'y'])
    await db.close()
  })

  it('splits batches over 1000 elements into several writes', async () => {
    const transport = recording()
    const db = await connect({ url: cluster.urls[0]!, transport })
    const set = db.set(fresh('big'))
    await set.add(Array.from({ length: 2001 }, (_, i) => `e${i}`))
    expect(transport.sent.filter((r) => r.url.includes('/add'))).toHaveLength(3)
    expect(await set.size()).toBe(2001)
    await db.close()
  })
})
