/**
 * Behaviour of a Redis leader replica beyond the shared compliance suite: the HLC rule as the Lua
 * script applies it, push-driven waiting (no polling), durability settings, WAIT, and
 * restarts of the replica object and of the redis-server process (AOF).
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { HLC_MAX_COUNTER, HLC_ZERO, hlcFrom, hlcMillis, hlcParts } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RedisPartitionReplica } from '../../../src/storage/redis/index.js'
import { replicasClosedAfterEach } from '../../support/redis-replicas.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { entry, ship } from '../../support/log-entries.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

const replicaOn = replicasClosedAfterEach('leader', { partition: 3 })

/** How many times `command` ran on `target` (from INFO commandstats). */
async function calls(target: RedisServer, command: string): Promise<number> {
  const info = await target.command('INFO', 'commandstats')
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)
  return match ? Number(match[1]) : 0
}

describe('HLC in the write script', () => {
  it('stamps from the Redis server clock', async () => {
    const r = replicaOn(server)
    await r.open()
    const before = Date.now()
    const e = await r.write('k', '1', HLC_ZERO)
    const after = Date.now()
    // Same machine, so the server's TIME lies between the two readings (1 ms of rounding).
    expect(hlcMillis(e.ts)).toBeGreaterThanOrEqual(before - 1)
    expect(hlcMillis(e.ts)).toBeLessThanOrEqual(after + 1)
    expect(e.at).toBe(hlcMillis(e.ts))
    expect(await r.hlc()).toBe(e.ts)
  })

  it('follows NuKV updateHLC for a dependency ahead of the clock', async () => {
    const r = replicaOn(server)
    await r.open()
    const ahead = Date.now() + 60_000
    // l = dt.l > physical, > last: c = dt.c + 1
    expect((await r.write('k', '1', hlcFrom(ahead, 41))).ts).toBe(hlcFrom(ahead, 42))
    // l = last.l = dt.l: c = max(last.c, dt.c) + 1
    expect((await r.write('k', '2', hlcFrom(ahead, 7))).ts).toBe(hlcFrom(ahead, 43))
    expect((await r.write('k', '3', hlcFrom(ahead, 50))).ts).toBe(hlcFrom(ahead, 51))
    // l = last.l only: c = last.c + 1
    expect((await r.write('k', '4', HLC_ZERO)).ts).toBe(hlcFrom(ahead, 52))
  })

  it('carries a full counter into the milliseconds', async () => {
    const r = replicaOn(server)
    await r.open()
    const ahead = Date.now() + 60_000
    expect((await r.write('k', '1', hlcFrom(ahead, HLC_MAX_COUNTER - 1))).ts).toBe(
      hlcFrom(ahead, HLC_MAX_COUNTER),
    )
    expect((await r.write('k', '2', HLC_ZERO)).ts).toBe(hlcFrom(ahead + 1, 0))
    // A dependency with a full counter carries too.
    const far = ahead + 10_000
    expect((await r.write('k', '3', hlcFrom(far, HLC_MAX_COUNTER))).ts).toBe(hlcFrom(far + 1, 0))
  })

  it('formats the largest 48-bit milliseconds exactly', async () => {
    const r = replicaOn(server)
    await r.open()
    const top = 2 ** 48 - 2
    expect((await r.write('k', '1', hlcFrom(top, 5))).ts).toBe(hlcFrom(top, 6))
    expect(hlcParts(await r.hlc())).toEqual({ l: top, c: 6 })
  })

  it('refuses a malformed dependency time before touching Redis', async () => {
    const r = replicaOn(server)
    await r.open()
    await expect(r.write('k', '1', 'FFFF')).rejects.toMatchObject({ code: 'INVALID_HLC' })
    expect(r.sv()).toEqual([0, 0])
    expect(await r.readLog(0, 0, 10)).toEqual([])
  })
})

describe('waiting for sv', () => {
  it('is woken by pushes from the server, not by polling', async () => {
    const r = replicaOn(server)
    await r.open()
    const writer = replicaOn(server, { namespace: namespaceOf(r) })
    await writer.open()
    const reads = await calls(server, 'hmget')
    const started = Date.now()
    const waiting = r.waitFor([0, 1], started + 5000)
    // Nothing happens for 300 ms: the waiter must cost (at most) the one look it takes at start.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await calls(server, 'hmget')) - reads).toBeLessThanOrEqual(1)
    // Another object (as another gateway would) receives the entry; `r` learns of it by a push.
    await writer.receive(ship(1, [entry(1, 1, 'k', undefined, hlcFrom(started, 0), started)]))
    expect(await waiting).toBe(true)
    expect(r.sv()).toEqual([0, 1])
  })

  it('tells listeners of advances made through another connection', async () => {
    const r = replicaOn(server)
    await r.open()
    const other = replicaOn(server, { namespace: namespaceOf(r) })
    await other.open()
    const seen: number[][] = []
    const advanced = new Promise<void>((resolve) =>
      r.onAdvance((sv) => {
        seen.push([...sv])
        if (sv[0] === 3) resolve()
      }),
    )
    for (let i = 0; i < 3; i++) await other.write('k', String(i), HLC_ZERO)
    await advanced
    expect(seen.at(-1)).toEqual([3, 0])
    expect(seen.length).toBeLessThanOrEqual(3)
  })

  it('needs no keyspace-notification configuration on the server', async () => {
    expect(await server.command('CONFIG', 'GET', 'notify-keyspace-events')).toMatch(/\$0\r\n/)
    const r = replicaOn(server)
    await r.open()
    const other = replicaOn(server, { namespace: namespaceOf(r) })
    await other.open()
    const waiting = r.waitFor([1, 0], Date.now() + 3000)
    await other.write('k', '1', HLC_ZERO)
    expect(await waiting).toBe(true)
    // And it changed none.
    expect(await server.command('CONFIG', 'GET', 'notify-keyspace-events')).toMatch(/\$0\r\n/)
  })
})

describe('scripts', () => {
  it('keeps working when the server forgot its scripts', async () => {
    const r = replicaOn(server)
    await r.open()
    await r.write('k', '1', HLC_ZERO)
    await server.command('SCRIPT', 'FLUSH')
    const evals = await calls(server, 'eval')
    expect((await r.write('k', '2', HLC_ZERO)).idx).toBe(2)
    expect((await r.read('k')).version?.value).toBe('2')
    // Each script came back through one EVAL after its NOSCRIPT: the write's, the read's and,
    // when the write's push has been handled by now, the state re-read's.
    const evalled = (await calls(server, 'eval')) - evals
    expect(evalled).toBeGreaterThanOrEqual(2)
    expect(evalled).toBeLessThanOrEqual(3)
  })
})

describe('durability', () => {
  it('runs test servers with appendfsync always, and everysec on request', async () => {
    expect(await server.command('CONFIG', 'GET', 'appendfsync')).toMatch(/always/)
    expect(await server.command('CONFIG', 'GET', 'appendonly')).toMatch(/yes/)
    const relaxed = await startRedis({ appendfsync: 'everysec' })
    expect(await relaxed.command('CONFIG', 'GET', 'appendfsync')).toMatch(/everysec/)
    await relaxed.destroy()
  })

  it('WAIT reports how many Redis replicas acknowledged the writes', async () => {
    const r = replicaOn(server)
    await r.open()
    await r.write('k', '1', HLC_ZERO)
    expect(await r.waitReplicas(0, 100)).toBe(0)
    const started = Date.now()
    // No replica: WAIT gives up at its timeout with 0.
    expect(await r.waitReplicas(1, 150)).toBe(0)
    expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    await expect(r.waitReplicas(-1, 10)).rejects.toMatchObject({ code: 'INVALID_OPTION' })
  })

  it('does not hold up other writes and reads while it WAITs', async () => {
    const r = replicaOn(server)
    await r.open()
    await r.write('k', '1', HLC_ZERO)
    const started = Date.now()
    const waiting = r.waitReplicas(1, 600)
    const e = await r.write('k', '2', HLC_ZERO)
    expect((await r.read('k')).version?.value).toBe('2')
    expect(Date.now() - started).toBeLessThan(300)
    expect(await waiting).toBe(0)
    expect(e.idx).toBe(2)
  })
})

describe('restart', () => {
  async function writeSome(r: RedisPartitionReplica) {
    const local = [
      await r.write('a', '"a"', HLC_ZERO),
      await r.write('b', '{"x":1}', HLC_ZERO),
      await r.write('a', undefined, HLC_ZERO),
    ]
    const now = Date.now()
    const shipped = entry(1, 1, 'c', '"c"', hlcFrom(now + 5000, 1), now)
    await r.receive(ship(1, [shipped]))
    return { local, shipped, hlc: await r.hlc() }
  }

  async function expectBack(
    r: RedisPartitionReplica,
    before: Awaited<ReturnType<typeof writeSome>>,
  ) {
    expect(r.sv()).toEqual([3, 1])
    expect(await r.hlc()).toBe(before.hlc)
    expect(await r.readLog(0, 0, 10)).toEqual(before.local)
    expect(await r.readLog(1, 0, 10)).toEqual([before.shipped])
    expect((await r.read('a')).version).toEqual({ ts: before.local[2]!.ts, dc: 0 })
    expect((await r.read('b')).version).toEqual({
      value: '{"x":1}',
      ts: before.local[1]!.ts,
      dc: 0,
    })
    expect((await r.read('c')).version).toEqual({ value: '"c"', ts: before.shipped.ts, dc: 1 })
    const next = await r.write('d', '1', HLC_ZERO)
    expect(next.idx).toBe(4)
    expect(next.ts > before.shipped.ts).toBe(true)
  }

  it('brings everything back when the replica object is closed and reopened', async () => {
    const r = replicaOn(server)
    await r.open()
    const before = await writeSome(r)
    await r.close()
    const back = replicaOn(server, { namespace: namespaceOf(r) })
    await back.open()
    await expectBack(back, before)
  })

  it('brings everything back after the redis-server process restarts from its AOF', async () => {
    const own = await startRedis()
    try {
      const r = replicaOn(own)
      await r.open()
      const before = await writeSome(r)
      await r.close()
      await own.restart()
      const back = replicaOn(own, { namespace: namespaceOf(r) })
      await back.open()
      await expectBack(back, before)
    } finally {
      await own.destroy()
    }
  })

  it('keeps every acknowledged write when the redis-server process is killed', async () => {
    const own = await startRedis()
    try {
      const r = replicaOn(own)
      await r.open()
      const before = await writeSome(r)
      await own.kill()
      await r.close()
      await own.restart()
      const back = replicaOn(own, { namespace: namespaceOf(r) })
      await back.open()
      await expectBack(back, before)
    } finally {
      await own.destroy()
    }
  })
})

describe('reading its own log', () => {
  it('serves its latest own writes from memory, exactly as the server holds them', async () => {
    const r = replicaOn(server)
    await r.open()
    const written = [
      await r.write('a', '"a"', HLC_ZERO),
      await r.write('b', undefined, HLC_ZERO),
      await r.writeSibling('c', '"c"', HLC_ZERO, []),
      await r.write('a', '{"x":1}', HLC_ZERO),
    ]
    const ranges = await calls(server, 'xrange')
    expect(await r.readLog(0, 0, 10)).toEqual(written)
    expect(await r.readLog(0, 1, 2)).toEqual(written.slice(1, 3))
    expect(await calls(server, 'xrange')).toBe(ranges)
    // What another gateway (a fresh object, nothing in memory) reads from the server.
    const fresh = replicaOn(server, { namespace: namespaceOf(r) })
    await fresh.open()
    expect(await fresh.readLog(0, 0, 10)).toEqual(written)
    expect(await calls(server, 'xrange')).toBeGreaterThan(ranges)
  })

  it('reads what another gateway wrote in between from the server', async () => {
    const r = replicaOn(server)
    await r.open()
    const other = replicaOn(server, { namespace: namespaceOf(r) })
    await other.open()
    const written = [
      await r.write('k', '1', HLC_ZERO),
      await r.write('k', '2', HLC_ZERO),
      await other.write('k', '3', HLC_ZERO),
      await r.write('k', '4', HLC_ZERO),
      await r.write('k', '5', HLC_ZERO),
    ]
    expect(written.map((e) => e.idx)).toEqual([1, 2, 3, 4, 5])
    expect(await r.readLog(0, 0, 10)).toEqual(written)
    expect(await r.readLog(0, 2, 10)).toEqual(written.slice(2))
    expect(await other.readLog(0, 0, 10)).toEqual(written)
  })

  it('forgets its writes when the server comes back, which may have lost them', async () => {
    const own = await startRedis()
    try {
      const r = replicaOn(own)
      await r.open()
      for (let i = 0; i < 3; i++) await r.write('k', String(i), HLC_ZERO)
      // As a server restarted under appendfsync everysec may: the last writes are gone.
      await own.command('DEL', r.keys.log(0))
      await own.restart()
      for (let i = 0; i < 100 && !r.available; i++) await new Promise((x) => setTimeout(x, 50))
      expect(r.available).toBe(true)
      expect(await r.readLog(0, 0, 10)).toEqual([])
    } finally {
      await own.destroy()
    }
  })
})

/** The namespace a replica was made with (the tests use plain ASCII ones). */
function namespaceOf(r: RedisPartitionReplica): string {
  const prefix = r.keys.prefix
  return prefix.slice('cw:{'.length, prefix.lastIndexOf(':r'))
}
