/**
 * What a partition's leader may serve, with real processes (`causeway dev --backend redis`):
 *
 * - Without Sentinel, a leader killed with kill -9, its data directory wiped and restarted at
 *   once (issue 22 item 4) serves nothing: no read at any level (it would answer "not found" for
 *   acknowledged writes) and no write; reads go to its followers, which hold everything; writes
 *   are `BACKEND_UNAVAILABLE` naming the partition and why; the status and a metric say so.
 * - With Sentinel, after a promotion the region's clock reference (what a write's dependency
 *   time is checked against) is read at the new leader, not at replica 0 (issue 22 item 5): a
 *   session that wrote in a region whose clock runs a minute ahead writes on in the other region.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { partitionOf } from '@causeway/core'
import { connect, type Causeway } from '@causeway/client'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { startRedisProcess, type RedisProcess } from '../../src/dev/redis-process.js'

const TIMEOUT = 240_000
const MINUTE = 60_000

interface Harness {
  dev: RedisDevCluster
  restarted: RedisProcess[]
}

function server(h: Harness, d: number, p: number, i: number) {
  const r = h.dev.redis.find((s) => s.region === d && s.partition === p && s.replica === i)!
  return { ...r, dir: join(h.dev.dataDir, `r${d}-p${p}-n${i}`) }
}

async function killNow(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL')
  await vi.waitUntil(
    () => {
      try {
        process.kill(pid, 0)
        return false
      } catch {
        return true
      }
    },
    { timeout: 10_000, interval: 10 },
  )
}

async function withRedis<T>(url: string, use: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  try {
    await r.connect()
    return await use(r)
  } finally {
    r.disconnect()
  }
}

interface LeaderStatus {
  partition: number
  replica: number
  state: string
  epoch: number
  serves?: boolean
  note?: string
}

async function leaders(url: string): Promise<LeaderStatus[]> {
  const res = await fetch(`${url}/v1/status`, { signal: AbortSignal.timeout(5000) })
  return ((await res.json()) as { leaders: LeaderStatus[] }).leaders
}

function keysOf(p: number, partitions: number, count: number, prefix: string): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < count; i++)
    if (partitionOf(`${prefix}${i}`, partitions) === p) keys.push(`${prefix}${i}`)
  return keys
}

function failure(
  promise: Promise<unknown>,
): Promise<
  | { code?: string; status?: number; message?: string; details?: Record<string, unknown> }
  | undefined
> {
  return promise.then(
    () => undefined,
    (e: unknown) => e as { code?: string; status?: number; message?: string },
  )
}

describe('without Sentinel: a wiped leader that comes back', { timeout: TIMEOUT }, () => {
  let h: Harness

  beforeAll(async () => {
    const dev = await startRedisDevCluster({
      regions: 1,
      partitions: 1,
      replicas: 3,
      port: 0,
      logLevel: 'error',
    })
    h = { dev, restarted: [] }
  }, TIMEOUT)

  afterAll(async () => {
    await h?.dev.close()
    await Promise.all((h?.restarted ?? []).map((r) => r.stop()))
  }, TIMEOUT)

  it('serves no read at any level and no write; its followers serve the reads; status and metric say so', async () => {
    const url = h.dev.urls[0]!
    const writer = await connect({ url })
    const keys = keysOf(0, 1, 120, 'wiped:')
    const leader = server(h, 0, 0, 0)
    // Without a leader nothing catches a lagging follower up: wait until the followers hold what
    // they are to hold.
    const caughtUp = async (followers: number[]) => {
      const size = await withRedis(leader.url, (r) => r.dbsize())
      await vi.waitFor(
        async () => {
          for (const i of followers)
            expect(
              await withRedis(server(h, 0, 0, i).url, (r) => r.dbsize()),
            ).toBeGreaterThanOrEqual(size)
        },
        { timeout: 20_000, interval: 50 },
      )
    }
    for (const [i, key] of keys.slice(0, 60).entries())
      await writer.put(key, i, { durability: 'majority' })
    await caughtUp([1, 2])
    // Follower 2 stops copying: the 60 writes acknowledged at the leader reach follower 1 only.
    const lagging = server(h, 0, 0, 2)
    process.kill(lagging.pid!, 'SIGSTOP')
    try {
      for (const [i, key] of keys.slice(60).entries())
        await writer.put(key, 60 + i, { durability: 'leader' })
      await caughtUp([1])
      await killNow(leader.pid!)
    } finally {
      // What reached it while stopped (in its socket's buffers) is lost with it.
      await killNow(lagging.pid!)
    }
    // It comes back on its data, a follower of replica 0 (with a password no leader has yet).
    h.restarted.push(
      await startRedisProcess({
        port: Number(new URL(lagging.url).port),
        dir: lagging.dir,
        appendfsync: 'always',
        exitWithParent: true,
        replicaOf: { host: new URL(leader.url).hostname, port: Number(new URL(leader.url).port) },
      }),
    )
    expect(await withRedis(lagging.url, (r) => r.dbsize())).toBeLessThan(
      await withRedis(server(h, 0, 0, 1).url, (r) => r.dbsize()),
    )
    for (const entry of await readdir(leader.dir))
      await rm(join(leader.dir, entry), { recursive: true })
    h.restarted.push(
      await startRedisProcess({
        port: Number(new URL(leader.url).port),
        dir: leader.dir,
        appendfsync: 'always',
        exitWithParent: true,
      }),
    )
    // The empty leader is back and answering; the gateway found it behind.
    await vi.waitFor(
      async () => expect((await leaders(url))[0]).toMatchObject({ state: 'fenced', replica: 0 }),
      { timeout: 30_000, interval: 100 },
    )

    // Eventual reads (no vector) by a client that never wrote: every acknowledged write is
    // there, read at the follower that holds the most; never "not found" from the empty leader
    // (nor from the follower that stopped copying).
    const reader = await connect({ url })
    for (const [i, key] of keys.entries()) {
      const read = await reader.get(key, { read: 'eventual' })
      expect({ key, found: read.found, value: read.value }).toEqual({ key, found: true, value: i })
    }
    // The writer's own session reads too.
    expect((await writer.get(keys[0]!)).value).toBe(0)

    // At the leader: refused, saying why.
    const atLeader = await failure(reader.get(keys[0]!, { read: 'eventual', replica: 'leader' }))
    expect(atLeader?.code).toBe('BACKEND_UNAVAILABLE')
    expect(atLeader?.message).toContain('partition 0')
    expect(atLeader?.message).toContain('came back behind')
    // Writes: refused, naming the partition and why.
    const write = await failure(reader.put(keys[0]!, 'again'))
    expect(write?.code).toBe('BACKEND_UNAVAILABLE')
    expect(write?.message).toContain('partition 0')
    expect(write?.message).toContain('came back behind')

    expect((await leaders(url))[0]).toMatchObject({ state: 'fenced', serves: false })
    const metrics = await (await fetch(`${url}/metrics`)).text()
    expect(metrics).toMatch(/^causeway_leader_fenced\{partition="0"[^}]*\} 1$/m)
    await Promise.all([writer.close(), reader.close()])
  })
})

describe('with Sentinel: the clock reference after a promotion', { timeout: TIMEOUT }, () => {
  let h: Harness
  let db: Causeway

  beforeAll(async () => {
    const dev = await startRedisDevCluster({
      regions: 2,
      partitions: 1,
      replicas: 3,
      port: 0,
      logLevel: 'error',
      shipping: { leaseMs: 1500 },
      sentinel: { downAfterMs: 1000 },
      // Region 1's clock runs a minute ahead: twice the default maxSkewMs.
      clockOffsetsMs: [0, MINUTE],
      skewWaitMs: 1000,
    })
    h = { dev, restarted: [] }
    db = await connect({ url: dev.urls[0]! })
  }, TIMEOUT)

  afterAll(async () => {
    await db?.close()
    await h?.dev.close()
  }, TIMEOUT)

  it('is read at the new leader: a session from the region ahead writes on', async () => {
    const url = h.dev.urls[0]!
    await db.put('clock:before', 1, { durability: 'majority' })
    // Region 0's leader dies and stays down: a follower is promoted.
    await killNow(server(h, 0, 0, 0).pid!)
    await vi.waitFor(
      async () => {
        const now = (await leaders(url))[0]!
        expect(now.state).toBe('leading')
        expect(now.replica).not.toBe(0)
      },
      { timeout: 60_000, interval: 200 },
    )
    await vi.waitFor(() => db.put('clock:after', 1, { region: 0, timeoutMs: 2000 }), {
      timeout: 30_000,
      interval: 200,
    })

    // A write in region 1 stamps a time a minute ahead of region 0's clock; once region 0 holds
    // it (the session's read there waits for it), region 0 knows region 1's clock from it.
    const ahead = await db.put('clock:ahead', 1, { region: 1 })
    expect((await db.get('clock:ahead', { region: 0 })).value).toBe(1)
    // The session's dependency is that minute ahead: admitted against the clock region 0's
    // (new) leader reports, not refused after reading the dead replica 0.
    const behind = await db.put('clock:behind', 2, { region: 0 })
    expect(behind.ts > ahead.ts).toBe(true)
  })
})

describe(
  "committed reads on Redis (durability: 'majority' namespaces)",
  { timeout: TIMEOUT },
  () => {
    let h: Harness

    beforeAll(async () => {
      const dev = await startRedisDevCluster({
        regions: 1,
        partitions: 1,
        replicas: 3,
        port: 0,
        logLevel: 'error',
        namespaces: { acct: { conflicts: 'lww', durability: 'majority' } },
      })
      h = { dev, restarted: [] }
    }, TIMEOUT)

    afterAll(async () => {
      await h?.dev.close()
    }, TIMEOUT)

    it('a reader at the leader does not see a write while the followers are stopped, and sees it once they hold it', async () => {
      const url = h.dev.urls[0]!
      const kv = (key: string, query = '') => `${url}/v1/kv/${encodeURIComponent(key)}${query}`
      const put = (key: string, value: unknown) =>
        fetch(kv(key, '?durability=leader'), {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ value }),
        })
      const get = async (key: string, timeoutMs: number) => {
        const res = await fetch(kv(key, `?level=eventual&replica=leader&timeoutMs=${timeoutMs}`))
        return { status: res.status, body: (await res.json()) as Record<string, unknown> }
      }
      // The leader has reserved its indexes (a reservation needs the followers).
      expect((await put('acct:0', 0)).status).toBe(200)

      const followers = [server(h, 0, 0, 1), server(h, 0, 0, 2)]
      for (const f of followers) process.kill(f.pid!, 'SIGSTOP')
      let write: Promise<Response> | undefined
      try {
        write = put('acct:1', 100)
        // Until the leader has applied it the key reads as never written; once it has, a read at
        // the leader must not answer it while no follower holds it.
        let early = await get('acct:1', 100)
        await vi.waitUntil(
          async () => {
            early = await get('acct:1', 100)
            return !(early.status === 200 && early.body['found'] === false)
          },
          { timeout: 10_000, interval: 20 },
        )
        expect({ status: early.status, code: early.body['code'] }).toEqual({
          status: 503,
          code: 'BACKEND_UNAVAILABLE',
        })
        expect(early.body['message']).toContain('majority')
      } finally {
        for (const f of followers) process.kill(f.pid!, 'SIGCONT')
      }
      const read = await get('acct:1', 10_000)
      expect(read.status).toBe(200)
      expect(read.body['value']).toBe(100)
      await write
    })
  },
)
