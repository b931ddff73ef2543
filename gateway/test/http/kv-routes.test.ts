import { HEADER_WAITED, HLC_ZERO, hlcCompare } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

const URLS = ['http://127.0.0.1:7070', 'http://127.0.0.1:7071']
let app: Gateway | undefined

function setup(service = new FakeClusterService()): { app: Gateway; service: FakeClusterService } {
  app = buildGateway({ service, regionUrls: URLS, processMetrics: false })
  return { app, service }
}

afterEach(async () => {
  await app?.close()
  app = undefined
})

describe('kv routes', () => {
  it('writes a value and reads it back with its version', async () => {
    const { app, service } = setup()
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/kv/user%3A1',
      payload: { value: { name: 'Ada', n: [1, 2] } },
    })
    expect(put.statusCode).toBe(200)
    const w = put.json()
    expect(w).toEqual({
      ts: expect.stringMatching(/^[0-9a-f]{16}$/),
      dc: 0,
      idx: 1,
      epoch: 1,
      region: 0,
    })
    expect(service.writes[0]).toMatchObject({
      key: 'user:1',
      value: '{"name":"Ada","n":[1,2]}',
      dt: HLC_ZERO,
      durability: 'leader',
      level: 'session',
    })

    const get = await app.inject({ method: 'GET', url: '/v1/kv/user%3A1' })
    expect(get.statusCode).toBe(200)
    expect(get.headers['content-type']).toMatch(/^application\/json/)
    expect(get.json()).toEqual({
      found: true,
      value: { name: 'Ada', n: [1, 2] },
      ts: w.ts,
      dc: 0,
      idx: 1,
      epoch: 1,
      region: 0,
      replica: 0,
      waitedMs: 0,
    })
    expect(service.reads[0]).toMatchObject({
      key: 'user:1',
      replica: 'any',
      timeoutMs: 5000,
      level: 'session',
    })
  })

  it('stores every JSON value faithfully, including null, strings and a __proto__ key', async () => {
    const { app } = setup()
    const values = [null, 0, -1.5e-7, 'text "quoted" é 🎉', [], {}, { __proto__x: 1 }, true]
    for (const [i, value] of values.entries()) {
      const put = await app.inject({ method: 'PUT', url: `/v1/kv/k${i}`, payload: { value } })
      expect(put.statusCode).toBe(200)
      const get = await app.inject({ method: 'GET', url: `/v1/kv/k${i}` })
      expect(get.json().value).toEqual(value)
    }
    const proto = '{"value":{"__proto__":{"polluted":true}}}'
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/kv/proto',
      payload: proto,
      headers: { 'content-type': 'application/json' },
    })
    expect(put.statusCode).toBe(200)
    const get = await app.inject({ method: 'GET', url: '/v1/kv/proto' })
    expect(get.body).toContain('"value":{"__proto__":{"polluted":true}}')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })

  it('reads a missing key as not found, without a version', async () => {
    const { app } = setup()
    const get = await app.inject({ method: 'GET', url: '/v1/kv/nothing' })
    expect(get.statusCode).toBe(200)
    expect(get.json()).toEqual({ found: false, epoch: 1, region: 0, replica: 0, waitedMs: 0 })
  })

  it('deletes with a tombstone that still carries its version', async () => {
    const { app, service } = setup()
    await app.inject({ method: 'PUT', url: '/v1/kv/k', payload: { value: 1 } })
    const del = await app.inject({ method: 'DELETE', url: '/v1/kv/k' })
    expect(del.statusCode).toBe(200)
    expect(del.json()).toMatchObject({ dc: 0, idx: 2, region: 0 })
    expect(service.writes[1]).toMatchObject({ key: 'k', value: undefined })
    const get = await app.inject({ method: 'GET', url: '/v1/kv/k' })
    expect(get.json()).toEqual({
      found: false,
      ts: del.json().ts,
      dc: 0,
      idx: 2,
      epoch: 1,
      region: 0,
      replica: 0,
      waitedMs: 0,
    })
  })

  it('passes level, replica, timeoutMs, durability and the session headers to the service', async () => {
    const { app, service } = setup()
    const dt = '00ffffffffff0003'
    const put = await app.inject({
      method: 'PUT',
      url: '/v1/kv/k?level=monotonic-writes&durability=majority',
      headers: { 'causeway-dt': dt },
      payload: { value: 'v' },
    })
    expect(put.statusCode).toBe(200)
    expect(service.writes[0]).toMatchObject({
      dt,
      durability: 'majority',
      level: 'monotonic-writes',
    })
    expect(hlcCompare(put.json().ts, dt)).toBeGreaterThan(0)

    const get = await app.inject({
      method: 'GET',
      url: '/v1/kv/k?level=read-your-writes&replica=follower&timeoutMs=250',
      headers: { 'causeway-after': '1@0:1' },
    })
    expect(get.statusCode).toBe(200)
    expect(service.reads[0]).toMatchObject({
      level: 'read-your-writes',
      replica: 'follower',
      timeoutMs: 250,
      need: { epoch: 1, need: [1, 0] },
    })
  })

  it('sends no need for an eventual read and no dependency for an eventual write', async () => {
    const { app, service } = setup()
    await app.inject({
      method: 'PUT',
      url: '/v1/kv/k?level=eventual',
      headers: { 'causeway-dt': '00ffffffffff0003' },
      payload: { value: 1 },
    })
    expect(service.writes[0]!.dt).toBe(HLC_ZERO)
    const get = await app.inject({
      method: 'GET',
      url: '/v1/kv/k?level=eventual',
      headers: { 'causeway-after': '0:99' },
    })
    expect(get.statusCode).toBe(200)
    expect(service.reads[0]!.need).toBeUndefined()
  })

  it('routes a key to its partition with the shared partitioner ({tag} hashing)', async () => {
    const { app, service } = setup()
    await app.inject({ method: 'PUT', url: '/v1/kv/%7Buser1%7D.a', payload: { value: 1 } })
    await app.inject({ method: 'PUT', url: '/v1/kv/%7Buser1%7D.b', payload: { value: 2 } })
    expect(service.writes[0]!.partition).toBe(service.writes[1]!.partition)
  })

  it('accepts keys with slashes, spaces and non-ASCII when percent-encoded', async () => {
    const { app, service } = setup()
    const key = 'a/b c?d#é💡'
    const put = await app.inject({
      method: 'PUT',
      url: `/v1/kv/${encodeURIComponent(key)}`,
      payload: { value: 1 },
    })
    expect(put.statusCode).toBe(200)
    expect(service.keys()).toEqual([key])
  })

  it('answers SESSION_NOT_AVAILABLE from the service with its details', async () => {
    const { app } = setup()
    const get = await app.inject({
      method: 'GET',
      url: '/v1/kv/k',
      headers: { 'causeway-after': '1:5' },
    })
    expect(get.statusCode).toBe(503)
    expect(get.json()).toEqual({
      statusCode: 503,
      code: 'SESSION_NOT_AVAILABLE',
      message: 'replica did not catch up',
      details: { need: { 0: 0, 1: 5 }, sv: { 0: 0, 1: 0 } },
    })
  })
})

describe('write wait header (the "without HLC" benchmark ablation)', () => {
  class WaitingService extends FakeClusterService {
    override async write(request: Parameters<FakeClusterService['write']>[0]) {
      return { ...(await super.write(request)), waitedMs: 12.3456 }
    }
  }

  it('reports how long a write waited for its dependencies on PUT and DELETE', async () => {
    const { app } = setup(new WaitingService())
    const put = await app.inject({ method: 'PUT', url: '/v1/kv/k', payload: { value: 1 } })
    expect(put.statusCode).toBe(200)
    expect(put.headers[HEADER_WAITED]).toBe('12.346')
    expect(put.json()).not.toHaveProperty('waitedMs')
    const del = await app.inject({ method: 'DELETE', url: '/v1/kv/k' })
    expect(del.headers[HEADER_WAITED]).toBe('12.346')
  })

  it('sends no such header when writes do not wait (the default)', async () => {
    const { app } = setup()
    const put = await app.inject({ method: 'PUT', url: '/v1/kv/k', payload: { value: 1 } })
    expect(put.headers[HEADER_WAITED]).toBeUndefined()
  })
})
