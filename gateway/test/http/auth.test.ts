/**
 * Gateway credentials without a backend (`app.inject()` over a fake service): open client routes
 * when no API key is configured, route kinds decided by the matched route and not the raw URL,
 * the internal endpoint's receiver reached only with the cluster secret.
 */
import { HLC_ZERO, type ShipEnvelope } from '@causeway/core'
import { afterEach, describe, expect, it } from 'vitest'
import { accessOf } from '../../src/http/auth.js'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import type { ShippingReceiver } from '../../src/replication/shipping-receiver.js'
import type { LogEntry } from '../../src/storage/partition-replica.js'
import { FakeClusterService } from './fake-cluster-service.js'

const URLS = ['http://127.0.0.1:7070', 'http://127.0.0.1:7071']
const KEY = 'client-key-0123456789'
const SECRET = 'cluster-secret-0123456789'
let app: Gateway | undefined

afterEach(async () => {
  await app?.close()
  app = undefined
})

class RecordingReceiver implements ShippingReceiver {
  readonly batches: { partition: number; origin: number; entries: readonly LogEntry[] }[] = []
  async checkpoint(): Promise<number> {
    return 7
  }
  async receive(partition: number, envelope: ShipEnvelope): Promise<number> {
    this.batches.push({ partition, origin: envelope.from, entries: envelope.entries })
    return envelope.last
  }
}

function gateway(options: Partial<Parameters<typeof buildGateway>[0]> = {}): Gateway {
  app = buildGateway({
    service: new FakeClusterService(),
    regionUrls: URLS,
    processMetrics: false,
    ...options,
  })
  return app
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe('gateway auth', () => {
  it('leaves client routes open without API keys, whatever the request sends', async () => {
    const app = gateway()
    for (const headers of [{}, bearer('anything'), { authorization: 'garbage' }]) {
      const res = await app.inject({ method: 'GET', url: '/v1/kv/a', headers })
      expect(res.statusCode).toBe(200)
    }
  })

  it('decides by the matched route, never by the raw URL', () => {
    expect(accessOf('/healthz')).toBe('open')
    expect(accessOf('/v1/internal/ship/:partition/:origin')).toBe('internal')
    expect(accessOf('/v1/kv/:key')).toBe('client')
    expect(accessOf(undefined)).toBe('client')
  })

  it('asks for a key on every client route, also on a key that looks like /healthz', async () => {
    const app = gateway({ auth: { apiKeys: [KEY] } })
    for (const url of [
      '/v1/kv/%2Fhealthz',
      '/v1/kv/..%2F..%2Fhealthz',
      '/healthz/../v1/topology',
    ]) {
      const res = await app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(401)
      expect(res.json().code).toBe('UNAUTHORIZED')
    }
    // A CORS preflight has no credentials; it is not refused for that (no CORS here: 405 with
    // the methods the path allows).
    const preflight = await app.inject({ method: 'OPTIONS', url: '/v1/kv/a' })
    expect(preflight.statusCode).toBe(405)
    expect(preflight.headers.allow).toBe('DELETE, GET, HEAD, PUT')
    const ok = await app.inject({ method: 'GET', url: '/v1/kv/%2Fhealthz', headers: bearer(KEY) })
    expect(ok.statusCode).toBe(200)
    const scheme = await app.inject({
      method: 'GET',
      url: '/v1/kv/a',
      headers: { authorization: `bearer   ${KEY}` },
    })
    expect(scheme.statusCode).toBe(200)
  })

  it('asks for a key before saying which methods a path allows', async () => {
    const app = gateway({ auth: { apiKeys: [KEY] } })
    for (const url of ['/v1/kv/a', '/v1/topology', '/no/such/route']) {
      const res = await app.inject({ method: 'POST', url })
      expect({ url, status: res.statusCode, allow: res.headers.allow }).toEqual({
        url,
        status: 401,
        allow: undefined,
      })
    }
    const wrong = await app.inject({ method: 'POST', url: '/v1/kv/a', headers: bearer(KEY) })
    expect([wrong.statusCode, wrong.json().code, wrong.headers.allow]).toEqual([
      405,
      'METHOD_NOT_ALLOWED',
      'DELETE, GET, HEAD, PUT',
    ])
  })

  it('refuses every internal request when no cluster secret is configured', async () => {
    expect(() => gateway({ shipping: { receiver: new RecordingReceiver() } })).toThrow(
      /clusterSecret/,
    )
    const app = gateway({ auth: { apiKeys: [KEY] } })
    const res = await app.inject({
      method: 'GET',
      url: '/v1/internal/ship/0/1',
      headers: bearer(KEY),
    })
    expect(res.statusCode).toBe(404)
  })

  it('hands a batch to the receiver only with the cluster secret', async () => {
    const receiver = new RecordingReceiver()
    const app = gateway({ auth: { apiKeys: [KEY], clusterSecret: SECRET }, shipping: { receiver } })
    const payload = {
      v: 1,
      from: 1,
      epoch: 1,
      first: 1,
      last: 1,
      entries: [{ kind: 'put', idx: 1, key: 'k', value: '1', ts: HLC_ZERO, at: 5 }],
    }
    const url = '/v1/internal/ship/0/1'
    for (const [headers, status] of [
      [{}, 401],
      [bearer(KEY), 403],
      [bearer(SECRET + 'x'), 401],
    ] as const) {
      const res = await app.inject({ method: 'POST', url, payload, headers })
      expect(res.statusCode).toBe(status)
    }
    expect(receiver.batches).toEqual([])
    const res = await app.inject({ method: 'POST', url, payload, headers: bearer(SECRET) })
    expect(res.json()).toEqual({ checkpoint: 1 })
    expect(receiver.batches).toEqual([
      {
        partition: 0,
        origin: 1,
        entries: [{ kind: 'put', origin: 1, idx: 1, key: 'k', value: '1', ts: HLC_ZERO, at: 5 }],
      },
    ])
    const checkpoint = await app.inject({ method: 'GET', url, headers: bearer(SECRET) })
    expect(checkpoint.json()).toEqual({ checkpoint: 7 })
    // Not part of the public API description.
    const openapi = await app.inject({
      method: 'GET',
      url: '/v1/openapi.json',
      headers: bearer(KEY),
    })
    expect(openapi.body).not.toContain('/v1/internal')
  })
})
