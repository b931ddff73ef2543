/**
 * Failover of Redis partition leaders with real processes (`causeway dev --backend redis
 * --sentinel`: redis-servers, redis-sentinels, gateway processes): a leader killed with kill -9
 * is replaced by a follower and writes resume without an operator; a leader that comes back
 * behind what it acknowledged (its data directory wiped, or its AOF cut short) and is restarted
 * on the same port at once never leads again and its followers never resynchronise down to it;
 * it rejoins as a follower of the promoted one. Writes acknowledged at `majority` survive, no
 * index names two writes, the regions' copies of the log agree, and a session that depended on a
 * lost write gets EPOCH_MISMATCH (then goes on after re-basing), never a stale 200. Without
 * Sentinel, the same leader is fenced: no writes, followers keep their data.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readFile, readdir, rm, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { EpochMismatchError, partitionOf } from '@causeway/core'
import { connect, type Causeway } from '@causeway/client'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { startRedisProcess, type RedisProcess } from '../../src/dev/redis-process.js'
import { ReplicaKeys } from '../../src/storage/redis/key-layout.js'

const TIMEOUT = 240_000

/** A dev cluster and what its tests restarted (stopped with it). */
interface Harness {
  dev: RedisDevCluster
  restarted: RedisProcess[]
  pids: Map<string, number>
}

async function startHarness(options: Parameters<typeof startRedisDevCluster>[0]): Promise<Harness> {
  const dev = await startRedisDevCluster({
    port: 0,
    logLevel: 'error',
    shipping: { leaseMs: 1500 },
    ...options,
  })
  const pids = new Map(dev.redis.map((r) => [`${r.region}/${r.partition}/${r.replica}`, r.pid!]))
  return { dev, restarted: [], pids }
}

async function stopHarness(h: Harness | undefined): Promise<void> {
  if (!h) return
  await h.dev.close()
  await Promise.all(h.restarted.map((r) => r.stop()))
}

function server(h: Harness, d: number, p: number, i: number) {
  const r = h.dev.redis.find((s) => s.region === d && s.partition === p && s.replica === i)!
  return { ...r, pid: h.pids.get(`${d}/${p}/${i}`)!, dir: join(h.dev.dataDir, `r${d}-p${p}-n${i}`) }
}

async function killNow(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL')
  await vi.waitUntil(() => !alive(pid), { timeout: 10_000, interval: 10 })
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Starts a killed server again on its port and directory: as `causeway dev` started a leader, or,
 * with `follows`, as a follower of that replica (with a password no leader has yet).
 */
async function restart(
  h: Harness,
  d: number,
  p: number,
  i: number,
  follows?: number,
): Promise<void> {
  const s = server(h, d, p, i)
  const leader = follows === undefined ? undefined : new URL(server(h, d, p, follows).url)
  const started = await startRedisProcess({
    port: Number(new URL(s.url).port),
    dir: s.dir,
    appendfsync: 'always',
    exitWithParent: true,
    ...(leader ? { replicaOf: { host: leader.hostname, port: Number(leader.port) } } : {}),
  })
  h.restarted.push(started)
  h.pids.set(`${d}/${p}/${i}`, started.pid!)
}

/** The incremental AOF file a server appends to (Redis 7's multi-part AOF). */
async function incrementalAof(dir: string): Promise<string> {
  const manifest = await readFile(join(dir, 'appendonlydir', 'appendonly.aof.manifest'), 'utf8')
  const name = manifest
    .split('\n')
    .map((line) => /^file (\S+) seq \d+ type i$/.exec(line.trim())?.[1])
    .filter((n): n is string => n !== undefined)
    .at(-1)!
  return join(dir, 'appendonlydir', name)
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

/** `idx ts key` of every entry of origin `origin`'s log of partition `p` on a server. */
async function logOf(h: Harness, url: string, d: number, p: number, origin: number) {
  const keys = new ReplicaKeys(h.dev.config.redis.namespace, d, p)
  const rows = await withRedis(url, (r) => r.xrange(keys.log(origin), '-', '+'))
  return rows.map(
    ([id, f]) => `${id.split('-')[0]} ${f[f.indexOf('ts') + 1]} ${f[f.indexOf('k') + 1]}`,
  )
}

interface LeaderStatus {
  partition: number
  replica: number
  state: string
  epoch: number
}

async function leaders(url: string): Promise<LeaderStatus[]> {
  const res = await fetch(`${url}/v1/status`, { signal: AbortSignal.timeout(5000) })
  return ((await res.json()) as { leaders: LeaderStatus[] }).leaders
}

/** `count` keys of partition `p` (of `partitions`) starting with `prefix`. */
function keysOf(p: number, partitions: number, count: number, prefix: string): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < count; i++)
    if (partitionOf(`${prefix}${i}`, partitions) === p) keys.push(`${prefix}${i}`)
  return keys
}

/** Puts until one is acknowledged; resolves to it and the ms it took from `since`. */
async function firstWrite(db: Causeway, p: number, partitions: number, since: number) {
  for (let n = 0; ; n++) {
    const [key] = keysOf(p, partitions, 1, `after:${since}:${n}:`)
    try {
      const written = await db.put(key!, n, { timeoutMs: 2000 })
      return { written, ms: performance.now() - since }
    } catch (error) {
      // The partition has no leader while the failover runs: 503s, nothing else.
      expect((error as { status?: number }).status, String(error)).toBeGreaterThanOrEqual(503)
      if (performance.now() - since > 60_000)
        throw new Error('writes did not resume in 60 s', { cause: error })
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

describe('Sentinel failover, two regions', { timeout: TIMEOUT }, () => {
  const PARTITIONS = 4
  let h: Harness
  let db: Causeway

  beforeAll(async () => {
    h = await startHarness({
      regions: 2,
      partitions: PARTITIONS,
      replicas: 3,
      sentinel: { downAfterMs: 1000 },
    })
    db = await connect({ url: h.dev.urls[0]! })
  }, TIMEOUT)

  afterAll(async () => {
    await db?.close()
    await stopHarness(h)
  }, TIMEOUT)

  it('replaces a killed leader: writes resume, the status shows the new leader and epoch, majority writes survive, the old leader rejoins as a follower', async () => {
    const p = 0
    const keys = keysOf(p, PARTITIONS, 20, 'kill:')
    for (const [i, key] of keys.entries()) await db.put(key, i, { durability: 'majority' })
    expect((await leaders(h.dev.urls[0]!))[p]).toMatchObject({
      replica: 0,
      state: 'leading',
      epoch: 1,
    })

    const killedAt = performance.now()
    await killNow(server(h, 0, p, 0).pid)
    const { written, ms } = await firstWrite(db, p, PARTITIONS, killedAt)
    console.log(`failover after kill -9 of a leader: writes resumed in ${Math.round(ms)} ms`)
    expect(written.epoch).toBe(2)
    // The new epoch starts above every index the old leader may have issued.
    expect(written.idx).toBeGreaterThan(1000)
    const now = (await leaders(h.dev.urls[0]!))[p]!
    expect(now).toMatchObject({ state: 'leading', epoch: 2 })
    expect(now.replica).not.toBe(0)

    // Every majority write is there, read with the session that wrote them.
    for (const [i, key] of keys.entries()) expect((await db.get(key)).value).toBe(i)

    // The old leader comes back on its data: it follows the new one, with the same log.
    await restart(h, 0, p, 0)
    const leaderUrl = server(h, 0, p, now.replica).url
    await vi.waitFor(
      async () => {
        const role = await withRedis(
          server(h, 0, p, 0).url,
          (r) => r.call('ROLE') as Promise<unknown[]>,
        )
        expect(role[0]).toBe('slave')
        expect(role[2]).toBe(Number(new URL(leaderUrl).port))
        expect(await logOf(h, server(h, 0, p, 0).url, 0, p, 0)).toEqual(
          await logOf(h, leaderUrl, 0, p, 0),
        )
      },
      { timeout: 60_000, interval: 250 },
    )
  })

  it('fences a wiped leader restarted at once: followers keep their data, it never leads again and rejoins as a follower; no index is reused, the regions agree', async () => {
    const p = 1
    const keys = keysOf(p, PARTITIONS, 30, 'wipe:')
    const acked = []
    for (const [i, key] of keys.entries())
      acked.push(await db.put(key, i, { durability: i % 2 === 0 ? 'majority' : 'leader' }))
    const leader = server(h, 0, p, 0)
    const follower = server(h, 0, p, 1)
    const before = await withRedis(follower.url, (r) => r.dbsize())

    const killedAt = performance.now()
    await killNow(leader.pid)
    for (const entry of await readdir(leader.dir))
      await rm(join(leader.dir, entry), { recursive: true })
    await restart(h, 0, p, 0)
    expect(performance.now() - killedAt).toBeLessThan(1000)

    const { written, ms } = await firstWrite(db, p, PARTITIONS, killedAt)
    console.log(`failover after a wiped leader came back: writes resumed in ${Math.round(ms)} ms`)
    expect(written.epoch).toBe(2)
    const now = (await leaders(h.dev.urls[0]!))[p]!
    expect(now.replica).not.toBe(0)
    // The followers never resynchronised down to the empty leader.
    expect(await withRedis(follower.url, (r) => r.dbsize())).toBeGreaterThanOrEqual(before)

    // Everything acknowledged is readable by the session that wrote it, or refused; never a 200
    // without it.
    for (const [i, key] of keys.entries()) {
      try {
        expect((await db.get(key)).value).toBe(i)
      } catch (error) {
        expect(error).toBeInstanceOf(EpochMismatchError)
        expect(i % 2).toBe(1) // only writes acknowledged at 'leader' may be lost
      }
    }
    // No index names two writes: the new epoch's are above all acknowledged before.
    expect(written.idx).toBeGreaterThan(Math.max(...acked.map((a) => a.idx)))

    // The wiped server follows the new leader and holds its log; region 1 holds the same copy.
    const leaderUrl = server(h, 0, p, now.replica).url
    await vi.waitFor(
      async () => {
        const mine = await logOf(h, leaderUrl, 0, p, 0)
        expect(await logOf(h, leader.url, 0, p, 0)).toEqual(mine)
        const there = await logOf(h, server(h, 1, p, 0).url, 1, p, 0)
        expect(there).toEqual(mine)
      },
      { timeout: 60_000, interval: 250 },
    )
  })

  it('fences a leader restarted with its AOF cut short the same way', async () => {
    const p = 2
    const keys = keysOf(p, PARTITIONS, 40, 'aof:')
    const leader = server(h, 0, p, 0)
    for (const [i, key] of keys.slice(0, 20).entries())
      await db.put(key, i, { durability: 'majority' })
    const aof = await incrementalAof(leader.dir)
    const cut = (await readFile(aof)).length
    for (const [i, key] of keys.slice(20).entries()) await db.put(key, 20 + i)

    const killedAt = performance.now()
    await killNow(leader.pid)
    await truncate(aof, cut)
    await restart(h, 0, p, 0)
    const { written, ms } = await firstWrite(db, p, PARTITIONS, killedAt)
    console.log(
      `failover after a leader came back with its AOF cut: writes resumed in ${Math.round(ms)} ms`,
    )
    expect(written.epoch).toBe(2)
    expect((await leaders(h.dev.urls[0]!))[p]!.replica).not.toBe(0)
    for (const [i, key] of keys.slice(0, 20).entries()) expect((await db.get(key)).value).toBe(i)
    const leaderUrl = server(h, 0, p, (await leaders(h.dev.urls[0]!))[p]!.replica).url
    await vi.waitFor(
      async () => {
        const mine = await logOf(h, leaderUrl, 0, p, 0)
        expect(await logOf(h, leader.url, 0, p, 0)).toEqual(mine)
        expect(await logOf(h, server(h, 1, p, 0).url, 1, p, 0)).toEqual(mine)
      },
      { timeout: 60_000, interval: 250 },
    )
  })
})

describe('writes nobody else had', { timeout: TIMEOUT }, () => {
  let h: Harness

  beforeAll(async () => {
    h = await startHarness({
      regions: 1,
      partitions: 1,
      replicas: 3,
      sentinel: { downAfterMs: 1000 },
    })
  }, TIMEOUT)

  afterAll(() => stopHarness(h), TIMEOUT)

  it('are lost with their leader, and every session that depended on them gets EPOCH_MISMATCH until it re-bases', async () => {
    const url = h.dev.urls[0]!
    const writer = await connect({ url })
    const bystander = await connect({ url })
    const keep = keysOf(0, 1, 10, 'kept:')
    for (const [i, key] of keep.entries()) await writer.put(key, i, { durability: 'majority' })
    await bystander.put('bystander', 1, { durability: 'majority' })
    // The followers stop copying, and what reaches them is then lost with them (kill -9 while
    // stopped): what the leader acknowledges now, only it has.
    const followers = [server(h, 0, 0, 1), server(h, 0, 0, 2)]
    for (const f of followers) process.kill(f.pid, 'SIGSTOP')
    const lost = keysOf(0, 1, 10, 'lost:')
    const acked = []
    for (const [i, key] of lost.entries()) acked.push(await writer.put(key, i))
    for (const f of followers) await killNow(f.pid)
    const leader = server(h, 0, 0, 0)
    await killNow(leader.pid)
    for (const entry of await readdir(leader.dir))
      await rm(join(leader.dir, entry), { recursive: true })
    await restart(h, 0, 0, 0)
    // The followers come back on their data, replicating (fenced) from the wiped leader.
    for (const f of followers) await restart(h, 0, 0, f.replica, 0)
    const { written } = await firstWrite(bystander, 0, 1, performance.now())
    expect(written.epoch).toBe(2)
    expect(written.idx).toBeGreaterThan(Math.max(...acked.map((a) => a.idx)))

    // The writer's session depends on the lost writes: reads and writes say so.
    const read = await writer.get(lost[0]!).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(read).toBeInstanceOf(EpochMismatchError)
    const mismatch = read as EpochMismatchError
    expect(mismatch.status).toBe(409)
    expect(mismatch.lost[0]).toMatchObject({ region: 0, epoch: 1, idx: acked.at(-1)!.idx })
    expect(mismatch.lost[0]!.kept).toBeLessThan(acked[0]!.idx)
    expect(mismatch.message).toContain('was lost when that region')
    await expect(writer.put('next', 1)).rejects.toBeInstanceOf(EpochMismatchError)
    await expect(writer.get(keep[0]!)).rejects.toBeInstanceOf(EpochMismatchError)

    // The documented way on: re-base on what was kept. Then what was kept reads, what was lost
    // reads as lost, and new writes go.
    writer.session.rebase(0, mismatch.lost)
    for (const [i, key] of keep.entries()) expect((await writer.get(key)).value).toBe(i)
    for (const key of lost) expect((await writer.get(key)).found).toBe(false)
    expect((await writer.put('next', 1)).epoch).toBe(2)

    // A session that depended only on what the new epoch kept never noticed.
    expect((await bystander.get('bystander')).value).toBe(1)

    // The option does the same by itself.
    const auto = await connect({
      url,
      session: JSON.stringify(writer.session),
      defaults: { onEpochMismatch: 'rebase' },
    })
    expect((await auto.get(keep[0]!)).value).toBe(0)
    await Promise.all([writer.close(), bystander.close(), auto.close()])
  })
})

/** How many authentications the server at `url` refused (its `ACL LOG`, reason `auth`). */
async function refusedReplicaAuths(url: string): Promise<number> {
  const log = (await withRedis(url, (r) => r.call('ACL', 'LOG'))) as unknown[][]
  let refused = 0
  for (const entry of log) {
    const fields = new Map<unknown, unknown>()
    for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), entry[i + 1])
    if (fields.get('reason') === 'auth') refused += Number(fields.get('count') ?? 1)
  }
  return refused
}

describe('without Sentinel', { timeout: TIMEOUT }, () => {
  let h: Harness

  beforeAll(async () => {
    h = await startHarness({ regions: 1, partitions: 1, replicas: 3 })
  }, TIMEOUT)

  afterAll(() => stopHarness(h), TIMEOUT)

  it('a wiped leader restarted at once takes no writes and its followers keep their data (fenced)', async () => {
    const url = h.dev.urls[0]!
    const db = await connect({ url })
    for (let i = 0; i < 10; i++) await db.put(`k${i}`, i, { durability: 'majority' })
    const follower = server(h, 0, 0, 1)
    const leader = server(h, 0, 0, 0)
    // Majority durability waits for one follower; the read below may go to either, and with the
    // leader gone (no Sentinel here) one that lagged would never catch up: let both catch up.
    const size = await withRedis(leader.url, (r) => r.dbsize())
    await vi.waitFor(
      async () => {
        for (const f of [follower, server(h, 0, 0, 2)])
          expect(await withRedis(f.url, (r) => r.dbsize())).toBeGreaterThanOrEqual(size)
      },
      { timeout: 10_000, interval: 50 },
    )
    const before = await withRedis(follower.url, (r) => r.dbsize())
    await killNow(leader.pid)
    for (const entry of await readdir(leader.dir))
      await rm(join(leader.dir, entry), { recursive: true })
    await restart(h, 0, 0, 0)
    await vi.waitFor(
      async () => expect((await leaders(url))[0]).toMatchObject({ state: 'fenced', replica: 0 }),
      { timeout: 30_000, interval: 200 },
    )
    const refused = await db.put('k0', 'again').then(
      () => undefined,
      (e: unknown) => e as { code: string },
    )
    expect(refused?.code).toBe('BACKEND_UNAVAILABLE')
    // The followers try to resynchronise from the empty leader and are refused (the replication
    // user they authenticate as does not exist in the restarted process): wait until the leader
    // has refused several such attempts, then check that they still hold everything. (A 3 s
    // sleep decided this before: on a loaded machine no attempt may have been made in it.)
    await vi.waitFor(
      async () => expect(await refusedReplicaAuths(leader.url)).toBeGreaterThanOrEqual(4),
      { timeout: 30_000, interval: 200 },
    )
    expect(await withRedis(follower.url, (r) => r.dbsize())).toBeGreaterThanOrEqual(before)
    expect((await db.get('k3', { replica: 'follower' })).value).toBe(3)
    await db.close()
  })
})
