/**
 * A lease in Redis that lets exactly one gateway process at a time do a job (ship a partition):
 * `SET key token NX PX ttl` (in a Lua script) takes it, a Lua compare-and-`PEXPIRE` renews it only while it still
 * holds this process's token, and a compare-and-`DEL` gives it back. The holder renews every third
 * of the ttl; a process that dies stops renewing, and another takes the lease once it expires.
 *
 * The holder counts its lease as valid only until `ttl` (less a margin for clock-rate drift) after
 * it *sent* the last successful take or renewal, and a timer of its own ends it then, whatever
 * calls are still waiting for Redis: so it gives up before any other process can take over,
 * whatever the network delay. Shipping stays correct even if two
 * shippers overlapped: the receiver applies each entry once, in order; the lease only avoids the
 * waste.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { LuaScript } from '../storage/redis/lua-script.js'

// Takes the lease when free, or renews it when it still holds our token (also after we gave it
// up locally because a renewal's answer was lost).
const ACQUIRE = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0`)

const RENEW = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

const RELEASE = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

/** Options of a {@link RedisLease}. */
export interface RedisLeaseOptions {
  /** The server holding the lease key. */
  url: string
  /** The lease key. */
  key: string
  /**
   * How long the lease lasts unless renewed, in ms; it is renewed every third of it.
   * @default 3000
   */
  ttlMs?: number
  /**
   * This process's token (unique per holder).
   * @default a random UUID
   */
  token?: string
  /** Called when this process takes the lease. */
  onAcquired: () => void
  /** Called when this process loses it (not renewed in time, taken over, or closed). */
  onLost: () => void
  /**
   * Deadline of a Redis call, in ms.
   * @default a third of ttlMs
   */
  commandTimeoutMs?: number
}

/** One lease, taken and renewed in the background. See the module comment. */
export class RedisLease {
  readonly key: string
  readonly token: string
  readonly #ttlMs: number
  readonly #redis: Redis
  readonly #options: RedisLeaseOptions
  #held = false
  /** Local time (performance.now) until which the lease is surely ours. */
  #validUntil = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  /** Ends a held lease at `#validUntil` unless a renewal moved it. */
  #expiry: ReturnType<typeof setTimeout> | undefined
  #running = false
  #closed = false

  constructor(options: RedisLeaseOptions) {
    this.key = options.key
    this.token = options.token ?? randomUUID()
    this.#ttlMs = options.ttlMs ?? 3000
    this.#options = options
    const timeout = options.commandTimeoutMs ?? Math.max(100, Math.floor(this.#ttlMs / 3))
    this.#redis = new Redis(options.url, {
      lazyConnect: true,
      connectionName: 'causeway:lease',
      connectTimeout: timeout,
      commandTimeout: timeout,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    })
    this.#redis.on('error', () => {})
  }

  /** True while this process holds the lease. */
  get held(): boolean {
    return this.#held
  }

  /** Starts trying to take (and then renew) the lease. */
  start(): void {
    if (this.#running || this.#closed) return
    this.#running = true
    this.#redis.connect().catch(() => {})
    void this.#tick()
  }

  /** Stops, and gives the lease back if held, so another process takes over at once. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#timer)
    clearTimeout(this.#expiry)
    const wasHeld = this.#held
    this.#lose()
    if (wasHeld && this.#redis.status === 'ready') {
      await RELEASE.run(this.#redis, [this.key], [this.token]).catch(() => {})
    }
    this.#redis.disconnect()
  }

  // One take-or-renew attempt, then the next one a third of the ttl later.
  async #tick(): Promise<void> {
    if (this.#closed) return
    const sent = performance.now()
    try {
      if (this.#redis.status !== 'ready') throw new Error('not connected')
      const script = this.#held ? RENEW : ACQUIRE
      const ok =
        Number(await script.run(this.#redis, [this.key], [this.token, String(this.#ttlMs)])) === 1
      if (this.#closed) return
      // A reply that comes too late proves nothing about now; the next attempt reclaims the
      // lease if the token is still there.
      const validUntil = sent + this.#ttlMs - Math.max(10, this.#ttlMs / 20)
      if (ok && validUntil > performance.now()) {
        this.#validUntil = validUntil
        clearTimeout(this.#expiry)
        this.#expiry = setTimeout(() => this.#lose(), validUntil - performance.now())
        if (!this.#held) {
          this.#held = true
          this.#options.onAcquired()
        }
      } else if (!ok && this.#held) {
        this.#lose()
      }
    } catch {
      // Unknown outcome: the expiry timer ends the lease when it is no longer surely ours.
    }
    if (this.#closed) return
    let wait = Math.floor(this.#ttlMs / 3)
    // Never sleep past the end of a lease we hold without re-checking it.
    if (this.#held) wait = Math.max(1, Math.min(wait, this.#validUntil - performance.now()))
    this.#timer = setTimeout(() => void this.#tick(), wait)
  }

  #lose(): void {
    clearTimeout(this.#expiry)
    if (!this.#held) return
    this.#held = false
    this.#validUntil = 0
    this.#options.onLost()
  }
}
