/**
 * A redis-server that goes away: calls fail fast with BACKEND_UNAVAILABLE (503), waiting reads
 * end at their deadline, and the replica recovers by itself, with every acknowledged write.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { type CausewayError, HLC_ZERO, type Hlc } from '@causeway/core'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import type { LogEntry } from '../../../src/storage/partition-replica.js'
import {
  RedisPartitionReplica,
  type RedisPartitionReplicaOptions,
} from '../../../src/storage/redis/index.js'
import { type RedisServer, freePort, startRedis, stopAllRedis } from '../../support/redis-server.js'
import { entry, ship } from '../../support/log-entries.js'

afterAll(stopAllRedis)

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

function replicaOn(
  server: RedisServer,
  options: Partial<RedisPartitionReplicaOptions> = {},
): RedisPartitionReplica {
  const r = new RedisPartitionReplica({
    url: server.url,
    namespace: `faults-${randomUUID()}`,
    region: 0,
    partition: 0,
    replica: 0,
    regions: 2,
    ...options,
  })
  cleanup.push(() => r.close())
  return r
}

/** Resolves with the error `promise` rejects with and how long that took. */
async function failure(
  call: () => Promise<unknown>,
): Promise<{ error: CausewayError; ms: number }> {
  const started = Date.now()
  try {
    await call()
  } catch (error) {
    return { error: error as CausewayError, ms: Date.now() - started }
  }
  throw new Error('expected a failure')
}

/** Waits (bounded) until the replica's connections are back. */
async function recovered(r: RedisPartitionReplica): Promise<void> {
  await vi.waitFor(() => expect(r.available, 'reconnected within 5 s').toBe(true), {
    timeout: 5000,
  })
}

describe('redis-server down and up again', () => {
  it('fails fast, ends waiting reads at their deadline, recovers with every acknowledged write', async () => {
    const server = await startRedis()
    const r = replicaOn(server)
    await r.open()
    const acknowledged: LogEntry[] = []
    for (let i = 0; i < 20; i++) acknowledged.push(await r.write(`k${i}`, String(i), HLC_ZERO))
    const started = Date.now()
    const waitingBefore = r.waitFor([21, 0], started + 1500)

    await server.kill()
    // Thunks: each call starts only when awaited, so no rejection sits unhandled meanwhile.
    for (const call of [
      () => r.write('k', '1', HLC_ZERO),
      () => r.read('k1'),
      () => r.readLog(0, 0, 10),
      () => r.receive(ship(1, [entry(1, 1, 'k', '1', HLC_ZERO)])),
      () => r.waitReplicas(1, 100),
    ]) {
      const { error, ms } = await failure(call)
      expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', status: 503 })
      expect(ms).toBeLessThan(500)
    }
    expect(r.available).toBe(false)
    // What the replica knew stays known.
    expect(r.sv()).toEqual([20, 0])
    expect(await r.waitFor([20, 0], Date.now() + 1000)).toBe(true)
    const t = Date.now()
    expect(await r.waitFor([21, 0], t + 200)).toBe(false)
    expect(Date.now() - t).toBeGreaterThanOrEqual(195)
    expect(await waitingBefore).toBe(false)
    expect(Date.now() - started).toBeGreaterThanOrEqual(1495)

    await server.restart()
    await recovered(r)
    expect(await r.readLog(0, 0, 100)).toEqual(acknowledged)
    for (const [i, e] of acknowledged.entries())
      expect((await r.read(`k${i}`)).version).toEqual({ value: String(i), ts: e.ts, dc: 0 })
    expect((await r.write('k', 'next', HLC_ZERO)).idx).toBe(21)

    // Notifications flow again (the restarted server had them off): a write by another
    // connection wakes a waiter.
    const other = replicaOn(server, {
      namespace: r.keys.prefix.slice(4, r.keys.prefix.lastIndexOf(':r')),
    })
    await other.open()
    const waiting = r.waitFor([22, 0], Date.now() + 3000)
    await other.write('k', 'by-other', HLC_ZERO)
    expect(await waiting).toBe(true)
  })

  it('loses no acknowledged write when the server is killed in the middle of writing', async () => {
    const server = await startRedis()
    const r = replicaOn(server)
    await r.open()
    const acknowledged: LogEntry[] = []
    const failed: string[] = []
    let killed: Promise<void> | undefined
    // Five writers in parallel; the server dies after the 60th acknowledgement.
    await Promise.all(
      Array.from({ length: 5 }, async (_, w) => {
        for (let i = 0; i < 200; i++) {
          try {
            acknowledged.push(await r.write(`w${w}`, String(i), HLC_ZERO))
            if (acknowledged.length === 60) killed = server.kill()
          } catch (error) {
            expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
            failed.push(`w${w}/${i}`)
            if (failed.length >= 20) return
          }
        }
      }),
    )
    await killed
    expect(acknowledged.length).toBeGreaterThanOrEqual(60)
    expect(failed.length).toBeGreaterThan(0)

    await server.restart()
    await recovered(r)
    const log = await r.readLog(0, 0, 10_000)
    // Gapless, and every acknowledged write is there exactly as acknowledged.
    expect(log.map((e) => e.idx)).toEqual(log.map((_, i) => i + 1))
    const byIdx = new Map<number, Hlc>(log.map((e) => [e.idx, e.ts]))
    for (const e of acknowledged) expect(byIdx.get(e.idx)).toBe(e.ts)
    expect((await r.read('w0')).sv[0]).toBe(log.length)
  })

  it('fails a call that gets no reply in time, and works again when the server does', async () => {
    const server = await startRedis()
    const r = replicaOn(server, { commandTimeoutMs: 200 })
    await r.open()
    await r.write('k', '1', HLC_ZERO)
    server.pause()
    try {
      const { error, ms } = await failure(() => r.read('k'))
      expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
      expect(ms).toBeGreaterThanOrEqual(190)
      expect(ms).toBeLessThan(1000)
    } finally {
      server.resume()
    }
    expect((await r.read('k')).version?.value).toBe('1')
  })

  it('closes promptly even when the server hangs', async () => {
    const server = await startRedis()
    const r = replicaOn(server, { commandTimeoutMs: 200 })
    await r.open()
    await r.write('k', '1', HLC_ZERO)
    server.pause()
    try {
      const pending = r.write('k', '2', HLC_ZERO).catch((error: unknown) => error)
      const waiting = r.waitFor([5, 0], Date.now() + 60_000)
      const started = Date.now()
      await r.close()
      expect(Date.now() - started).toBeLessThan(1500)
      // The write's fate is unknown (it may run when the server wakes): reported as unavailable.
      expect(await pending).toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
      expect(await waiting).toBe(false)
    } finally {
      server.resume()
    }
  })

  it('refuses to open, fast, when nothing listens', async () => {
    const port = await freePort()
    const r = new RedisPartitionReplica({
      url: `redis://127.0.0.1:${port}`,
      namespace: 'nobody',
      region: 0,
      partition: 0,
      replica: 0,
      regions: 1,
    })
    const { error, ms } = await failure(() => r.open())
    expect(error).toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
    expect(ms).toBeLessThan(2500)
    expect(r.available).toBe(false)
    await expect(r.read('k')).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' })
  })

  it('keeps a follower serving what it has while its leader is down', async () => {
    const leader = await startRedis()
    const follower = await startRedis()
    await follower.replicaOf(leader)
    const namespace = `faults-${randomUUID()}`
    const lead = replicaOn(leader, { namespace })
    const follow = replicaOn(follower, { namespace, replica: 1 })
    await Promise.all([lead.open(), follow.open()])
    await lead.write('k', '"before"', HLC_ZERO)
    expect(await follow.waitFor([1, 0], Date.now() + 3000)).toBe(true)
    await leader.kill()
    expect((await follow.read('k')).version?.value).toBe('"before"')
    expect(await follow.waitFor([2, 0], Date.now() + 200)).toBe(false)
    await leader.restart()
    await recovered(lead)
    const waiting = follow.waitFor([2, 0], Date.now() + 5000)
    await lead.write('k', '"after"', HLC_ZERO)
    expect(await waiting).toBe(true)
    expect((await follow.read('k')).version?.value).toBe('"after"')
  })
})
