/**
 * A gateway over Redis servers that go away and come back, end to end through HTTP: requests
 * that need a missing server fail fast with 503 BACKEND_UNAVAILABLE, everything else is served,
 * the gateway recovers by itself, and no acknowledged write is lost (AOF with fsync always).
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { freePort, stopAllRedis } from '../support/redis-server.js'
import { gridConfig, keysOf, startRedisGrid, type RedisGrid } from './redis-grid.js'

const PARTITIONS = 2
let grid: RedisGrid
let gateway: GatewayServer
const events: string[] = []

beforeAll(async () => {
  grid = await startRedisGrid(1, PARTITIONS, 2)
  // Partition 1's leader is down when the gateway starts.
  await grid[0]![1]![0]!.stop()
  const port = await freePort()
  const config = parseClusterConfig(
    gridConfig(grid, [[`http://127.0.0.1:${port}`]], {
      redis: { commandTimeoutMs: 1000, connectTimeoutMs: 500, reconnectMaxDelayMs: 200 },
    }),
  )
  gateway = await startGateway({
    config,
    region: 0,
    port,
    cluster: { reopenMaxMs: 200, onEvent: (message) => events.push(message) },
  })
})

afterAll(async () => {
  await gateway?.close()
  await stopAllRedis()
})

interface Reply {
  status: number
  body: Record<string, unknown>
  ms: number
}

async function call(
  method: string,
  key: string,
  init: { value?: unknown; after?: string; query?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {}
  if (init.value !== undefined) headers['content-type'] = 'application/json'
  if (init.after) headers['causeway-after'] = init.after
  const started = performance.now()
  const res = await fetch(`${gateway.url}/v1/kv/${encodeURIComponent(key)}${init.query ?? ''}`, {
    method,
    headers,
    ...(init.value === undefined ? {} : { body: JSON.stringify({ value: init.value }) }),
  })
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    ms: performance.now() - started,
  }
}

async function until(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  await vi
    .waitUntil(ok, { timeout: ms, interval: 25 })
    .catch((error: unknown) =>
      Promise.reject(new Error(`${what} did not happen within ${ms} ms`, { cause: error })),
    )
}

describe('a Redis server that is away', () => {
  it('at start: its partition fails fast with 503 while the other is served; then it opens', async () => {
    const [k0] = keysOf(0, PARTITIONS, 1, 'start:')
    const [k1] = keysOf(1, PARTITIONS, 1, 'start:')
    expect((await call('PUT', k0!, { value: 'zero' })).status).toBe(200)
    const down = await call('PUT', k1!, { value: 'one' })
    expect([down.status, down.body.code]).toEqual([503, 'BACKEND_UNAVAILABLE'])
    expect(down.ms).toBeLessThan(1000)
    // Its follower is up and still serves reads; a leader read cannot be served.
    expect((await call('GET', k1!)).body).toMatchObject({ found: false, replica: 1 })
    const leaderRead = await call('GET', k1!, { query: '?replica=leader' })
    expect([leaderRead.status, leaderRead.body.code]).toEqual([503, 'BACKEND_UNAVAILABLE'])
    expect(events.some((e) => e.includes('cannot open replica 0 of partition 1'))).toBe(true)

    await grid[0]![1]![0]!.restart()
    await until(
      'partition 1 takes writes',
      async () => (await call('PUT', k1!, { value: 'one' })).status === 200,
    )
    expect((await call('GET', k1!, { query: '?replica=leader' })).body).toMatchObject({
      found: true,
      value: 'one',
    })
  })

  it('while writing: fast 503s for its partition only, recovery by itself, no acknowledged write lost', async () => {
    const keys0 = keysOf(0, PARTITIONS, 400, `crash:${Date.now()}:`)
    const keys1 = keysOf(1, PARTITIONS, 400, `crash:${Date.now()}:`)
    const leader = grid[0]![0]![0]!
    const acked = new Map<string, { idx: number; value: number }>()
    const failures: Reply[] = []
    let other = 0
    let stop = false
    const writer = (async () => {
      for (let i = 0; i < keys0.length && !stop; i++) {
        const reply = await call('PUT', keys0[i]!, { value: i })
        if (reply.status === 200) acked.set(keys0[i]!, { idx: reply.body.idx as number, value: i })
        else failures.push(reply)
        const second = await call('PUT', keys1[i]!, { value: i })
        expect(second.status).toBe(200)
        other++
      }
    })()
    await until('some writes', async () => acked.size >= 20)
    await leader.kill()
    const killedAt = acked.size
    await until('writes to the dead leader fail', async () => failures.length >= 5)
    // The other partition went on meanwhile.
    const otherBefore = other
    await until('the other partition goes on', async () => other >= otherBefore + 5)
    await leader.restart()
    await until('writes succeed again', async () => acked.size >= killedAt + 20)
    stop = true
    await writer

    for (const failure of failures) {
      expect(failure.status).toBe(503)
      expect(failure.body.code).toBe('BACKEND_UNAVAILABLE')
      expect(failure.ms).toBeLessThan(1500)
    }
    // Every acknowledged write is there, at the leader, after the crash.
    for (const [key, { idx, value }] of acked) {
      const read = await call('GET', key, { after: `1@0:${idx}`, query: '?replica=leader' })
      expect(read.body, key).toMatchObject({ found: true, value })
    }
    expect(events.some((e) => e.includes('cannot open'))).toBe(true)
  })
})
