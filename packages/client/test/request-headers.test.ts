/**
 * The SDK sends no request header beyond `SDK_REQUEST_HEADERS`, the list a gateway's CORS
 * preflight answer allows pages of other origins to send: a header added to the SDK but not to
 * that list would make every such call fail in browsers, with nothing but "CORS error" to show.
 * Every kind of call, against a real cluster.
 */
import { SDK_REQUEST_HEADERS } from '@causeway/core'
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, fetchTransport, type Transport } from '../src/index.js'

let cluster: { urls: string[]; close(): Promise<void> }

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 2,
    port: 0,
    namespaces: { cart: { conflicts: 'siblings' } },
  })
})

afterAll(async () => {
  await cluster?.close()
})

describe('request headers of the SDK', () => {
  it('are all in SDK_REQUEST_HEADERS, for every kind of call', async () => {
    const sent = new Map<string, Set<string>>()
    const inner = fetchTransport()
    const transport: Transport = {
      request(req) {
        const path = new URL(req.url).pathname.replace(/\/v1\/(kv|sets)\/[^/]+/, '/v1/$1/*')
        for (const name of Object.keys(req.headers)) {
          const paths = sent.get(name) ?? new Set()
          paths.add(`${req.method} ${path}`)
          sent.set(name, paths)
        }
        return inner.request(req)
      },
    }
    // An API key on an open dev cluster is accepted and ignored; the SDK still sends it.
    // The key goes to the other region's gateway too only because the app names it (issue 23).
    const db = await connect({
      url: cluster.urls[0]!,
      transport,
      apiKey: 'a-key',
      trustedOrigins: cluster.urls,
    })
    const written = await db.put('user:1', { name: 'Ada' })
    await db.get('user:1')
    await db.get('user:1', { region: 1, read: 'read-your-writes', timeoutMs: 3000 })
    await db.put('user:1', 2, { write: 'monotonic-writes', durability: 'majority' })
    await db.delete('user:1')
    const cart = await db.get('cart:1')
    await db.put('cart:1', ['apple'], { context: cart.context ?? null })
    await db.resolve('cart:1', (siblings) => siblings.flat(), { force: true })
    const set = db.set('tags')
    await set.add(['a', 'b'])
    await set.has('a')
    await set.size()
    const elements = []
    for await (const e of set.scan({ withContext: true })) elements.push(e)
    await set.remove(elements.slice(0, 1))
    await db.close()
    expect(written.idx).toBeGreaterThan(0)

    expect(sent.size).toBeGreaterThan(0)
    const unknown = [...sent.entries()].filter(([name]) => !SDK_REQUEST_HEADERS.includes(name))
    expect(unknown.map(([name, paths]) => `${name}: ${[...paths].join(', ')}`)).toEqual([])
    // The session headers did go out (the calls above are not too simple to need them).
    for (const name of ['causeway-after', 'causeway-dt', 'causeway-context', 'authorization'])
      expect([name, sent.has(name)]).toEqual([name, true])
  })
})
