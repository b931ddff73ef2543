/**
 * The kv routes of a cluster with causal shipping, and what they refuse: a `causeway-clock` of the
 * wrong length or with a time far ahead of every region clock, the causal levels where no vector
 * clock travels (sets, change feeds, batches of ops) and in a FIFO cluster, and an unknown
 * shipping mode. Each with its stable code.
 */
import { CausewayError, hlcFrom } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

let dev: DevCluster
let url: string

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 1,
    port: 0,
    shipping: 'causal',
    causal: { thetaMs: 2, deltaMs: 5 },
  })
  url = dev.urls[0]!
})
afterAll(() => dev.close())

async function call(path: string, init: RequestInit & { json?: unknown } = {}) {
  const headers = new Headers(init.headers)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  const res = await fetch(`${url}${path}`, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('kv routes of a causal cluster', () => {
  it('publishes the mode and its knobs', async () => {
    const topology = await call('/v1/topology')
    expect(topology.body.shipping).toBe('causal')
    const status = await call('/v1/status')
    expect(status.body.causal).toMatchObject({
      thetaMs: 2,
      deltaMs: 5,
      stabiliser: { replica: 'r0.s0', leader: true },
      receiver: { origins: [{ origin: 1 }] },
    })
  })

  it('serves causal calls with and without a clock', async () => {
    const put = await call('/v1/kv/a?level=causal', { method: 'PUT', json: { value: 1 } })
    expect(put.status).toBe(200)
    const ts = put.body.ts as string
    const read = await call('/v1/kv/a?level=causal', { headers: { 'causeway-clock': `${ts},0` } })
    expect(read.body).toMatchObject({ found: true, value: 1, ts })
    expect((await call('/v1/kv/b?level=causal')).body).toMatchObject({ found: false })
  })

  it('refuses a clock of the wrong length, or with a bad entry', async () => {
    for (const clock of ['0', '0,0,0', ''])
      expect(
        (await call('/v1/kv/a?level=causal', { headers: { 'causeway-clock': clock } })).body,
      ).toMatchObject({ code: 'INVALID_VECTOR' })
    const bad = await call('/v1/kv/a?level=causal', {
      method: 'PUT',
      json: { value: 2 },
      headers: { 'causeway-clock': '0,0000000000zz0000' },
    })
    expect(bad).toMatchObject({ status: 400, body: { code: 'INVALID_VECTOR' } })
  })

  it('refuses a clock entry far past every region clock, at once', async () => {
    const future = hlcFrom(Date.now() + 2 * 86_400_000, 0)
    const started = performance.now()
    const read = await call('/v1/kv/a?level=causal', {
      headers: { 'causeway-clock': `0,${future}` },
    })
    expect(read).toMatchObject({ status: 400, body: { code: 'CLOCK_SKEW_EXCEEDED' } })
    const write = await call('/v1/kv/a?level=causal', {
      method: 'PUT',
      json: { value: 3 },
      headers: { 'causeway-clock': `${future},0` },
    })
    expect(write).toMatchObject({ status: 400, body: { code: 'CLOCK_SKEW_EXCEEDED' } })
    expect(performance.now() - started).toBeLessThan(1500)
  })

  it('refuses the causal levels where no vector clock travels', async () => {
    const set = await call('/v1/sets/s/add?level=causal', {
      method: 'POST',
      json: { elements: ['e'] },
    })
    expect(set).toMatchObject({ status: 400, body: { code: 'INVALID_LEVEL' } })
    expect((await call('/v1/sets/s/has?element=e&level=causal')).body.code).toBe('INVALID_LEVEL')
    const watch = await call('/v1/watch?prefix=a&level=causal')
    expect(watch).toMatchObject({ status: 400, body: { code: 'INVALID_LEVEL' } })
    const ops = await call('/v1/ops', {
      method: 'POST',
      json: {
        ops: [{ opId: 'device-12345678.1', kind: 'put', key: 'a', value: 1, level: 'causal' }],
      },
    })
    expect(ops.body).toMatchObject({ results: [], error: { index: 0, code: 'INVALID_LEVEL' } })
  })
})

describe('shipping modes', () => {
  it('refuses an unknown mode, and causal knobs without causal shipping', async () => {
    const start = (options: object) =>
      EmbeddedCluster.start({ regions: 2, partitions: 1, replicas: 1, ...options }).then(
        async (c) => {
          await c.close()
          return 'started'
        },
        (error: unknown) => (error instanceof CausewayError ? error.code : String(error)),
      )
    expect(await start({ shipping: 'gossip' })).toBe('INVALID_OPTION')
    expect(await start({ shipping: 'fifo', causal: { thetaMs: 5 } })).toBe('INVALID_OPTION')
    expect(await start({ shipping: 'causal', causal: { thetaMs: 0 } })).toBe('INVALID_OPTION')
    expect(await start({ shipping: 'causal' })).toBe('started')
  })
})
