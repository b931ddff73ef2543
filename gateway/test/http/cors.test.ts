/**
 * CORS without a browser (`app.inject()` over a fake service): what a gateway answers to pages of
 * allowed and other origins, preflights for the SDK's headers and for others, the internal routes
 * (never cross-origin), and error replies a page must still be able to read. The browser's view
 * of the same is `gateway/test/browser/cors-browser.test.ts`.
 */
import { EXPOSED_REPLY_HEADERS, HLC_ZERO, SDK_REQUEST_HEADERS } from '@causeway/core'
import type { OutgoingHttpHeaders } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import { checkCorsOrigin } from '../../src/http/cors.js'
import type { ShippingReceiver } from '../../src/replication/shipping-receiver.js'
import { FakeClusterService } from './fake-cluster-service.js'

const PAGE = 'http://localhost:5173'
const OTHER = 'http://evil.test'
const KEY = 'client-key-0123456789'
const SECRET = 'cluster-secret-0123456789'
let app: Gateway | undefined

afterEach(async () => {
  await app?.close()
  app = undefined
})

const receiver: ShippingReceiver = {
  checkpoint: async () => 0,
  receive: async (_p, envelope) => envelope.last,
}

function gateway(options: Partial<Parameters<typeof buildGateway>[0]> = {}): Gateway {
  app = buildGateway({
    service: new FakeClusterService(),
    regionUrls: ['http://127.0.0.1:7070', 'http://127.0.0.1:7071'],
    processMetrics: false,
    auth: { clusterSecret: SECRET },
    shipping: { receiver },
    ...options,
  })
  return app
}

function preflight(url: string, origin: string, method: string, headers?: string) {
  return app!.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
    },
  })
}

/** The CORS headers of a reply (any `access-control-*`). */
function corsHeaders(headers: OutgoingHttpHeaders): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => name.startsWith('access-control-')),
  )
}

const list = (value: unknown) =>
  String(value)
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .sort()

describe('CORS preflights', () => {
  it('allow every header the SDK sends, every method of the routes, for an allowed origin', async () => {
    gateway({ corsOrigins: [PAGE] })
    const res = await preflight('/v1/kv/a', PAGE, 'PUT', SDK_REQUEST_HEADERS.join(', '))
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe(PAGE)
    expect(list(res.headers['access-control-allow-headers'])).toEqual(
      [...SDK_REQUEST_HEADERS].sort(),
    )
    expect(list(res.headers['access-control-allow-methods'])).toEqual(
      ['delete', 'get', 'head', 'post', 'put'].sort(),
    )
    expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0)
    // The answer depends on the Origin: caches must keep one per origin.
    expect(String(res.headers.vary)).toMatch(/origin/i)
    // Not for cookies: the SDK authenticates with a bearer token.
    expect(res.headers['access-control-allow-credentials']).toBeUndefined()
  })

  it('answer `*` when any origin is allowed', async () => {
    gateway({ corsOrigins: ['*'] })
    const res = await preflight('/v1/sets/s/add', OTHER, 'POST', 'content-type, causeway-dt')
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe('*')
  })

  it('refuse an origin that is not allowed: 403 CROSS_ORIGIN_REFUSED and no CORS header', async () => {
    for (const origins of [[PAGE], []]) {
      gateway({ corsOrigins: origins })
      const res = await preflight('/v1/kv/a', OTHER, 'PUT', 'content-type')
      expect(res.statusCode).toBe(403)
      expect(res.json()).toMatchObject({ code: 'CROSS_ORIGIN_REFUSED' })
      expect(res.json().message).toContain(`--cors-origin ${OTHER}`)
      expect(corsHeaders(res.headers)).toEqual({})
      await app!.close()
    }
  })

  it('refuse a request header the SDK does not send, naming it', async () => {
    gateway({ corsOrigins: ['*'] })
    const res = await preflight('/v1/kv/a', PAGE, 'PUT', 'content-type, x-secret-sauce')
    expect(res.statusCode).toBe(403)
    expect(res.json()).toMatchObject({
      code: 'CROSS_ORIGIN_REFUSED',
      details: { headers: ['x-secret-sauce'] },
    })
    expect(corsHeaders(res.headers)).toEqual({})
  })

  it('refuse a method no route takes', async () => {
    gateway({ corsOrigins: ['*'] })
    const res = await preflight('/v1/kv/a', PAGE, 'PATCH')
    expect(res.statusCode).toBe(403)
    expect(res.json()).toMatchObject({ code: 'CROSS_ORIGIN_REFUSED', details: { method: 'PATCH' } })
  })

  it('never answer for the internal routes, however their path is spelled', async () => {
    gateway({ corsOrigins: ['*'] })
    for (const url of ['/v1/internal/ship/0/1', '/v1/%69nternal/ship/0/1', '/V1/INTERNAL/ship']) {
      const res = await preflight(url, PAGE, 'POST', 'authorization, content-type')
      expect([url, res.statusCode]).toEqual([url, 403])
      expect(corsHeaders(res.headers)).toEqual({})
    }
  })

  it('an OPTIONS with an Origin but no Access-Control-Request-Method is a bad request', async () => {
    gateway({ corsOrigins: ['*'] })
    const res = await app!.inject({ method: 'OPTIONS', url: '/v1/kv/a', headers: { origin: PAGE } })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'INVALID_REQUEST' })
  })

  it('an OPTIONS without an Origin is still METHOD_NOT_ALLOWED, and unknown paths NOT_FOUND', async () => {
    gateway({ corsOrigins: ['*'] })
    const options = await app!.inject({ method: 'OPTIONS', url: '/v1/kv/a' })
    expect(options.statusCode).toBe(405)
    expect(options.headers.allow).toBe('DELETE, GET, HEAD, PUT')
    const unknown = await app!.inject({ method: 'GET', url: '/nope' })
    expect(unknown.statusCode).toBe(404)
  })
})

describe('CORS on replies', () => {
  it('expose the reply headers of the protocol to an allowed origin, on success and error', async () => {
    gateway({ corsOrigins: [PAGE] })
    const ok = await app!.inject({ method: 'GET', url: '/v1/kv/a', headers: { origin: PAGE } })
    expect(ok.statusCode).toBe(200)
    expect(ok.headers['access-control-allow-origin']).toBe(PAGE)
    expect(list(ok.headers['access-control-expose-headers'])).toEqual(
      [...EXPOSED_REPLY_HEADERS].sort(),
    )
    // Errors too, so a page reads the code instead of an opaque network error.
    const bad = await app!.inject({
      method: 'PUT',
      url: '/v1/kv/a',
      headers: { origin: PAGE, 'content-type': 'application/json', 'causeway-dt': 'nope' },
      payload: { value: 1 },
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.headers['access-control-allow-origin']).toBe(PAGE)
    const missing = await app!.inject({ method: 'GET', url: '/nope', headers: { origin: PAGE } })
    expect(missing.statusCode).toBe(404)
    expect(missing.headers['access-control-allow-origin']).toBe(PAGE)
  })

  it('carry CORS headers on a 401, so a page learns it needs an API key', async () => {
    gateway({ corsOrigins: [PAGE], auth: { apiKeys: [KEY], clusterSecret: SECRET } })
    const res = await app!.inject({ method: 'GET', url: '/v1/kv/a', headers: { origin: PAGE } })
    expect(res.statusCode).toBe(401)
    expect(res.headers['access-control-allow-origin']).toBe(PAGE)
    expect(res.headers['www-authenticate']).toBeDefined()
    // And the preflight of the authorised request needs no credentials.
    const pre = await preflight('/v1/kv/a', PAGE, 'GET', 'authorization')
    expect(pre.statusCode).toBe(204)
  })

  it('give an origin that is not allowed no CORS header at all', async () => {
    for (const origins of [[PAGE], []]) {
      gateway({ corsOrigins: origins })
      const res = await app!.inject({ method: 'GET', url: '/v1/kv/a', headers: { origin: OTHER } })
      expect(corsHeaders(res.headers)).toEqual({})
      await app!.close()
    }
  })

  it('never on the internal routes, even for an allowed origin', async () => {
    gateway({ corsOrigins: ['*'] })
    const res = await app!.inject({
      method: 'POST',
      url: '/v1/internal/ship/0/1',
      headers: { origin: PAGE, authorization: `Bearer ${SECRET}` },
      payload: {
        v: 1,
        from: 1,
        epoch: 1,
        first: 1,
        last: 1,
        entries: [{ kind: 'put', idx: 1, key: 'a', value: '1', ts: HLC_ZERO, at: 0 }],
      },
    })
    expect(res.statusCode).toBe(200)
    expect(corsHeaders(res.headers)).toEqual({})
  })

  it('none at all from a gateway that allows no origin (the production default)', async () => {
    gateway()
    const res = await app!.inject({ method: 'GET', url: '/v1/kv/a', headers: { origin: PAGE } })
    expect(res.statusCode).toBe(200)
    expect(corsHeaders(res.headers)).toEqual({})
  })
})

describe('checkCorsOrigin', () => {
  it('takes origins as browsers send them, and *', () => {
    for (const origin of ['*', 'http://localhost:5173', 'https://app.example.com'])
      expect(checkCorsOrigin(origin)).toBe(origin)
  })

  it('refuses anything a browser would never send as an Origin, saying why', () => {
    expect(() => checkCorsOrigin('localhost:5173')).toThrow(/not an http or https origin/)
    expect(() => checkCorsOrigin('http://localhost:5173/')).toThrow(/http:\/\/localhost:5173/)
    expect(() => checkCorsOrigin('https://App.example.com')).toThrow(/did you mean/)
    expect(() => checkCorsOrigin('https://a.test:443')).toThrow(/did you mean https:\/\/a\.test/)
    expect(() => checkCorsOrigin('nope')).toThrow(/not an origin/)
    expect(() =>
      buildGateway({
        service: new FakeClusterService(),
        regionUrls: ['a', 'b'],
        corsOrigins: ['x'],
      }),
    ).toThrow()
  })
})
