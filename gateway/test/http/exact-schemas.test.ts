/**
 * Exact schemas: no type is coerced (a string is not a one-element array, a number not a
 * string), query-string numbers and booleans parse only in their canonical spelling, the session
 * headers are checked against their grammar with their own codes, and a method no route answers
 * is 405 even when it carries a body.
 */
import type { InjectOptions } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'

let cluster: EmbeddedCluster
let app: Gateway

beforeAll(async () => {
  cluster = await EmbeddedCluster.start({ regions: 2, partitions: 2, replicas: 1 })
  app = buildGateway({
    service: cluster.service(0),
    regionUrls: ['http://a', 'http://b'],
    processMetrics: false,
  })
})
afterAll(async () => {
  await app.close()
  await cluster.close()
})

async function refused(request: InjectOptions) {
  const res = await app.inject(request)
  return `${res.statusCode} ${res.json().code}`
}

async function sizeOf(name: string): Promise<number> {
  const res = await app.inject({ method: 'GET', url: `/v1/sets/${name}/size` })
  return res.json().size
}

describe('exact schemas', () => {
  it('refuses a string where the elements array is due, and stores nothing', async () => {
    const add = (payload: unknown) =>
      refused({ method: 'POST', url: '/v1/sets/x/add', payload: payload as object })
    expect(await add({ elements: 'hello' })).toBe('400 INVALID_ELEMENT')
    expect(await add({ elements: [1] })).toBe('400 INVALID_ELEMENT')
    expect(await add({ elements: [null] })).toBe('400 INVALID_ELEMENT')
    expect(await add({ elements: [true] })).toBe('400 INVALID_ELEMENT')
    expect(await add({ elements: [{ element: 5 }] })).toBe('400 INVALID_ELEMENT')
    expect(await add({ elements: [{ ctx: 'abc' }] })).toBe('400 INVALID_ELEMENT')
    expect(await sizeOf('x')).toBe(0)
    const ok = await app.inject({
      method: 'POST',
      url: '/v1/sets/x/add',
      payload: { elements: ['hello'] },
    })
    expect(ok.statusCode).toBe(200)
    expect(await sizeOf('x')).toBe(1)
  })

  it('parses query numbers and booleans only in their canonical spelling', async () => {
    expect((await app.inject({ method: 'GET', url: '/v1/kv/a?timeoutMs=100' })).statusCode).toBe(
      200,
    )
    for (const bad of ['1e2', '0x10', ' 1', '1.5', '-1', '01', '', '99999999999999999'])
      expect(
        await refused({ method: 'GET', url: `/v1/kv/a?timeoutMs=${encodeURIComponent(bad)}` }),
        bad,
      ).toBe('400 INVALID_OPTION')
    expect(await refused({ method: 'GET', url: '/v1/kv/a?timeoutMs=1&timeoutMs=2' })).toBe(
      '400 INVALID_OPTION',
    )
    const scan = (query: string) => app.inject({ method: 'GET', url: `/v1/sets/x/scan?${query}` })
    expect((await scan('ctx=true&limit=5')).statusCode).toBe(200)
    expect((await scan('ctx=1')).json().code).toBe('INVALID_OPTION')
    expect((await scan('merge=yes')).json().code).toBe('INVALID_OPTION')
  })

  it('checks the session headers against their grammar, each with its code', async () => {
    const get = (headers: Record<string, string>) =>
      refused({ method: 'GET', url: '/v1/kv/a', headers })
    expect(await get({ 'causeway-after': '1@0:1;' })).toBe('400 INVALID_VECTOR')
    expect(await get({ 'causeway-after': '0@0:1' })).toBe('400 INVALID_VECTOR')
    expect(await get({ 'causeway-after': '1@0:01' })).toBe('400 INVALID_VECTOR')
    // The grammar holds; the cluster has no region 7.
    expect(await get({ 'causeway-after': '1@7:1' })).toBe('400 INVALID_VECTOR')
    const put = (headers: Record<string, string>) =>
      refused({ method: 'PUT', url: '/v1/kv/a', headers, payload: { value: 1 } })
    expect(await put({ 'causeway-dt': '00018F2A3B4C0001' })).toBe('400 INVALID_HLC')
    expect(await put({ 'causeway-context': 'not base64!' })).toBe('400 INVALID_CONTEXT')
    expect(await put({ 'causeway-context': 'x'.repeat(6000) })).toBe('400 INVALID_CONTEXT')
  })

  it('answers 405 with Allow to a method no route takes, body or not', async () => {
    for (const method of ['QUERY', 'PATCH', 'TRACE', 'POST'] as const) {
      const res = await app.inject({
        method: method as 'POST',
        url: '/healthz',
        ...(method === 'QUERY' || method === 'PATCH' ? { payload: 'x' } : {}),
      })
      expect({ method, status: res.statusCode, code: res.json().code }).toEqual({
        method,
        status: 405,
        code: 'METHOD_NOT_ALLOWED',
      })
      expect(res.headers.allow).toBe('GET, HEAD')
    }
    const noType = await app.inject({ method: 'QUERY' as 'POST', url: '/v1/topology' })
    expect(noType.statusCode).toBe(405)
  })
})
