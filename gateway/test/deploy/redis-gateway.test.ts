/**
 * Gateways over real Redis servers, in this process: two regions × two partitions × two replicas,
 * two gateway processes' worth of gateways per region, all talking HTTP to each other. Shipping
 * between regions over the internal endpoint, one shipping lease holder per partition, status,
 * majority durability with WAIT, API keys and the cluster secret, and keys that try to leave their
 * namespace.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { connect } from '@causeway/client'
import { HLC_ZERO } from '@causeway/core'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { RedisPartitionReplica } from '../../src/storage/redis/index.js'
import { freePort, stopAllRedis } from '../support/redis-server.js'
import { gridConfig, keysOf, startRedisGrid, type RedisGrid } from './redis-grid.js'
import { expectEmptyKeysRefused } from '../support/empty-key-requests.js'

const API_KEY = 'test-api-key-0123456789'
const SECRET = 'test-cluster-secret-0123456789'
// Braces and a colon, to show the namespace cannot move the hash tag either.
const NAMESPACE = 'tenant}{a:1'
const PARTITIONS = 2

let grid: RedisGrid
/** `gateways[d][g]` */
let gateways: GatewayServer[][]
const events: string[] = []

beforeAll(async () => {
  grid = await startRedisGrid(2, PARTITIONS, 2)
  const ports = await Promise.all([0, 1].map(() => Promise.all([freePort(), freePort()])))
  const urls = ports.map((pair) => pair.map((port) => `http://127.0.0.1:${port}`))
  const config = parseClusterConfig(
    gridConfig(grid, urls, {
      auth: { apiKeys: [API_KEY], clusterSecret: SECRET },
      limits: { defaultTimeoutMs: 1000 },
      shipping: { leaseMs: 900 },
      redis: { namespace: NAMESPACE, commandTimeoutMs: 2000 },
    }),
  )
  gateways = await Promise.all(
    ports.map((pair, d) =>
      Promise.all(
        pair.map((port) =>
          startGateway({
            config,
            region: d,
            port,
            cluster: { onEvent: (message) => events.push(message) },
          }),
        ),
      ),
    ),
  )
})

afterAll(async () => {
  await Promise.all((gateways ?? []).flat().map((g) => g.close()))
  await stopAllRedis()
})

interface Reply {
  status: number
  body: Record<string, unknown>
  headers: Headers
}

async function call(
  url: string,
  path: string,
  init: {
    method?: string
    body?: unknown
    headers?: Record<string, string>
    key?: string | null
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers }
  const key = init.key === undefined ? API_KEY : init.key
  if (key !== null) headers.authorization = `Bearer ${key}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url + path, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  })
  const text = await res.text()
  const json = res.headers.get('content-type')?.startsWith('application/json')
  return { status: res.status, body: json ? JSON.parse(text) : {}, headers: res.headers }
}

const kv = (key: string) => `/v1/kv/${encodeURIComponent(key)}`

/** Resolves to what `probe` answers once it answers something, within `ms`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 8000) {
  return vi
    .waitUntil(probe, { timeout: ms, interval: 20 })
    .catch((error: unknown) =>
      Promise.reject(new Error(`${what} did not happen within ${ms} ms`, { cause: error })),
    ) as Promise<T>
}

describe('gateways over Redis, two regions', () => {
  it('ship a write to the other region, where a session read through any gateway sees it', async () => {
    const put = await call(gateways[0]![1]!.url, kv('cart:1'), {
      method: 'PUT',
      body: { value: ['apple'] },
    })
    expect(put.status).toBe(200)
    const { idx, dc } = put.body as { idx: number; dc: number }
    expect(dc).toBe(0)
    for (const gateway of gateways[1]!) {
      const get = await call(gateway.url, kv('cart:1') + '?timeoutMs=5000', {
        headers: { 'causeway-after': `1@0:${idx}` },
      })
      expect(get.status).toBe(200)
      expect(get.body).toMatchObject({ found: true, value: ['apple'], dc: 0, region: 1 })
    }
  })

  it('ship every kind of entry: a set write made in one region is read in the other', async () => {
    const add = await call(gateways[0]![0]!.url, '/v1/sets/tags/add', {
      method: 'POST',
      body: { elements: ['red', 'green'] },
    })
    expect(add.status).toBe(200)
    const size = await call(gateways[1]![1]!.url, '/v1/sets/tags/size?timeoutMs=5000', {
      headers: { 'causeway-after': `1@0:${add.body.idx as number}` },
    })
    expect(size.body).toMatchObject({ size: 2 })
  })

  it('refuse an empty key or set name with INVALID_KEY, as the embedded backend does', async () => {
    const url = gateways[0]![1]!.url
    // What this region's leaders have written themselves: sv entry of their own region.
    const written = async () => {
      const replicas = (await call(url, '/v1/status')).body.replicas as {
        role: string
        sv: number[]
      }[]
      return replicas.filter((r) => r.role === 'leader').map((r) => r.sv[0])
    }
    expect(await written()).toEqual([expect.any(Number), expect.any(Number)])
    await expectEmptyKeysRefused((method, path, body) => call(url, path, { method, body }), written)
  })

  it('answer a wrong method with 405 and Allow', async () => {
    const res = await call(gateways[1]![0]!.url, '/v1/sets/s/add', { method: 'GET' })
    expect([res.status, res.body.code, res.headers.get('allow')]).toEqual([
      405,
      'METHOD_NOT_ALLOWED',
      'POST',
    ])
  })

  it('run exactly one shipper per partition in each region, on the lease holder', async () => {
    for (const region of gateways) {
      const holders = await eventually('every partition leased', async () => {
        const held = region.map((g) => g.cluster.shippingLeases())
        return held.flat().length === PARTITIONS ? held : undefined
      })
      expect(holders.flat().sort()).toEqual([0, 1])
      for (const [g, gateway] of region.entries()) {
        const status = await call(gateway.url, '/v1/status')
        const shipping = (status.body.shippers as { partition: number }[]).map((s) => s.partition)
        expect([...new Set(shipping)].sort()).toEqual(holders[g])
      }
    }
  })

  it('report every replica in status: role, Redis address, sv and lag', async () => {
    const put = await call(gateways[0]![0]!.url, kv('status:1'), {
      method: 'PUT',
      body: { value: 1 },
    })
    const status = await call(gateways[0]![0]!.url, '/v1/status')
    expect(status.status).toBe(200)
    const replicas = status.body.replicas as {
      partition: number
      replica: number
      role: string
      backend: string
      sv: number[]
      lag: { entries: number; ms: number }
    }[]
    expect(replicas.map((r) => [r.partition, r.replica, r.role])).toEqual([
      [0, 0, 'leader'],
      [0, 1, 'follower'],
      [1, 0, 'leader'],
      [1, 1, 'follower'],
    ])
    for (const r of replicas) {
      expect(r.backend).toBe(grid[0]![r.partition]![r.replica]!.url)
      expect(r.sv).toHaveLength(2)
    }
    const written = replicas.filter((r) => r.sv[0]! >= (put.body.idx as number))
    expect(written.length).toBeGreaterThan(0)
  })

  it('show a follower that stopped replicating as lagging, and catch it up', async () => {
    const p = 0
    const follower = grid[0]![p]![1]!
    await follower.command('REPLICAOF', 'NO', 'ONE')
    try {
      const [key] = keysOf(p, PARTITIONS, 1, `lag:${Date.now()}:`)
      expect(
        (await call(gateways[0]![0]!.url, kv(key!), { method: 'PUT', body: { value: 1 } })).status,
      ).toBe(200)
      // The status shows the follower behind by the write, and for longer and longer.
      await vi.waitFor(async () => {
        const status = await call(gateways[0]![1]!.url, '/v1/status')
        const lagging = (
          status.body.replicas as {
            partition: number
            replica: number
            lag: { entries: number; ms: number }
          }[]
        ).find((r) => r.partition === p && r.replica === 1)!
        expect(lagging.lag.entries).toBeGreaterThanOrEqual(1)
        expect(lagging.lag.ms).toBeGreaterThanOrEqual(20)
      })
      // A majority (leader + 1 of 2) cannot confirm: 503, though the write is at the leader.
      const majority = await call(gateways[0]![0]!.url, kv(key!) + '?durability=majority', {
        method: 'PUT',
        body: { value: 2 },
      })
      expect(majority.status).toBe(503)
      expect(majority.body.code).toBe('BACKEND_UNAVAILABLE')
    } finally {
      await follower.replicaOf(grid[0]![p]![0]!)
    }
    await eventually('the follower caught up', async () => {
      const status = await call(gateways[0]![1]!.url, '/v1/status')
      const r = (
        status.body.replicas as { partition: number; replica: number; lag: { entries: number } }[]
      ).find((x) => x.partition === p && x.replica === 1)!
      return r.lag.entries === 0 ? true : undefined
    })
    const majority = await call(gateways[0]![0]!.url, kv('majority:1') + '?durability=majority', {
      method: 'PUT',
      body: { value: 3 },
    })
    expect(majority.status).toBe(200)
  })

  it('serve the SDK with its API key', async () => {
    // The API key goes only to origins the app names (issue 23): the other region's gateway too.
    const db = await connect({
      url: gateways[1]![0]!.url,
      apiKey: API_KEY,
      trustedOrigins: gateways.flat().map((g) => g.url),
    })
    try {
      await db.put('sdk:1', { ok: true })
      expect((await db.get('sdk:1')).value).toEqual({ ok: true })
      const there = await db.get('sdk:1', { region: 0, timeoutMs: 5000 })
      expect(there.value).toEqual({ ok: true })
    } finally {
      await db.close()
    }
  })
})

describe('credentials', () => {
  it('refuse client requests without a valid API key (401) and with the cluster secret (403)', async () => {
    const url = gateways[0]![0]!.url
    const none = await call(url, '/v1/topology', { key: null })
    expect([none.status, none.body.code]).toEqual([401, 'UNAUTHORIZED'])
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/)
    for (const key of ['wrong-key-0123456789', API_KEY.slice(0, -1), API_KEY + 'x']) {
      const wrong = await call(url, '/v1/topology', { key })
      expect([wrong.status, wrong.body.code]).toEqual([401, 'UNAUTHORIZED'])
    }
    const basic = await call(url, kv('a'), {
      key: null,
      headers: { authorization: `Basic ${API_KEY}` },
    })
    expect([basic.status, basic.body.code]).toEqual([401, 'UNAUTHORIZED'])
    const secret = await call(url, kv('a'), { key: SECRET })
    expect([secret.status, secret.body.code]).toEqual([403, 'FORBIDDEN'])
    // Nothing was written by the refused requests.
    expect((await call(url, kv('a'))).body.found).toBe(false)
    for (const path of ['/v1/topology', kv('a'), '/v1/status', '/metrics', '/v1/openapi.json'])
      expect((await call(url, path)).status).toBe(200)
    expect((await call(url, '/no/such/route', { key: null })).status).toBe(401)
  })

  it('leave /healthz open', async () => {
    const health = await call(gateways[1]![1]!.url, '/healthz', { key: null })
    expect([health.status, health.body.status]).toEqual([200, 'ok'])
  })

  it('let only the cluster secret call the internal endpoint: none 401, API key 403', async () => {
    const url = gateways[1]![0]!.url
    const path = '/v1/internal/ship/0/0'
    expect((await call(url, path, { key: null })).body.code).toBe('UNAUTHORIZED')
    expect((await call(url, path, { key: null })).status).toBe(401)
    const asClient = await call(url, path, { key: API_KEY })
    expect([asClient.status, asClient.body.code]).toEqual([403, 'FORBIDDEN'])
    const wrong = await call(url, path, { key: 'not-the-secret-0123456789' })
    expect([wrong.status, wrong.body.code]).toEqual([401, 'UNAUTHORIZED'])
    const ok = await call(url, path, { key: SECRET })
    expect(ok.status).toBe(200)
    expect(typeof ok.body.checkpoint).toBe('number')
    // A client key cannot push entries either, and nothing is applied.
    const entry = { kind: 'put', idx: 1_000_000, key: 'forged', value: '1', ts: HLC_ZERO, at: 0 }
    const envelope = (entries: object[], from = 0) => ({
      v: 1,
      from,
      epoch: 1,
      first: 1_000_000,
      last: 1_000_000 + entries.length - 1,
      entries,
    })
    const forged = await call(url, path, {
      method: 'POST',
      key: API_KEY,
      body: envelope([entry]),
    })
    expect([forged.status, forged.body.code]).toEqual([403, 'FORBIDDEN'])
    // With the secret, a malformed envelope or a region's own entries are refused.
    for (const [p, body] of [
      [path, envelope([{ ...entry, extra: 1 }])],
      [path, envelope([])],
      [path, envelope([entry], 1)],
      [path, { ...envelope([entry]), last: 1_000_001 }],
      ['/v1/internal/ship/0/1', envelope([entry], 1)],
      ['/v1/internal/ship/9/0', envelope([entry])],
    ] as const) {
      const bad = await call(url, p, { method: 'POST', key: SECRET, body })
      expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_REQUEST'])
    }
    // One of a version, or with an entry kind, this gateway does not know: told so, not applied.
    for (const body of [
      { ...envelope([entry]), v: 3 },
      { entries: [entry] },
      envelope([{ ...entry, kind: 'label' }]),
    ]) {
      const newer = await call(url, path, { method: 'POST', key: SECRET, body })
      expect([newer.status, newer.body.code]).toEqual([400, 'UNSUPPORTED_LOG_FORMAT'])
    }
    // A gap (an idx far past the checkpoint) is not applied: the checkpoint does not move.
    const gap = await call(url, path, { method: 'POST', key: SECRET, body: envelope([entry]) })
    expect(gap.status).toBe(200)
    expect(gap.body.checkpoint).toBe(ok.body.checkpoint)
  })
})

describe('namespaces', () => {
  const HOSTILE = [
    '}',
    '{',
    '{x}',
    '}{',
    '*',
    '?',
    '[a-z]',
    '\\',
    'a\r\nFLUSHALL\r\n',
    ' ',
    '%41',
    ':sv',
    'sv',
    'meta',
    'log:0',
    'lease:ship',
    'victim',
    `cw:{victim:r0:p0}:v:x`,
    `}:r0:p0}:sv`,
    '__keyspace@0__:x',
    '../../x',
    'ключ',
    '😀',
    '}'.repeat(170),
  ]

  it('keep hostile keys inside the cluster namespace, each its own, on every server', async () => {
    // Another tenant on the same leader servers, written before the hostile keys.
    const victims = await Promise.all(
      [0, 1].map(async (p) => {
        const replica = new RedisPartitionReplica({
          url: grid[0]![p]![0]!.url,
          namespace: 'victim',
          region: 0,
          partition: p,
          replica: 0,
          regions: 2,
        })
        await replica.open()
        await replica.write('x', '"victim data"', HLC_ZERO)
        return replica
      }),
    )
    const url = gateways[0]![0]!.url
    // Each key's write, as a session vector: its read then sees it (from a follower too).
    const written: string[] = []
    for (const [i, key] of HOSTILE.entries()) {
      const put = await call(url, kv(key), { method: 'PUT', body: { value: i } })
      expect(put.status, JSON.stringify(key)).toBe(200)
      written.push(`${put.body.epoch}@${put.body.dc}:${put.body.idx}`)
    }
    // A hostile session header is refused before anything is read.
    const header = await call(url, kv('x'), { headers: { 'causeway-after': '0:1},{x}:*' } })
    expect(header.status).toBe(400)
    for (const [i, key] of HOSTILE.entries()) {
      const get = await call(url, kv(key), { headers: { 'causeway-after': written[i]! } })
      expect(get.body, JSON.stringify(key)).toMatchObject({ found: true, value: i })
    }
    // The namespace, percent-encoded, inside the hash tag.
    const prefix = 'cw:{tenant%7D%7Ba:1:r'
    for (const server of grid.flat(2)) {
      const redis = new Redis(server.url, { lazyConnect: true })
      await redis.connect()
      try {
        const keys = await redis.keys('*')
        const outside = keys.filter(
          (k) => !k.startsWith(prefix) && !k.startsWith('cw:{victim:r0:p'),
        )
        expect(outside, server.url).toEqual([])
      } finally {
        redis.disconnect()
      }
    }
    for (const victim of victims) {
      const read = await victim.read('x')
      expect(read.version?.value).toBe('"victim data"')
      await victim.close()
    }
  })
})

describe('lease takeover', () => {
  it('moves the leases of a gateway that stops to the other, and shipping goes on', async () => {
    const [first, second] = gateways[0]!
    const holder = first!.cluster.shippingLeases().length > 0 ? first! : second!
    const other = holder === first ? second! : first!
    await holder.close()
    await eventually('the other gateway took every lease', async () =>
      other.cluster.shippingLeases().length === PARTITIONS ? true : undefined,
    )
    const put = await call(other.url, kv('after-takeover'), { method: 'PUT', body: { value: 7 } })
    expect(put.status).toBe(200)
    const get = await call(gateways[1]![0]!.url, kv('after-takeover') + '?timeoutMs=5000', {
      headers: { 'causeway-after': `1@0:${put.body.idx as number}` },
    })
    expect(get.body).toMatchObject({ found: true, value: 7 })
    expect(events.some((e) => e.includes('acquired the shipping lease'))).toBe(true)
  })
})
