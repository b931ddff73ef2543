/**
 * `/v1/sets/:name/...` over real HTTP on the embedded cluster: reply shapes, the streamed scan,
 * session vectors (waiting, SESSION_NOT_AVAILABLE, VECTOR_UNREACHABLE), and bad
 * input refused with stable codes before anything is written.
 */
import { ERROR_CODES, HLC_ZERO, type ErrorCode } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SetReadMeta, SetScanResult } from '../../src/cluster/region-sets.js'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { scanBody } from '../../src/http/routes/sets.js'

let dev: DevCluster
let r0: string
let r1: string

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 2,
    port: 0,
    wanDelayMs: 300,
    replicaLagMs: 20,
  })
  ;[r0, r1] = dev.urls as [string, string]
})
afterAll(() => dev.close())

async function call(url: string, init: RequestInit & { json?: unknown } = {}) {
  const headers = new Headers(init.headers)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  const res = await fetch(url, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  const text = await res.text()
  return {
    status: res.status,
    headers: res.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  }
}

const post = (url: string, json: unknown, headers: Record<string, string> = {}) =>
  call(url, { method: 'POST', json, headers })

let n = 0
const fresh = () => `set-${++n}-${Date.now()}`

describe('/v1/sets', () => {
  it('adds, answers has/size/scan with the stamp a session records', async () => {
    const name = fresh()
    const w = await post(`${r0}/v1/sets/${name}/add`, { elements: ['b', 'a', { element: 'c' }] })
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ dc: 0, idx: expect.any(Number), epoch: 1, region: 0 })
    const idx = w.body.idx as number
    const has = await call(`${r0}/v1/sets/${name}/has?element=a&replica=leader`)
    expect(has.body).toMatchObject({
      found: true,
      ctx: expect.stringMatching(/^0-2\./),
      seen: [idx, 0],
      ts: w.body.ts,
      epoch: 1,
      region: 0,
      replica: 0,
    })
    const size = await call(`${r0}/v1/sets/${name}/size?replica=leader`)
    expect(size.body).toMatchObject({ size: 3, seen: [idx, 0], ts: w.body.ts })
    const scan = await call(`${r0}/v1/sets/${name}/scan?replica=leader`)
    expect(scan.headers.get('content-type')).toMatch(/^application\/json/)
    expect(scan.body).toMatchObject({ elements: ['a', 'b', 'c'], seen: [idx, 0] })
    expect(scan.body.next).toBeUndefined()
    const empty = await call(`${r0}/v1/sets/${fresh()}/size`)
    expect(empty.body).toMatchObject({ size: 0, seen: [0, 0] })
    expect(empty.body.ts).toBeUndefined()
  })

  it('streams a large scan in chunks, with contexts and a page cursor on request', async () => {
    const name = fresh()
    const elements = Array.from({ length: 3000 }, (_, i) => `element-${String(i).padStart(4, '0')}`)
    for (let i = 0; i < elements.length; i += 1000)
      await post(`${r0}/v1/sets/${name}/add`, { elements: elements.slice(i, i + 1000) })
    const res = await fetch(`${r0}/v1/sets/${name}/scan?replica=leader`)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    const body = (await res.json()) as { elements: string[] }
    expect(body.elements).toEqual(elements)
    const page = await call(
      `${r0}/v1/sets/${name}/scan?replica=leader&limit=2&ctx=true&after=element-0100`,
    )
    expect(page.body).toMatchObject({
      elements: [
        { element: 'element-0101', ctx: expect.any(String) },
        { element: 'element-0102', ctx: expect.any(String) },
      ],
      next: 'element-0102',
    })
  })

  it('waits for the session vector in another region, or says SESSION_NOT_AVAILABLE', async () => {
    const name = fresh()
    const w = await post(`${r0}/v1/sets/${name}/add`, { elements: ['x'] })
    const after = `1@0:${w.body.idx as number}`
    const late = await call(`${r1}/v1/sets/${name}/has?element=x&timeoutMs=20`, {
      headers: { 'causeway-after': after },
    })
    expect(late.status).toBe(503)
    expect(late.body).toMatchObject({
      code: 'SESSION_NOT_AVAILABLE',
      details: { need: { 0: w.body.idx } },
    })
    const waited = await call(`${r1}/v1/sets/${name}/has?element=x`, {
      headers: { 'causeway-after': after },
    })
    expect(waited.body).toMatchObject({ found: true, seen: [w.body.idx, 0], region: 1 })
    expect(waited.body.waitedMs as number).toBeGreaterThanOrEqual(0)
    const unreachable = await call(`${r1}/v1/sets/${name}/size`, {
      headers: { 'causeway-after': '0:999999' },
    })
    expect(unreachable.body.code).toBe('VECTOR_UNREACHABLE')
    const epoch = await call(`${r1}/v1/sets/${name}/size`, {
      headers: { 'causeway-after': '1:1@7' },
    })
    expect(epoch.body.code).toBe('VECTOR_UNREACHABLE')
    const vector = await call(`${r1}/v1/sets/${name}/scan`, { headers: { 'causeway-after': 'x' } })
    expect(vector.body.code).toBe('INVALID_VECTOR')
  })

  it('removes by context or by what the leader holds once it covers the session', async () => {
    const name = fresh()
    const w = await post(`${r0}/v1/sets/${name}/add`, { elements: ['x', 'y', 'z'] })
    const has = await call(`${r0}/v1/sets/${name}/has?element=x&replica=leader`)
    await post(`${r0}/v1/sets/${name}/remove`, { elements: [{ element: 'x', ctx: has.body.ctx }] })
    // In r1 at once: the leader waits for the add before it observes y.
    const rm = await post(
      `${r1}/v1/sets/${name}/remove`,
      { elements: ['y'] },
      {
        'causeway-after': `1@0:${w.body.idx as number}`,
      },
    )
    expect(rm.status).toBe(200)
    const need = `1@0:${(w.body.idx as number) + 1},1:${rm.body.idx as number}`
    for (const url of [r0, r1]) {
      const scan = await call(`${url}/v1/sets/${name}/scan`, {
        headers: { 'causeway-after': need },
      })
      expect(scan.body.elements).toEqual(['z'])
    }
  })

  it('refuses bad input with stable codes and writes nothing', async () => {
    const name = fresh()
    await post(`${r0}/v1/sets/${name}/add`, { elements: ['keep'] })
    const before = await call(`${r0}/v1/sets/${name}/size?replica=leader`)
    const cases: [string, RequestInit & { json?: unknown }, ErrorCode][] = [
      [`/v1/sets/${name}/add`, { method: 'POST', json: { elements: [] } }, 'INVALID_ELEMENT'],
      [`/v1/sets/${name}/add`, { method: 'POST', json: { elements: [7] } }, 'INVALID_ELEMENT'],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: ['x'.repeat(1025)] } },
        'INVALID_ELEMENT',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: ['ok', '\ud800'] } },
        'INVALID_ELEMENT',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: Array.from({ length: 1001 }, (_, i) => `e${i}`) } },
        'INVALID_ELEMENT',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: [{ element: 'a', x: 1 }] } },
        'INVALID_ELEMENT',
      ],
      [`/v1/sets/${name}/add`, { method: 'POST', json: { element: 'a' } }, 'INVALID_ELEMENT'],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: ['a'], x: 1 } },
        'INVALID_REQUEST',
      ],
      [`/v1/sets/${name}/add`, { method: 'POST', json: {} }, 'INVALID_ELEMENT'],
      [
        `/v1/sets/${name}/remove`,
        { method: 'POST', json: { elements: [{ element: 'keep', ctx: 5 }] } },
        'INVALID_ELEMENT',
      ],
      [
        `/v1/sets/${name}/remove`,
        { method: 'POST', json: { elements: [{ element: 'keep', ctx: 'nope' }] } },
        'INVALID_CONTEXT',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } },
        'INVALID_JSON',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } },
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        `/v1/sets/${name}/add?level=strong`,
        { method: 'POST', json: { elements: ['a'] } },
        'INVALID_LEVEL',
      ],
      [
        `/v1/sets/${name}/add?nope=1`,
        { method: 'POST', json: { elements: ['a'] } },
        'INVALID_OPTION',
      ],
      [
        `/v1/sets/${name}/add`,
        { method: 'POST', json: { elements: ['a'] }, headers: { 'causeway-dt': 'zz' } },
        'INVALID_HLC',
      ],
      [
        `/v1/sets/${'k'.repeat(513)}/add`,
        { method: 'POST', json: { elements: ['a'] } },
        'KEY_TOO_LARGE',
      ],
      [`/v1/sets/%FF/size`, {}, 'INVALID_KEY'],
      // An empty name matches its route and is refused by the shared key check, as in /v1/kv/.
      [`/v1/sets//add`, { method: 'POST', json: { elements: ['a'] } }, 'INVALID_KEY'],
      [`/v1/sets//remove`, { method: 'POST', json: { elements: ['a'] } }, 'INVALID_KEY'],
      [`/v1/sets//has?element=a`, {}, 'INVALID_KEY'],
      [`/v1/sets//size`, {}, 'INVALID_KEY'],
      [`/v1/sets//scan`, {}, 'INVALID_KEY'],
      [`/v1/sets/${name}/has`, {}, 'INVALID_ELEMENT'],
      [`/v1/sets/${name}/has?element=%FF`, {}, 'INVALID_ELEMENT'],
      [`/v1/sets/${name}/has?element=a&element=b`, {}, 'INVALID_ELEMENT'],
      [`/v1/sets/${name}/scan?limit=-1`, {}, 'INVALID_OPTION'],
      [`/v1/sets/${name}/scan?ctx=maybe`, {}, 'INVALID_OPTION'],
      [`/v1/sets/${name}/scan?from=a&after=b`, {}, 'INVALID_OPTION'],
      [`/v1/sets/${name}/scan?from=${'x'.repeat(1025)}`, {}, 'INVALID_ELEMENT'],
      [`/v1/sets/${name}/size?replica=all`, {}, 'INVALID_OPTION'],
    ]
    for (const [path, init, code] of cases) {
      const res = await call(r0 + path, init)
      expect({ path, code: res.body.code, status: res.status }).toEqual({
        path,
        code,
        status: ERROR_CODES[code],
      })
    }
    expect(await call(`${r0}/v1/sets/${name}/size?replica=leader`)).toMatchObject({
      body: { size: 1, seen: before.body.seen },
    })
  })

  it('answers a wrong method on a set path with 405 and the methods it allows', async () => {
    const name = fresh()
    const cases = [
      ['GET', `/v1/sets/${name}/add`, 'POST'],
      ['PUT', `/v1/sets/${name}/add`, 'POST'],
      ['DELETE', `/v1/sets/${name}/remove`, 'POST'],
      ['DELETE', `/v1/sets/${name}/has?element=a`, 'GET, HEAD'],
      ['POST', `/v1/sets/${name}/size`, 'GET, HEAD'],
      ['PUT', `/v1/sets/${name}/scan`, 'GET, HEAD'],
      ['PATCH', '/v1/sets//add', 'POST'],
    ] as const
    for (const [method, path, allow] of cases) {
      const res = await call(r0 + path, { method })
      expect({ method, path, status: res.status, allow: res.headers.get('allow') }).toEqual({
        method,
        path,
        status: 405,
        allow,
      })
      expect(res.body).toMatchObject({
        statusCode: 405,
        code: 'METHOD_NOT_ALLOWED',
        details: { method, allowed: allow.split(', ') },
      })
    }
    // Under /v1/sets/ a path no route has is still NOT_FOUND, whatever the method.
    for (const [method, path] of [
      ['GET', `/v1/sets/${name}/nope`],
      ['POST', `/v1/sets/${name}`],
      ['GET', `/v1/sets/${name}/has/x`],
    ] as const) {
      const res = await call(r0 + path, { method })
      expect({ path, status: res.status, code: res.body.code }).toEqual({
        path,
        status: 404,
        code: 'NOT_FOUND',
      })
      expect(res.headers.get('allow')).toBeNull()
    }
    expect((await call(`${r0}/v1/sets/${name}/size?replica=leader`)).body.size).toBe(0)
  })

  it('decodes the element of has as it was added: spaces, plus signs, percent signs, UTF-8', async () => {
    const name = fresh()
    const elements = ['a b', 'a+b', '100%', '%41', 'é✓😀', '&=?#']
    expect((await post(`${r0}/v1/sets/${name}/add`, { elements })).status).toBe(200)
    const has = async (query: string) =>
      (await call(`${r0}/v1/sets/${name}/has?element=${query}&replica=leader`)).body.found
    for (const e of elements)
      expect({ e, found: await has(encodeURIComponent(e)) }).toEqual({ e, found: true })
    // A form-encoded space; the raw text of an escape is not the element it escapes.
    expect(await has('a+b')).toBe(true) // "a b"
    expect(await has('a%2Bb')).toBe(true) // "a+b"
    expect(await has('%2541')).toBe(true) // "%41"
    expect(await has('%41')).toBe(false) // "A"
    expect(await has('100%25')).toBe(true)
  })

  it('ends a scan that fails midway with an error instead of the meta', async () => {
    const entries = async function* (): AsyncGenerator<{ element: string }> {
      yield { element: 'a' }
      throw Object.assign(new Error('boom'))
    }
    const result: SetScanResult = {
      elements: entries(),
      finish: async (): Promise<SetReadMeta> => ({
        stamp: { seen: [1, 0], ts: HLC_ZERO },
        epoch: 1,
        replica: 0,
        waitedMs: 0,
      }),
    }
    let text = ''
    for await (const chunk of scanBody(result, 0)) text += chunk
    expect(JSON.parse(text)).toEqual({
      elements: ['a'],
      error: { statusCode: 500, code: 'INTERNAL', message: 'the scan failed midway' },
    })
  })
})
