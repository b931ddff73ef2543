/**
 * Committed reads (issue 22 item 6, NuKV's requirement R2), on the embedded cluster with lagging
 * followers: in a namespace configured `durability: 'majority'`, a reader at the leader does not
 * see a write until a majority of the partition's replicas hold it (a short timeout is a 503
 * `BACKEND_UNAVAILABLE`, never the value), and sees it once they do; its writes are majority
 * writes even when the request asks `leader`. A namespace without the setting reads what the
 * leader holds at once.
 */
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

const LAG_MS = 3000

let dev: DevCluster
let url: string

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 1,
    partitions: 1,
    replicas: 3,
    port: 0,
    replicaLagMs: LAG_MS,
    namespaces: { acct: { conflicts: 'lww', durability: 'majority' }, note: { conflicts: 'lww' } },
  })
  url = dev.urls[0]!
})
afterAll(() => dev.close())

const kv = (key: string, query = '') => `${url}/v1/kv/${encodeURIComponent(key)}${query}`

async function get(key: string, query: string) {
  const res = await fetch(kv(key, query))
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

interface ReplicaStatus {
  replica: number
  role: string
  sv: number[]
}

async function replicas(): Promise<ReplicaStatus[]> {
  const res = await fetch(`${url}/v1/status`)
  return ((await res.json()) as { replicas: ReplicaStatus[] }).replicas
}

// How many replicas hold entry `idx` of region 0's log.
async function holding(idx: number): Promise<number> {
  return (await replicas()).filter((r) => (r.sv[0] ?? 0) >= idx).length
}

it('publishes the setting in the topology', async () => {
  const topology = (await (await fetch(`${url}/v1/topology`)).json()) as {
    namespaces: Record<string, unknown>
  }
  expect(topology.namespaces['acct']).toEqual({ conflicts: 'lww', durability: 'majority' })
})

it('a reader at the leader sees a write of a majority namespace only once a majority holds it', async () => {
  const before = Math.max(...(await replicas()).map((r) => r.sv[0] ?? 0))
  // Asked at 'leader': the namespace makes it a majority write, answered after the followers' lag.
  const write = fetch(kv('acct:1', '?durability=leader'), {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value: 100 }),
  })
  // The leader has applied it; no follower has yet.
  await vi.waitUntil(async () => (await holding(before + 1)) >= 1, { timeout: 5000, interval: 10 })
  expect(await holding(before + 1)).toBe(1)

  const early = await get('acct:1', '?level=eventual&replica=leader&timeoutMs=50')
  expect(early.status).toBe(503)
  expect(early.body['code']).toBe('BACKEND_UNAVAILABLE')
  expect(early.body['message']).toContain('majority')

  const read = await get('acct:1', `?level=eventual&replica=leader&timeoutMs=${LAG_MS * 4}`)
  // Answered only once a majority (2 of 3) held it.
  expect(await holding(before + 1)).toBeGreaterThanOrEqual(2)
  expect(read.status).toBe(200)
  expect(read.body['value']).toBe(100)
  const written = await write
  expect(written.status).toBe(200)
})

it('a namespace without the setting is read at the leader at once', async () => {
  const before = Math.max(...(await replicas()).map((r) => r.sv[0] ?? 0))
  const write = await fetch(kv('note:1'), {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value: 'x' }),
  })
  expect(write.status).toBe(200)
  expect(await holding(before + 1)).toBe(1)
  const read = await get('note:1', '?level=eventual&replica=leader&timeoutMs=50')
  expect(read.status).toBe(200)
  expect(read.body['value']).toBe('x')
})
