/**
 * Every kind of bad input gets its stable code and status, and nothing reaches the cluster
 * service: a refused write writes nothing.
 */
import { CausewayError, ERROR_CODES, type ErrorCode } from '@causeway/core'
import type { InjectOptions } from 'fastify'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { buildGateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

const service = new FakeClusterService({ limits: { maxValueBytes: 100, maxTimeoutMs: 60_000 } })
const app = buildGateway({ service, regionUrls: ['http://a', 'http://b'], processMetrics: false })

afterAll(() => app.close())
beforeEach(() => service.reset())

async function expectRefused(request: InjectOptions, code: ErrorCode): Promise<void> {
  const res = await app.inject(request)
  expect({ status: res.statusCode, code: res.json().code }).toEqual({
    status: ERROR_CODES[code],
    code,
  })
  const body = res.json()
  expect(body.statusCode).toBe(ERROR_CODES[code])
  expect(typeof body.message).toBe('string')
  expect(body.message.length).toBeGreaterThan(0)
  expect(service.writes).toEqual([])
  expect(service.reads).toEqual([])
  expect(service.keys()).toEqual([])
}

const put = (
  url: string,
  payload: unknown = { value: 1 },
  headers: Record<string, string> = {},
): InjectOptions => ({
  method: 'PUT',
  url,
  payload: payload as InjectOptions['payload'],
  headers,
})
const raw = (url: string, body: string, contentType?: string): InjectOptions => ({
  method: 'PUT',
  url,
  payload: body,
  headers: contentType === undefined ? {} : { 'content-type': contentType },
})

describe('keys', () => {
  it.each(['GET', 'PUT', 'DELETE'] as const)(
    '%s with an empty key is INVALID_KEY',
    async (method) => {
      await expectRefused(
        { method, url: '/v1/kv/', ...(method === 'PUT' ? { payload: { value: 1 } } : {}) },
        'INVALID_KEY',
      )
    },
  )

  it.each([
    ['a lone high surrogate', '%ED%A0%80'],
    ['a lone low surrogate', 'x%ED%B0%80'],
    ['bytes that are not UTF-8', '%FF%FE'],
    ['a truncated escape', 'abc%E2%82'],
    ['a bad escape', '%zz'],
  ])('a key with %s is INVALID_KEY', async (_what, encoded) => {
    await expectRefused(put(`/v1/kv/${encoded}`), 'INVALID_KEY')
    await expectRefused({ method: 'GET', url: `/v1/kv/${encoded}` }, 'INVALID_KEY')
  })

  it('a key over 512 bytes of UTF-8 is KEY_TOO_LARGE, plain or percent-encoded', async () => {
    await expectRefused(put(`/v1/kv/${'a'.repeat(513)}`), 'KEY_TOO_LARGE')
    await expectRefused({ method: 'GET', url: `/v1/kv/${'a'.repeat(513)}` }, 'KEY_TOO_LARGE')
    // 171 three-byte characters: 513 bytes, 1539 characters percent-encoded.
    await expectRefused(put(`/v1/kv/${encodeURIComponent('€'.repeat(171))}`), 'KEY_TOO_LARGE')
    // 129 four-byte characters: 516 bytes but only 258 UTF-16 units.
    await expectRefused(put(`/v1/kv/${encodeURIComponent('💡'.repeat(129))}`), 'KEY_TOO_LARGE')
    await expectRefused(put(`/v1/kv/${'%41'.repeat(600)}`), 'KEY_TOO_LARGE')
  })

  it('a key of exactly 512 bytes is accepted, however it is encoded', async () => {
    const keys = ['a'.repeat(512), '€'.repeat(170) + 'ab', '💡'.repeat(128)]
    for (const key of keys) {
      const res = await app.inject(put(`/v1/kv/${encodeURIComponent(key)}`))
      expect(res.statusCode).toBe(200)
    }
    expect(service.keys()).toEqual(expect.arrayContaining(keys))
  })
})

describe('values and bodies', () => {
  it('a value whose JSON is over maxValueBytes is VALUE_TOO_LARGE; exactly the limit is fine', async () => {
    await expectRefused(put('/v1/kv/k', { value: 'x'.repeat(99) }), 'VALUE_TOO_LARGE') // 101 bytes
    await expectRefused(put('/v1/kv/k', { value: 'é'.repeat(50) }), 'VALUE_TOO_LARGE') // 102 bytes
    const ok = await app.inject(put('/v1/kv/k', { value: 'x'.repeat(98) }))
    expect(ok.statusCode).toBe(200)
    expect(service.writes[0]!.value).toHaveLength(100)
  })

  it('a body over the body limit is VALUE_TOO_LARGE before it is parsed', async () => {
    await expectRefused(
      raw('/v1/kv/k', `{"value":"${'x'.repeat(5000)}"}`, 'application/json'),
      'VALUE_TOO_LARGE',
    )
  })

  it.each([
    ['not JSON', '{value: 1}'],
    ['truncated JSON', '{"value": [1, 2'],
    ['trailing garbage', '{"value": 1} x'],
    ['an empty body', ''],
  ])('%s is INVALID_JSON', async (_what, body) => {
    await expectRefused(raw('/v1/kv/k', body, 'application/json'), 'INVALID_JSON')
  })

  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
  ])('a %s body is UNSUPPORTED_MEDIA_TYPE', async (type) => {
    await expectRefused(raw('/v1/kv/k', '{"value":1}', type), 'UNSUPPORTED_MEDIA_TYPE')
  })

  it('a body without a content type is UNSUPPORTED_MEDIA_TYPE', async () => {
    await expectRefused(raw('/v1/kv/k', '{"value":1}'), 'UNSUPPORTED_MEDIA_TYPE')
  })

  it.each([
    ['an object without value', '{}'],
    ['an array', '[1]'],
    ['a string', '"v"'],
    ['null', 'null'],
  ])('a body that is %s is INVALID_VALUE', async (_what, body) => {
    await expectRefused(raw('/v1/kv/k', body, 'application/json'), 'INVALID_VALUE')
  })

  it('a PUT without a body is INVALID_VALUE', async () => {
    await expectRefused({ method: 'PUT', url: '/v1/kv/k' }, 'INVALID_VALUE')
  })

  it('an unknown body field is INVALID_REQUEST', async () => {
    await expectRefused(put('/v1/kv/k', { value: 1, ttl: 5 }), 'INVALID_REQUEST')
    await expectRefused(
      raw('/v1/kv/k', '{"value":1,"__proto__":{"x":1}}', 'application/json'),
      'INVALID_REQUEST',
    )
  })
})

describe('headers', () => {
  it.each([
    'abc',
    '0:-1',
    '0:1.5',
    '2:1',
    '0:1,0:2',
    '0@0:1',
    '1@',
    '',
    ' , ',
    '0:1;1:2',
    '0:99999999999999999',
  ])('causeway-after %j is INVALID_VECTOR', async (header) => {
    await expectRefused(
      { method: 'GET', url: '/v1/kv/k', headers: { 'causeway-after': header } },
      'INVALID_VECTOR',
    )
  })

  it('a causeway-after over 2 KiB is INVALID_VECTOR', async () => {
    const header = Array.from({ length: 400 }, (_, i) => `0:${i}`).join(',')
    await expectRefused(
      { method: 'GET', url: '/v1/kv/k', headers: { 'causeway-after': header } },
      'INVALID_VECTOR',
    )
  })

  it.each([
    'XYZ',
    '00000000000000A1',
    '000000000000001',
    '00000000000000001',
    '',
    '-000000000000001',
  ])('causeway-dt %j is INVALID_HLC on PUT and DELETE', async (header) => {
    await expectRefused(put('/v1/kv/k', { value: 1 }, { 'causeway-dt': header }), 'INVALID_HLC')
    await expectRefused(
      { method: 'DELETE', url: '/v1/kv/k', headers: { 'causeway-dt': header } },
      'INVALID_HLC',
    )
  })
})

describe('query options', () => {
  it.each(['strong', '', 'SESSION', 'monotonic-writes'])(
    'GET level=%j is INVALID_LEVEL',
    async (level) => {
      await expectRefused({ method: 'GET', url: `/v1/kv/k?level=${level}` }, 'INVALID_LEVEL')
    },
  )

  it.each(['strong', 'read-your-writes', 'eventual&level=session'])(
    'PUT level=%j is INVALID_LEVEL',
    async (level) => {
      await expectRefused(put(`/v1/kv/k?level=${level}`), 'INVALID_LEVEL')
      await expectRefused({ method: 'DELETE', url: `/v1/kv/k?level=${level}` }, 'INVALID_LEVEL')
    },
  )

  it.each([
    ['GET', 'replica=primary'],
    ['GET', 'timeoutMs=abc'],
    ['GET', 'timeoutMs=-1'],
    ['GET', 'timeoutMs=1.5'],
    ['GET', 'timeoutMs=60001'],
    ['GET', 'consistency=strong'],
    ['PUT', 'durability=all'],
    ['PUT', 'replica=leader'],
    ['DELETE', 'durability='],
    ['DELETE', 'timeoutMs=5'],
  ] as const)('%s ?%s is INVALID_OPTION', async (method, query) => {
    await expectRefused(
      { method, url: `/v1/kv/k?${query}`, ...(method === 'PUT' ? { payload: { value: 1 } } : {}) },
      'INVALID_OPTION',
    )
  })

  it('names the accepted values of a level or option', async () => {
    const get = await app.inject({ method: 'GET', url: '/v1/kv/k?level=strong' })
    expect(get.json().details).toEqual({
      option: 'level',
      allowed: ['eventual', 'monotonic-reads', 'read-your-writes', 'session', 'causal'],
      got: 'strong',
    })
    const del = await app.inject({ method: 'DELETE', url: '/v1/kv/k?durability=all' })
    expect(del.json().message).toBe('durability must be one of leader, majority (got "all")')
  })

  it('timeoutMs at the limit is accepted', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/kv/k?timeoutMs=60000' })
    expect(res.statusCode).toBe(200)
    expect(service.reads[0]!.timeoutMs).toBe(60_000)
  })
})

describe('routes', () => {
  it.each([
    ['GET', '/v1/nope'],
    ['POST', '/v1/nope'],
    ['GET', '/v1/kv'],
    ['POST', '/v1/kv'],
    ['GET', '/v1/kv/a/b'],
    ['PUT', '/v1/kv/a/b'],
    ['GET', '/v2/kv/k'],
    ['GET', '/v1/status/x'],
  ] as const)('%s %s is NOT_FOUND, without Allow', async (method, url) => {
    await expectRefused({ method, url }, 'NOT_FOUND')
    expect((await app.inject({ method, url })).headers.allow).toBeUndefined()
  })

  it.each([
    ['POST', '/v1/kv/k', 'DELETE, GET, HEAD, PUT'],
    ['PATCH', '/v1/kv/k', 'DELETE, GET, HEAD, PUT'],
    ['OPTIONS', '/v1/kv/k', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/v1/kv/k?level=eventual', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/v1/kv/a%2Fb', 'DELETE, GET, HEAD, PUT'],
    // The method is wrong whatever the key: no key check runs first.
    ['POST', '/v1/kv/', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/v1/status', 'GET, HEAD'],
    ['DELETE', '/v1/topology', 'GET, HEAD'],
    ['PUT', '/healthz', 'GET, HEAD'],
    ['POST', '/metrics', 'GET, HEAD'],
    ['DELETE', '/', 'GET, HEAD'],
    ['POST', '/v1/openapi.json', 'GET, HEAD'],
  ] as const)('%s %s is METHOD_NOT_ALLOWED, Allow: %s', async (method, url, allow) => {
    await expectRefused({ method, url, payload: { value: 1 } }, 'METHOD_NOT_ALLOWED')
    const res = await app.inject({ method, url })
    expect(res.headers.allow).toBe(allow)
    expect(res.json()).toMatchObject({
      statusCode: 405,
      code: 'METHOD_NOT_ALLOWED',
      details: { method, path: url.split('?')[0], allowed: allow.split(', ') },
    })
  })

  it('answers HEAD on every GET route, as Fastify does', async () => {
    for (const url of ['/v1/kv/k', '/v1/topology', '/v1/status', '/healthz']) {
      expect({ url, status: (await app.inject({ method: 'HEAD', url })).statusCode }).toEqual({
        url,
        status: 200,
      })
    }
  })
})

describe('errors from the service', () => {
  it.each([
    ['CLOCK_SKEW_EXCEEDED', 400],
    ['EPOCH_MISMATCH', 409],
    ['VECTOR_UNREACHABLE', 400],
    ['BACKEND_UNAVAILABLE', 503],
  ] as const)(
    'a %s thrown by the service is answered with status %i and its body',
    async (code, status) => {
      service.failWith = new CausewayError(code, `service says ${code}`, { why: 'test' })
      const res = await app.inject(put('/v1/kv/k'))
      expect(res.statusCode).toBe(status)
      expect(res.json()).toEqual({
        statusCode: status,
        code,
        message: `service says ${code}`,
        details: { why: 'test' },
      })
    },
  )

  it.each([
    ['an Error', new Error('disk on fire')],
    ['a TypeError', new TypeError('undefined is not a function')],
    ['a thrown string', 'boom'],
    ['undefined-like null', null],
  ])(
    '%s becomes INTERNAL 500 without leaking it, and the gateway keeps serving',
    async (_what, error) => {
      service.failWith = error ?? new Error('null')
      const res = await app.inject({ method: 'GET', url: '/v1/kv/k' })
      expect(res.statusCode).toBe(500)
      expect(res.json()).toMatchObject({ statusCode: 500, code: 'INTERNAL' })
      expect(res.body).not.toContain('disk on fire')
      const next = await app.inject({ method: 'GET', url: '/v1/kv/k' })
      expect(next.statusCode).toBe(200)
    },
  )
})
