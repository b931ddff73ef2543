/**
 * Followers on Redis replicas (REPLICAOF): Redis's own replication carries the leader's script
 * effects, and keyspace notifications on the replica wake the follower's waiters.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { HLC_ZERO, hlcFrom } from '@causeway/core'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  RedisPartitionReplica,
  type RedisPartitionReplicaOptions,
} from '../../../src/storage/redis/index.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { entry, ship } from '../../support/log-entries.js'

let leaderServer: RedisServer
let followerServers: RedisServer[]
beforeAll(async () => {
  leaderServer = await startRedis()
  followerServers = await Promise.all([startRedis(), startRedis()])
  await Promise.all(followerServers.map((f) => f.replicaOf(leaderServer)))
})
afterAll(stopAllRedis)

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

/** A leader on `leader` and one follower per server in `followers`, in a fresh namespace. */
async function group(leader: RedisServer, followers: RedisServer[]) {
  const base = { namespace: `follow-${randomUUID()}`, region: 0, partition: 1, regions: 2 }
  const make = (
    server: RedisServer,
    replica: number,
    extra?: Partial<RedisPartitionReplicaOptions>,
  ) => {
    const r = new RedisPartitionReplica({ ...base, ...extra, url: server.url, replica })
    cleanup.push(() => r.close())
    return r
  }
  const lead = make(leader, 0)
  const follow = followers.map((f, i) => make(f, i + 1))
  await Promise.all([lead, ...follow].map((r) => r.open()))
  return { lead, follow, make }
}

function client(server: RedisServer): Redis {
  const redis = new Redis(server.url)
  cleanup.push(() => redis.disconnect())
  return redis
}

describe('Redis 7.0 on a replica (measured)', () => {
  it('fires keyspace notifications for a leader Lua script’s effects', async () => {
    const { lead } = await group(leaderServer, [])
    const follower = followerServers[0]!
    await follower.command('CONFIG', 'SET', 'notify-keyspace-events', 'Kh')
    const subscriber = client(follower)
    const reader = client(follower)
    const events: { event: string; sv0: string | null; ms: number }[] = []
    let sentAt = 0
    const three = new Promise<void>((resolve) =>
      subscriber.on('message', (_channel: string, event: string) => {
        const ms = Date.now() - sentAt
        // What the replica holds when the notification arrives.
        void reader.hget(lead.keys.sv, '0').then((sv0) => {
          events.push({ event, sv0, ms })
          if (events.length === 3) resolve()
        })
      }),
    )
    await subscriber.subscribe(lead.keys.svChannel(0))
    for (let i = 1; i <= 3; i++) {
      sentAt = Date.now()
      await lead.write('k', String(i), HLC_ZERO)
    }
    await three
    // One `hset` on the sv key per script.
    expect(events.map((e) => e.event)).toEqual(['hset', 'hset', 'hset'])
    // The k-th notification arrives with at least k writes in place (later ones may have landed
    // too before the HGET ran).
    events.forEach((e, k) => expect(Number(e.sv0)).toBeGreaterThanOrEqual(k + 1))
    for (const e of events) expect(e.ms).toBeLessThan(1000)
  })

  it('fires no keyspace notification when a full resync replaces the replica’s data', async () => {
    const leader = await startRedis()
    const follower = await startRedis({ notifyKeyspaceEvents: 'KEA' })
    await follower.replicaOf(leader)
    const { lead } = await group(leader, [])
    await lead.write('k', '1', HLC_ZERO)
    await lead.waitReplicas(1, 2000)
    const subscriber = client(follower)
    const events: string[] = []
    subscriber.on('pmessage', (_p: string, channel: string, event: string) =>
      events.push(`${channel} ${event}`),
    )
    await subscriber.psubscribe('__key*@*__:*')
    await follower.command('REPLICAOF', 'NO', 'ONE')
    await leader.restart()
    await vi.waitFor(() => expect(lead.available).toBe(true), { timeout: 5000 })
    await lead.write('k', '2', HLC_ZERO)
    await follower.replicaOf(leader)
    const reader = client(follower)
    expect(await reader.hget(lead.keys.sv, '0')).toBe('2')
    // A marker written at the leader after the resync: the replica notifies in stream order, so
    // once the marker's notifications are in, the resync's would be too.
    const marker = `marker-${randomUUID()}`
    await client(leader).set(marker, '1')
    await vi.waitFor(() => expect(events.length).toBeGreaterThan(0))
    expect(events.every((e) => e.includes(marker))).toBe(true)
  })

  it('wakes a blocking XREAD on a replica for a leader Lua script’s XADD', async () => {
    const { lead } = await group(leaderServer, [])
    const blocked = client(followerServers[0]!)
    const read = blocked.xread('BLOCK', 5000, 'STREAMS', lead.keys.log(0), '$')
    // Until the XREAD reached the server and blocks there, before the write.
    const info = client(followerServers[0]!)
    await vi.waitFor(async () =>
      expect(await info.info('clients')).toMatch(/^blocked_clients:[1-9]/m),
    )
    const started = Date.now()
    await lead.write('k', '"v"', HLC_ZERO)
    const reply = await read
    expect(Date.now() - started).toBeLessThan(1000)
    expect(reply?.[0]?.[1]?.[0]?.[0]).toBe('1-0')
  })

  it('publishes a leader script’s PUBLISH on the replica once it has applied the script’s effects', async () => {
    const { lead } = await group(leaderServer, [])
    const follower = followerServers[0]!
    const subscriber = client(follower)
    const reader = client(follower)
    const seen: { message: string; sv0: string | null; value: string | null }[] = []
    const three = new Promise<void>((resolve) =>
      subscriber.on('message', (channel: string, message: string) => {
        if (channel !== lead.keys.sv) return
        // What the replica holds when the message arrives: the write it announces, at least.
        void Promise.all([
          reader.hget(lead.keys.sv, '0'),
          reader.hget(lead.keys.version('k'), 'v'),
        ]).then(([sv0, value]) => {
          seen.push({ message, sv0, value })
          if (seen.length === 3) resolve()
        })
      }),
    )
    await subscriber.subscribe(lead.keys.sv)
    for (let i = 1; i <= 3; i++) await lead.write('k', String(i), HLC_ZERO)
    await three
    // In order, one per script, each carrying the whole vector.
    expect(seen.map((s) => s.message)).toEqual(['1,0', '2,0', '3,0'])
    seen.forEach((s, k) => {
      expect(Number(s.sv0)).toBeGreaterThanOrEqual(k + 1)
      expect(Number(s.value)).toBeGreaterThanOrEqual(k + 1)
    })
  })

  it('pushes a tracking client of a prefix no key has nothing for writes, and a flush for a full resync', async () => {
    const leader = await startRedis()
    const follower = await startRedis()
    await follower.replicaOf(leader)
    const { lead } = await group(leader, [])
    // RESP2, redirected to itself: ioredis surfaces RESP3 invalidation pushes nowhere.
    const watcher = new Redis(follower.url, { protocol: 2 })
    cleanup.push(() => watcher.disconnect())
    const id = await watcher.client('ID')
    await watcher.call(
      'CLIENT',
      'TRACKING',
      'ON',
      'REDIRECT',
      String(id),
      'BCAST',
      'PREFIX',
      lead.keys.resync,
    )
    const pushes: string[] = []
    let pushed: () => void = () => {}
    watcher.on('message', (channel: string, keys: string) => {
      if (channel !== '__redis__:invalidate') return
      pushes.push(keys)
      pushed()
    })
    // The sv channel too, to know when the replica has applied the write.
    await watcher.subscribe('__redis__:invalidate', lead.keys.sv)
    const next = () => new Promise<void>((resolve) => (pushed = resolve))

    const applied = new Promise<void>((resolve) =>
      watcher.on('message', (channel: string) => channel === lead.keys.sv && resolve()),
    )
    await lead.write('k', '1', HLC_ZERO)
    await applied
    expect(pushes).toEqual([])

    // A full resync (the leader restarted with a new replication id) replaces the replica's data:
    // the replica sends a flush (an empty payload), which keyspace notifications never report.
    await follower.command('REPLICAOF', 'NO', 'ONE')
    await leader.restart()
    await vi.waitFor(() => expect(lead.available).toBe(true), { timeout: 5000 })
    await lead.write('k', '2', HLC_ZERO)
    const arrived = next()
    await follower.replicaOf(leader)
    await arrived
    expect(pushes).toEqual([''])
  })
})

describe('follower replica', () => {
  it('wakes its waiters on writes replicated from the leader', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    const [f1, f2] = follow as [RedisPartitionReplica, RedisPartitionReplica]
    const started = Date.now()
    const waits = [f1.waitFor([2, 0], started + 5000), f2.waitFor([2, 0], started + 5000)]
    await lead.write('a', '1', HLC_ZERO)
    await lead.write('b', '2', HLC_ZERO)
    expect(await Promise.all(waits)).toEqual([true, true])
    expect(Date.now() - started).toBeLessThan(1000)
    // Known without a read: the notifications carried it.
    expect(f1.sv()).toEqual([2, 0])
    expect(f2.sv()).toEqual([2, 0])
    expect(await f1.read('b')).toEqual({
      version: { value: '2', ts: expect.any(String), dc: 0 },
      sv: [2, 0],
    })
    expect(await f1.readLog(0, 0, 10)).toEqual(await lead.readLog(0, 0, 10))
  })

  it('learns each advance from the published sv, reading nothing back', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    // On the followers' servers (the leader's scripts run HMGETs of their own).
    const reads = () =>
      Promise.all(
        followerServers.map(async (server) => {
          const info = await server.command('INFO', 'commandstats')
          return Number(/cmdstat_hmget:calls=(\d+)/.exec(info)?.[1] ?? 0)
        }),
      )
    const before = await reads()
    const started = Date.now()
    const waits = follow.map((f) => f.waitFor([20, 0], started + 5000))
    const heard: (readonly number[])[] = []
    follow[0]!.onAdvance((sv) => heard.push(sv))
    for (let i = 0; i < 20; i++) await lead.write('k', String(i), HLC_ZERO)
    expect(await Promise.all(waits)).toEqual([true, true])
    // Each replica's first look at sv (the waits above) at most; no read per write.
    const after = await reads()
    after.forEach((n, i) => expect(n - before[i]!).toBeLessThanOrEqual(2))
    expect(heard.at(-1)).toEqual([20, 0])
    expect(follow.map((f) => f.sv())).toEqual([
      [20, 0],
      [20, 0],
    ])
  })

  it('also follows entries the leader received from other regions', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    const now = Date.now()
    const waiting = follow[0]!.waitFor([0, 2], now + 5000)
    await lead.receive(
      ship(1, [
        entry(1, 1, 'x', '"x1"', hlcFrom(now, 1), now),
        entry(1, 2, 'x', '"x2"', hlcFrom(now, 2), now),
      ]),
    )
    expect(await waiting).toBe(true)
    expect((await follow[0]!.read('x')).version).toEqual({
      value: '"x2"',
      ts: hlcFrom(now, 2),
      dc: 1,
    })
  })

  it('shows sv and data that agree at every read while the leader writes', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    const keys = 5
    const total = 150
    // Write idx i goes to key k(i % keys) with value i, so the version a read must return
    // follows from its sv alone.
    const writing = (async () => {
      for (let i = 1; i <= total; i += 3)
        await Promise.all(
          [i, i + 1, i + 2]
            .filter((n) => n <= total)
            .map((n) => lead.write(`k${n % keys}`, String(n), HLC_ZERO)),
        )
    })()
    let done = false
    void writing.finally(() => (done = true))
    let reads = 0
    let mismatches = 0
    for (let round = 0; round < 3000 && !(done && round > 0); round++) {
      const results = await Promise.all(
        follow.flatMap((f) =>
          Array.from({ length: keys }, (_, k) => f.read(`k${k}`).then((x) => ({ k, x }))),
        ),
      )
      for (const { k, x } of results) {
        reads++
        const sv0 = x.sv[0]!
        let expected: number | undefined
        for (let n = sv0; n >= 1; n--)
          if (n % keys === k) {
            expected = n
            break
          }
        if (x.version?.value !== (expected === undefined ? undefined : String(expected)))
          mismatches++
      }
    }
    await writing
    expect(mismatches).toBe(0)
    expect(reads).toBeGreaterThan(100)
    for (const f of follow) expect(await f.waitFor([total, 0], Date.now() + 5000)).toBe(true)
  })

  it('refuses writes: the Redis replica is read-only', async () => {
    const { follow } = await group(leaderServer, followerServers)
    const f = follow[0]!
    await expect(f.write('k', '1', HLC_ZERO)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    const now = Date.now()
    const e = entry(1, 1, 'k', undefined, hlcFrom(now, 0), now)
    await expect(f.receive(ship(1, [e]))).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    await expect(f.apply([e])).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    expect(await f.read('k')).toEqual({ version: undefined, sv: [0, 0] })
  })

  it('lets the leader WAIT for its Redis replicas', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    await lead.write('k', '1', HLC_ZERO)
    expect(await lead.waitReplicas(2, 2000)).toBe(2)
    // Acknowledged by both replicas: readable there without waiting.
    for (const f of follow) expect((await f.read('k')).sv).toEqual([1, 0])
  })

  it('shares one WAIT among the calls made while it waits its turn', async () => {
    const { lead, follow } = await group(leaderServer, followerServers)
    const waits = async () => {
      const info = await leaderServer.command('INFO', 'commandstats')
      return Number(/cmdstat_wait:calls=(\d+)/.exec(info)?.[1] ?? 0)
    }
    const before = await waits()
    // Ten majority writes at once, each asking for its replicas when acknowledged.
    const acked = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        await lead.write(`k${i}`, String(i), HLC_ZERO)
        return lead.waitReplicas(2, 2000)
      }),
    )
    expect(acked).toEqual(new Array(10).fill(2))
    expect((await waits()) - before).toBeLessThan(10)
    // Every write is on both replicas: each waited for a WAIT sent after it.
    for (const f of follow) expect((await f.read('k9')).sv).toEqual([10, 0])
    // Other arguments get a WAIT of their own.
    const [two, one] = await Promise.all([lead.waitReplicas(2, 2000), lead.waitReplicas(1, 2000)])
    expect(two).toBe(2)
    expect(one).toBeGreaterThanOrEqual(1)
  })

  it('reopens with the replicated sv', async () => {
    const { lead, follow, make } = await group(leaderServer, followerServers)
    for (let i = 0; i < 4; i++) await lead.write('k', String(i), HLC_ZERO)
    await lead.waitReplicas(2, 2000)
    await follow[1]!.close()
    const back = make(followerServers[1]!, 2, { namespace: namespaceOf(lead) })
    await back.open()
    expect(back.sv()).toEqual([4, 0])
  })

  it('catches up by itself after a full resync', async () => {
    const leader = await startRedis()
    const follower = await startRedis()
    await follower.replicaOf(leader)
    const { lead, follow } = await group(leader, [follower])
    const f = follow[0]!
    await lead.write('k', '1', HLC_ZERO)
    expect(await f.waitFor([1, 0], Date.now() + 5000)).toBe(true)
    // A waiter from before the resync, which no further write will wake.
    const waiting = f.waitFor([3, 0], Date.now() + 8000)
    // Detach, restart the leader (a new replication id forces a full resync) and write meanwhile.
    await follower.command('REPLICAOF', 'NO', 'ONE')
    await leader.restart()
    await vi.waitFor(() => expect(lead.available).toBe(true), { timeout: 5000 })
    for (let i = 2; i <= 3; i++) await lead.write('k', String(i), HLC_ZERO)
    const resynced = Date.now()
    await follower.replicaOf(leader)
    expect(await waiting).toBe(true)
    expect(Date.now() - resynced).toBeLessThan(2000)
    expect(f.sv()).toEqual([3, 0])
    expect((await f.read('k')).version?.value).toBe('3')
  })
})

function namespaceOf(r: RedisPartitionReplica): string {
  const prefix = r.keys.prefix
  return prefix.slice('cw:{'.length, prefix.lastIndexOf(':r'))
}
