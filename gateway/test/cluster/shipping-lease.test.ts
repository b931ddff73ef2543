/**
 * The shipping lease on a real Redis: one holder at a time, renewal, hand-over, take-over.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { RedisLease } from '../../src/cluster/shipping-lease.js'
import { type RedisServer, startRedis, stopAllRedis } from '../support/redis-server.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

const leases: RedisLease[] = []
afterEach(async () => {
  await Promise.all(leases.splice(0).map((l) => l.close()))
})

function lease(key: string, ttlMs: number) {
  const log: string[] = []
  /** When each event happened (performance.now), taken in the callback, not by polling. */
  const at: number[] = []
  const l = new RedisLease({
    url: server.url,
    key,
    ttlMs,
    onAcquired: () => (log.push('acquired'), at.push(performance.now())),
    onLost: () => (log.push('lost'), at.push(performance.now())),
  })
  leases.push(l)
  return { lease: l, log, at }
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  await vi.waitFor(() => expect(ok(), what).toBe(true), { timeout: ms, interval: 10 })
}

describe('RedisLease', () => {
  it('has one holder at a time, which keeps it by renewing past its ttl', async () => {
    // A ttl of 300 ms (renewals every 100 ms) lost the lease to B whenever the machine stalled
    // for 300 ms; at 1500 ms a renewal may come ~1 s late and still hold it.
    const TTL = 1500
    const key = `lease:${randomUUID()}`
    const a = lease(key, TTL)
    a.lease.start()
    await until('a holds it', () => a.lease.held)
    const b = lease(key, TTL)
    b.lease.start()
    // Two ttls pass (this only paces the test; the verdict is who holds the key after them):
    // without renewals the key would have expired and B, trying every ttl/3, taken it.
    const passed = performance.now() + 2 * TTL
    await vi.waitFor(() => expect(performance.now()).toBeGreaterThan(passed), {
      timeout: 4 * TTL,
      interval: 100,
    })
    expect([a.lease.held, b.lease.held]).toEqual([true, false])
    expect(a.log).toEqual(['acquired'])
    expect(b.log).toEqual([])
    expect(await server.command('GET', key)).toContain(a.lease.token)
  })

  it('hands over at once when the holder closes', async () => {
    const key = `lease:${randomUUID()}`
    const a = lease(key, 3000)
    a.lease.start()
    await until('a holds it', () => a.lease.held)
    const b = lease(key, 3000)
    b.lease.start()
    await a.lease.close()
    expect(a.log).toEqual(['acquired', 'lost'])
    // B retries every ttl/3; the key is gone, so it gets it on its next try, not after a ttl.
    await until('b holds it', () => b.lease.held, 1500)
  })

  it('is lost by a holder whose token is no longer there, and taken by the other', async () => {
    const key = `lease:${randomUUID()}`
    const a = lease(key, 300)
    a.lease.start()
    await until('a holds it', () => a.lease.held)
    // As if it had expired while A was cut off and B had taken it.
    const b = lease(key, 300)
    await server.command('DEL', key)
    b.lease.start()
    await until('b holds it', () => b.lease.held)
    await until('a lost it', () => !a.lease.held)
    expect(a.log).toEqual(['acquired', 'lost'])
  })

  it('gives up a lease it cannot renew before anyone else could take it', async () => {
    // A ttl of 3 s: the lease ends itself at most ttl - 150 ms after its last renewal was sent
    // (which was before the pause), so the bound below has 150 ms (plus the time between that
    // renewal and the pause) of slack for late timers; at 600 ms the slack was 30 ms, and the
    // moment was taken by polling every 10 ms.
    const TTL = 3000
    const key = `lease:${randomUUID()}`
    const a = lease(key, TTL)
    a.lease.start()
    await until('a holds it', () => a.lease.held)
    server.pause()
    const pausedAt = performance.now()
    try {
      await until('a gave it up', () => !a.lease.held, 3 * TTL)
      // Within its ttl of the last renewal: before the key could have expired in Redis.
      expect(a.log).toEqual(['acquired', 'lost'])
      expect(a.at[1]! - pausedAt).toBeLessThan(TTL)
    } finally {
      server.resume()
    }
    await until('a holds it again', () => a.lease.held)
  })
})
