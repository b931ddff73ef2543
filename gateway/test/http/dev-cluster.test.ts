/**
 * The gateway over the real embedded cluster, in process: the service's errors arrive with
 * their codes over HTTP, and replication shows up in status and metrics.
 */
import { hlcCompare, hlcFrom } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { sample } from './exposition.js'
import { expectEmptyKeysRefused } from '../support/empty-key-requests.js'

let dev: DevCluster
let r0: string
let r1: string

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 2,
    port: 0,
    wanDelayMs: 400,
    replicaLagMs: 50,
    limits: { maxValueBytes: 1000 },
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
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('gateway over the embedded cluster', () => {
  it('serves topology with both regions and the configured limits', async () => {
    const { body } = await call(`${r1}/v1/topology`)
    expect(body).toMatchObject({
      region: 1,
      regions: [
        { id: 0, name: 'r0', url: r0 },
        { id: 1, name: 'r1', url: r1 },
      ],
      partitions: 2,
      replicas: 2,
      epochs: [1, 1],
      shipping: 'fifo',
    })
    expect((body.limits as { maxValueBytes: number }).maxValueBytes).toBe(1000)
  })

  it('answers SESSION_NOT_AVAILABLE with need and sv when the deadline passes first', async () => {
    const w = await call(`${r0}/v1/kv/slow`, { method: 'PUT', json: { value: 1 } })
    const { epoch, idx } = w.body as { epoch: number; idx: number }
    const res = await call(`${r1}/v1/kv/slow?timeoutMs=50`, {
      headers: { 'causeway-after': `${epoch}@0:${idx}` },
    })
    expect(res.status).toBe(503)
    expect(res.body).toMatchObject({ code: 'SESSION_NOT_AVAILABLE', details: { need: { 0: idx } } })
  })

  it('fails fast with VECTOR_UNREACHABLE for an index the origin never wrote', async () => {
    const started = performance.now()
    const res = await call(`${r1}/v1/kv/k?timeoutMs=5000`, {
      headers: { 'causeway-after': '0:999999' },
    })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VECTOR_UNREACHABLE')
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it('refuses a position in an epoch the region never had (VECTOR_UNREACHABLE), and ignores the older partition epoch', async () => {
    const res = await call(`${r0}/v1/kv/k`, { headers: { 'causeway-after': '0:1@7' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VECTOR_UNREACHABLE')
    // The embedded cluster's leaders never change: epoch 1 keeps every index.
    const older = await call(`${r0}/v1/kv/k`, { headers: { 'causeway-after': '7@0:0' } })
    expect(older.status).toBe(200)
  })

  it('refuses a causeway-dt far ahead of the clock with CLOCK_SKEW_EXCEEDED, writing nothing', async () => {
    const future = hlcFrom(Date.now() + 3_600_000, 0)
    const res = await call(`${r0}/v1/kv/skewed`, {
      method: 'PUT',
      json: { value: 1 },
      headers: { 'causeway-dt': future },
    })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('CLOCK_SKEW_EXCEEDED')
    const read = await call(`${r0}/v1/kv/skewed?replica=leader`)
    expect(read.body.found).toBe(false)
  })

  it('orders a write after its dependency and reads it back at the leader', async () => {
    const dt = hlcFrom(Date.now() + 1_000, 5)
    const w = await call(`${r0}/v1/kv/after?durability=majority`, {
      method: 'PUT',
      json: { value: 'x' },
      headers: { 'causeway-dt': dt },
    })
    expect(w.status).toBe(200)
    expect(hlcCompare(w.body.ts as string, dt)).toBeGreaterThan(0)
    const read = await call(`${r0}/v1/kv/after?replica=leader&level=eventual`)
    expect(read.body).toMatchObject({ found: true, value: 'x', replica: 0, ts: w.body.ts })
    const follower = await call(`${r0}/v1/kv/after?replica=follower&level=eventual`)
    // durability=majority: with two replicas the follower has applied it too.
    expect(follower.body).toMatchObject({ found: true, replica: 1 })
  })

  it('enforces the configured value limit', async () => {
    const res = await call(`${r0}/v1/kv/big`, { method: 'PUT', json: { value: 'x'.repeat(1000) } })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('VALUE_TOO_LARGE')
  })

  it('refuses an empty key or set name with INVALID_KEY, writing nothing', async () => {
    // What this region's leaders have written themselves: sv entry of their own region.
    const written = async () => {
      const { body } = await call(`${r0}/v1/status`)
      const replicas = body.replicas as { role: string; sv: number[] }[]
      return replicas.filter((r) => r.role === 'leader').map((r) => r.sv[0])
    }
    expect(await written()).toEqual([expect.any(Number), expect.any(Number)])
    await expectEmptyKeysRefused((method, path, json) => call(r0 + path, { method, json }), written)
  })

  it('answers a wrong method with 405 and Allow, an unknown path with 404', async () => {
    const wrong = await fetch(`${r0}/v1/kv/k`, { method: 'POST' })
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT')
    expect(await wrong.json()).toMatchObject({ statusCode: 405, code: 'METHOD_NOT_ALLOWED' })
    const unknown = await fetch(`${r0}/v1/kv-nope/k`, { method: 'POST' })
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get('allow')).toBeNull()
    expect(((await unknown.json()) as { code: string }).code).toBe('NOT_FOUND')
  })

  it('reports replication in status and metrics', async () => {
    await call(`${r0}/v1/kv/m`, { method: 'PUT', json: { value: 1 } })
    const status = await call(`${r0}/v1/status`)
    const shippers = status.body.shippers as { from: number; to: number; backlog: number }[]
    expect(shippers).toHaveLength(2)
    expect(shippers.every((s) => s.from === 0 && s.to === 1)).toBe(true)
    const metrics = await (await fetch(`${r0}/metrics`)).text()
    expect(
      sample(metrics, 'causeway_replica_lag_entries', {
        region: '0',
        partition: '0',
        replica: '1',
      }),
    ).toBeGreaterThanOrEqual(0)
    expect(
      sample(metrics, 'causeway_shipper_backlog_entries', { region: '0', partition: '0', to: '1' }),
    ).toBeGreaterThanOrEqual(0)
    expect(metrics).toContain('process_cpu_user_seconds_total')
    const other = await (await fetch(`${r1}/metrics`)).text()
    expect(other).not.toContain('process_cpu_user_seconds_total')
  })
})
