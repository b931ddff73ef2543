/**
 * Rate limits: after `max` requests in a window the gateway answers 429 `RATE_LIMITED` with
 * `retry-after`, processes nothing more, and counts per API key (per client address without
 * one); health checks and the internal shipping routes are never limited; two gateways sharing a
 * real Redis share the counters.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { HLC_ZERO } from '@causeway/core'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { buildGateway, type Gateway, type GatewayOptions } from '../../src/http/build-gateway.js'
import type { ShippingReceiver } from '../../src/replication/shipping-receiver.js'
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway } from '../../src/gateway-server.js'
import { DEFAULT_RATE_LIMIT } from '../../src/http/rate-limit.js'
import { startRedis, stopAllRedis } from '../support/redis-server.js'
import { FakeClusterService } from './fake-cluster-service.js'

const KEY_A = 'client-key-a-0123456789'
const KEY_B = 'client-key-b-0123456789'
const SECRET = 'cluster-secret-0123456789'
const apps: Gateway[] = []
const redisClients: Redis[] = []

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
  for (const client of redisClients.splice(0)) client.disconnect()
})
afterAll(() => stopAllRedis())

function gateway(options: Partial<GatewayOptions> = {}): {
  app: Gateway
  service: FakeClusterService
} {
  const service = new FakeClusterService()
  const app = buildGateway({
    service,
    regionUrls: ['http://a', 'http://b'],
    processMetrics: false,
    ...options,
  })
  apps.push(app)
  return { app, service }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe('rate limits', () => {
  it('answers 429 RATE_LIMITED with retry-after after max requests, and processes nothing more', async () => {
    const { app, service } = gateway({ rateLimit: { max: 3, windowMs: 60_000 } })
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'GET', url: '/v1/kv/a' })
      expect(res.statusCode).toBe(200)
    }
    const refused = await app.inject({
      method: 'PUT',
      url: '/v1/kv/a',
      payload: { value: 1 },
    })
    expect(refused.statusCode).toBe(429)
    const retryAfter = Number(refused.headers['retry-after'])
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    const body = refused.json()
    expect(body).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED' })
    expect(body.details.retryAfterMs).toBeGreaterThan(0)
    expect(body.details.retryAfterMs).toBeLessThanOrEqual(60_000)
    expect(service.reads).toHaveLength(3)
    expect(service.writes).toEqual([])
    // Load balancers' health checks are never limited.
    const health = await app.inject({ method: 'GET', url: '/healthz' })
    expect(health.statusCode).toBe(200)
  })

  it('counts per API key, per client address without one, and honours a key of its own', async () => {
    const { app } = gateway({
      rateLimit: { max: 2, windowMs: 60_000 },
      auth: { apiKeys: [KEY_A, { key: KEY_B, rateLimit: 4 }] },
    })
    const statuses = async (headers: Record<string, string>, n: number) => {
      const out: number[] = []
      for (let i = 0; i < n; i++)
        out.push((await app.inject({ method: 'GET', url: '/v1/topology', headers })).statusCode)
      return out
    }
    expect(await statuses(bearer(KEY_A), 3)).toEqual([200, 200, 429])
    expect(await statuses(bearer(KEY_B), 5)).toEqual([200, 200, 200, 200, 429])

    const open = gateway({ rateLimit: { max: 1, windowMs: 60_000 } }).app
    const from = (remoteAddress: string) =>
      open.inject({ method: 'GET', url: '/v1/kv/a', remoteAddress })
    expect((await from('127.0.0.2')).statusCode).toBe(200)
    expect((await from('127.0.0.2')).statusCode).toBe(429)
    expect((await from('127.0.0.3')).statusCode).toBe(200)
  })

  it('never limits the internal shipping routes', async () => {
    const receiver: ShippingReceiver = {
      checkpoint: async () => 0,
      receive: async (_partition, envelope) => envelope.last,
    }
    const { app } = gateway({
      rateLimit: { max: 1, windowMs: 60_000 },
      auth: { clusterSecret: SECRET },
      shipping: { receiver },
    })
    for (let idx = 1; idx <= 5; idx++) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/internal/ship/0/1',
        headers: bearer(SECRET),
        payload: {
          v: 1,
          from: 1,
          epoch: 1,
          first: idx,
          last: idx,
          entries: [{ kind: 'put', idx, key: 'k', value: '1', ts: HLC_ZERO, at: 5 }],
        },
      })
      expect(res.statusCode).toBe(200)
    }
  })

  it('shares the counters of two gateways through Redis', async () => {
    const server = await startRedis({ appendfsync: 'everysec' })
    const connect = () => {
      const client = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
      redisClients.push(client)
      return client
    }
    const first = connect()
    await new Promise<void>((resolve) => first.once('ready', () => resolve()))
    const second = connect()
    await new Promise<void>((resolve) => second.once('ready', () => resolve()))
    const rateLimit = { max: 4, windowMs: 60_000, prefix: 'test:rate:' }
    const one = gateway({ rateLimit: { ...rateLimit, redis: first }, auth: { apiKeys: [KEY_A] } })
    const two = gateway({ rateLimit: { ...rateLimit, redis: second }, auth: { apiKeys: [KEY_A] } })
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      const app = i % 2 === 0 ? one.app : two.app
      const res = await app.inject({ method: 'GET', url: '/v1/kv/a', headers: bearer(KEY_A) })
      statuses.push(res.statusCode)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429])
    expect(one.service.reads.length + two.service.reads.length).toBe(4)
    // The counter is in Redis, under the prefix, named by the key's digest and never the key.
    const keys = await first.keys('test:rate:*')
    expect(keys).toHaveLength(1)
    expect(keys[0]).toMatch(/^test:rate:key:[0-9a-f]{16}$/)
  })

  it('is shared by the gateway processes of a region as `causeway gateway` runs them', async () => {
    const server = await startRedis({ appendfsync: 'everysec' })
    const file = {
      format: 1,
      cluster: 'rate-test',
      partitions: 1,
      regions: [{ name: 'eu', url: 'http://127.0.0.1:1', replicas: [[server.url]] }],
      auth: { apiKeys: [KEY_A] },
    }
    const config = parseClusterConfig({ ...file, rateLimit: { max: 3, windowMs: 60_000 } })
    const one = await startGateway({ config, region: 0, port: 0 })
    const two = await startGateway({ config, region: 0, port: 0 })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${(i % 2 === 0 ? one : two).url}/v1/topology`, {
          headers: bearer(KEY_A),
        })
        statuses.push(res.status)
        if (res.status === 429) expect(res.headers.get('retry-after')).toMatch(/^[0-9]+$/)
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429])
      // A gateway started without a rateLimit section limits at the default.
      expect(parseClusterConfig(file).rateLimit.max).toBe(DEFAULT_RATE_LIMIT.max)
    } finally {
      await one.close()
      await two.close()
    }
  })

  it('lets requests through when its Redis cannot be reached', async () => {
    const server = await startRedis({ appendfsync: 'everysec' })
    const client = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    redisClients.push(client)
    await new Promise<void>((resolve) => client.once('ready', () => resolve()))
    await server.stop()
    const { app } = gateway({ rateLimit: { max: 1, windowMs: 60_000, redis: client } })
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ method: 'GET', url: '/v1/kv/a' })
      expect(res.statusCode).toBe(200)
    }
  })
})
