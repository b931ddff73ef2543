/**
 * Scoped API keys: a key limited to namespaces reaches only keys and sets of those namespaces, a
 * read-only key only reads, a write-only key only writes; anything else is 403 `OUT_OF_SCOPE`
 * before the cluster service is called. The routes that touch no key take any valid key.
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { buildGateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

const CART = 'cart-key-0123456789'
const READER = 'reader-key-0123456789'
const WRITER = 'writer-key-0123456789'
const ALL = 'all-key-0123456789'

const service = new FakeClusterService()
const app = buildGateway({
  service,
  regionUrls: ['http://a', 'http://b'],
  processMetrics: false,
  auth: {
    apiKeys: [
      { key: CART, namespaces: ['cart', 'wish list'] },
      { key: READER, access: 'read' },
      { key: WRITER, access: 'write', namespaces: ['cart'] },
      ALL,
    ],
  },
})
afterAll(() => app.close())
beforeEach(() => service.reset())

async function status(token: string, method: 'GET' | 'PUT' | 'DELETE' | 'POST', url: string) {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(method === 'PUT' ? { payload: { value: 1 } } : {}),
    ...(method === 'POST' ? { payload: { elements: ['x'] } } : {}),
  })
  return res.statusCode === 403 ? `403 ${res.json().code}` : res.statusCode
}

describe('scoped API keys', () => {
  it('limits a key to its namespaces, for keys and sets alike', async () => {
    expect(await status(CART, 'PUT', '/v1/kv/cart:1')).toBe(200)
    expect(await status(CART, 'GET', '/v1/kv/cart:1')).toBe(200)
    expect(await status(CART, 'DELETE', `/v1/kv/${encodeURIComponent('wish list:2')}`)).toBe(200)
    expect(await status(CART, 'GET', '/v1/kv/user:1')).toBe('403 OUT_OF_SCOPE')
    expect(await status(CART, 'PUT', '/v1/kv/user:1')).toBe('403 OUT_OF_SCOPE')
    // No namespace at all, or one that only starts like an allowed one.
    expect(await status(CART, 'GET', '/v1/kv/cart')).toBe('403 OUT_OF_SCOPE')
    expect(await status(CART, 'GET', '/v1/kv/carts:1')).toBe('403 OUT_OF_SCOPE')
    // Percent-encoding does not move a key out of its namespace or into another.
    expect(await status(CART, 'GET', '/v1/kv/user%3Acart:1')).toBe('403 OUT_OF_SCOPE')
    expect(await status(CART, 'GET', '/v1/kv/cart%3A1')).toBe(200)
    // The refused calls reached nothing.
    expect(service.writes.map((w) => w.key)).toEqual(['cart:1', 'wish list:2'])
  })

  it('limits a read-only key to reads and a write-only key to writes', async () => {
    expect(await status(READER, 'GET', '/v1/kv/user:1')).toBe(200)
    expect(await status(READER, 'PUT', '/v1/kv/user:1')).toBe('403 OUT_OF_SCOPE')
    expect(await status(READER, 'DELETE', '/v1/kv/user:1')).toBe('403 OUT_OF_SCOPE')
    expect(await status(WRITER, 'PUT', '/v1/kv/cart:1')).toBe(200)
    expect(await status(WRITER, 'GET', '/v1/kv/cart:1')).toBe('403 OUT_OF_SCOPE')
    expect(await status(WRITER, 'PUT', '/v1/kv/user:1')).toBe('403 OUT_OF_SCOPE')
    expect(service.writes.map((w) => w.key)).toEqual(['cart:1'])
  })

  it('lets every valid key reach the routes that touch no key, and an unscoped key everything', async () => {
    for (const token of [CART, READER, WRITER, ALL]) {
      expect(await status(token, 'GET', '/v1/topology')).toBe(200)
      expect(await status(token, 'GET', '/v1/status')).toBe(200)
    }
    expect(await status(ALL, 'PUT', '/v1/kv/user:1')).toBe(200)
    expect(await status(ALL, 'GET', '/v1/kv/plain')).toBe(200)
  })

  it('scopes sets by their name like keys, over the embedded cluster', async () => {
    const cluster = await EmbeddedCluster.start({ regions: 1, partitions: 2, replicas: 1 })
    const sets = buildGateway({
      service: cluster.service(0),
      regionUrls: ['http://a'],
      processMetrics: false,
      auth: {
        apiKeys: [
          { key: CART, namespaces: ['cart'] },
          { key: READER, access: 'read' },
        ],
      },
    })
    try {
      const call = async (token: string, method: 'GET' | 'POST', url: string) => {
        const res = await sets.inject({
          method,
          url,
          headers: { authorization: `Bearer ${token}` },
          ...(method === 'POST' ? { payload: { elements: ['x'] } } : {}),
        })
        return res.statusCode === 403 ? `403 ${res.json().code}` : res.statusCode
      }
      expect(await call(CART, 'POST', '/v1/sets/cart:s/add')).toBe(200)
      expect(await call(CART, 'GET', '/v1/sets/cart:s/size')).toBe(200)
      expect(await call(CART, 'GET', '/v1/sets/user:s/size')).toBe('403 OUT_OF_SCOPE')
      expect(await call(CART, 'POST', '/v1/sets/user:s/add')).toBe('403 OUT_OF_SCOPE')
      expect(await call(READER, 'GET', '/v1/sets/cart:s/has?element=x')).toBe(200)
      expect(await call(READER, 'POST', '/v1/sets/cart:s/remove')).toBe('403 OUT_OF_SCOPE')
      expect(await call(READER, 'GET', '/v1/sets/user:s/size')).toBe(200)
    } finally {
      await sets.close()
      await cluster.close()
    }
  })

  it('checks every op of a batch and every watched prefix or key against the scope', async () => {
    const cluster = await EmbeddedCluster.start({ regions: 1, partitions: 2, replicas: 1 })
    const gw = buildGateway({
      service: cluster.service(0),
      regionUrls: ['http://a'],
      processMetrics: false,
      auth: {
        apiKeys: [
          { key: CART, namespaces: ['cart'] },
          { key: READER, access: 'read' },
        ],
      },
    })
    const headers = (token: string) => ({ authorization: `Bearer ${token}` })
    try {
      let seq = 0
      const batch = (token: string, keys: string[]) =>
        gw.inject({
          method: 'POST',
          url: '/v1/ops',
          headers: headers(token),
          payload: {
            ops: keys.map((key, i) => ({ opId: `scopetest.${++seq}`, kind: 'put', key, value: i })),
          },
        })
      const allowed = await batch(CART, ['cart:1', 'cart:2'])
      expect(allowed.statusCode).toBe(200)
      expect(allowed.json().results).toHaveLength(2)
      expect(allowed.json().error).toBeUndefined()
      // The op outside the scope stops the batch there: the ops before it are applied, it is not.
      const mixed = await batch(CART, ['cart:3', 'user:1', 'cart:4'])
      const body = mixed.json()
      expect(body.results ?? []).toHaveLength(1)
      expect(body.error).toMatchObject({ index: 1, statusCode: 403, code: 'OUT_OF_SCOPE' })
      const read = await gw.inject({ method: 'GET', url: '/v1/kv/cart:4', headers: headers(CART) })
      expect(read.json().found).toBe(false)
      const readerBatch = await batch(READER, ['cart:5'])
      expect(readerBatch.json().error ?? readerBatch.json()).toMatchObject({ code: 'OUT_OF_SCOPE' })

      const watch = (token: string, query: string) =>
        gw.inject({ method: 'GET', url: `/v1/watch?${query}`, headers: headers(token) })
      expect((await watch(CART, 'prefix=user%3A')).json().code).toBe('OUT_OF_SCOPE')
      expect((await watch(CART, 'prefix=car')).json().code).toBe('OUT_OF_SCOPE')
      expect((await watch(CART, 'keys=user%3A1')).json().code).toBe('OUT_OF_SCOPE')
    } finally {
      await gw.close()
      await cluster.close()
    }
  })

  it('says what the key lacked, and still asks for a key first', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/v1/kv/user:1',
      headers: { authorization: `Bearer ${READER}` },
      payload: { value: 1 },
    })
    expect(res.json()).toMatchObject({
      statusCode: 403,
      code: 'OUT_OF_SCOPE',
      details: { needs: 'write', access: 'read' },
    })
    const none = await app.inject({ method: 'GET', url: '/v1/kv/cart:1' })
    expect(none.json().code).toBe('UNAUTHORIZED')
  })
})
