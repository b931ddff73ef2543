/**
 * Rate limiting (`@fastify/rate-limit`): each API key, or each client address when the request
 * needs no key, may make `max` requests per window of `windowMs`; one more is `RATE_LIMITED`
 * (429) with `retry-after` (seconds) and `details.retryAfterMs`, and is not processed. Counters
 * live in this process, or in Redis when one is given, so every gateway of a region shares them.
 *
 * Not limited: `/healthz` (load balancers) and the internal shipping routes (the cluster secret;
 * other regions must never be slowed down by clients' traffic). A Redis that cannot be reached
 * lets requests through rather than failing them (`skipOnError`): the limit protects the
 * gateway, the data does not depend on it.
 *
 * Refused requests (401 `UNAUTHORIZED`, 403 `FORBIDDEN`, `OUT_OF_SCOPE`, ...) are refused before
 * the limiter above counts them (they have no key to count by), so they are counted apart, per
 * client address ({@link limitRefusals}): an address that made `maxRefused` of them in a window
 * gets `RATE_LIMITED` for every request until the window ends. Those counters live in this process.
 */
import rateLimit from '@fastify/rate-limit'
import { CausewayError } from '@causeway/core'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { principalOf } from './auth.js'

/** Options of the gateway's rate limit. */
export interface RateLimitOptions {
  /**
   * Requests per window per API key (per client address without a key); 0 turns the limit off.
   * A scoped key may have its own (`ApiKeySpec.rateLimit`).
   */
  max: number
  /**
   * The window, in ms.
   * @default 1000
   */
  windowMs?: number
  /**
   * A Redis connection holding the counters, shared by every gateway of the region. It should
   * fail fast while disconnected (`enableOfflineQueue: false`).
   * @default counters in this process
   */
  redis?: Redis
  /**
   * Prefix of the counters' Redis keys.
   * @default 'causeway:rate:'
   */
  prefix?: string
  /**
   * Refused requests (answered 401 or 403) per window per client address; once an address has
   * made that many, all its requests are `RATE_LIMITED` until the window ends. 0 turns it off.
   * @default 100
   */
  maxRefused?: number
}

/** The rate limit a production gateway (`causeway gateway`) applies unless configured. */
export const DEFAULT_RATE_LIMIT = Object.freeze({ max: 5000, windowMs: 1000, maxRefused: 100 })

/** Most addresses whose refusals one window counts (the map is cleared every window). */
const MAX_COUNTED_ADDRESSES = 100_000

/** Refused requests per client address in the current fixed window. */
export class RefusalCounter {
  readonly #max: number
  readonly #windowMs: number
  readonly #now: () => number
  #windowStart: number
  #counts = new Map<string, number>()

  constructor(max: number, windowMs: number, now: () => number = Date.now) {
    this.#max = max
    this.#windowMs = windowMs
    this.#now = now
    this.#windowStart = now()
  }

  #roll(): number {
    const now = this.#now()
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now - ((now - this.#windowStart) % this.#windowMs)
      this.#counts = new Map()
    }
    return now
  }

  /** Ms until `address` may be served again, or 0 when it may be now. */
  blockedFor(address: string): number {
    const now = this.#roll()
    return (this.#counts.get(address) ?? 0) >= this.#max
      ? this.#windowStart + this.#windowMs - now
      : 0
  }

  /** Counts one refused request of `address`. */
  count(address: string): void {
    this.#roll()
    const seen = this.#counts.get(address)
    if (seen === undefined && this.#counts.size >= MAX_COUNTED_ADDRESSES) return
    this.#counts.set(address, (seen ?? 0) + 1)
  }
}

/**
 * Counts refused requests (401, 403) per client address and answers `RATE_LIMITED` to an address
 * over `maxRefused` in the window. Register before authentication: an address over its limit is
 * refused before its credentials are checked. Routes whose `config.rateLimit` is `false` are
 * neither counted nor limited. Does nothing when `max` or `maxRefused` is 0.
 */
export function limitRefusals(app: FastifyInstance, options: RateLimitOptions): void {
  const maxRefused = options.maxRefused ?? DEFAULT_RATE_LIMIT.maxRefused
  if (options.max === 0 || maxRefused === 0) return
  const windowMs = options.windowMs ?? DEFAULT_RATE_LIMIT.windowMs
  const refusals = new RefusalCounter(maxRefused, windowMs)
  const exempt = (request: FastifyRequest) =>
    (request.routeOptions.config as { rateLimit?: unknown } | undefined)?.rateLimit === false
  app.addHook('onRequest', async (request, reply) => {
    if (exempt(request)) return
    const waitMs = refusals.blockedFor(request.ip)
    if (waitMs === 0) return
    reply.header('retry-after', String(Math.max(1, Math.ceil(waitMs / 1000))))
    throw new CausewayError(
      'RATE_LIMITED',
      `this address made ${maxRefused} refused requests in ${windowMs} ms; retry in ${Math.ceil(waitMs / 1000)} s`,
      { retryAfterMs: waitMs, limit: maxRefused, windowMs, refused: true },
    )
  })
  app.addHook('onResponse', async (request, reply) => {
    if ((reply.statusCode === 401 || reply.statusCode === 403) && !exempt(request))
      refusals.count(request.ip)
  })
}

function identityOf(request: FastifyRequest): string {
  return principalOf(request)?.id ?? `ip:${request.ip}`
}

/**
 * Registers the rate limiter on `app` (at the root, before any route: it hooks every route
 * added after it, except those whose `config.rateLimit` is `false`). Does nothing when `max` is 0.
 */
export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): void {
  if (options.max === 0) return
  const windowMs = options.windowMs ?? DEFAULT_RATE_LIMIT.windowMs
  app.register(rateLimit, {
    global: true,
    max: (request: FastifyRequest) => principalOf(request)?.rateLimit ?? options.max,
    timeWindow: windowMs,
    keyGenerator: identityOf,
    skipOnError: true,
    ...(options.redis === undefined
      ? {}
      : { redis: options.redis, nameSpace: options.prefix ?? 'causeway:rate:' }),
    errorResponseBuilder: (_request, context) =>
      new CausewayError(
        'RATE_LIMITED',
        `rate limit of ${context.max} requests per ${windowMs} ms reached; retry in ${context.after}`,
        { retryAfterMs: Math.max(0, context.ttl), limit: context.max, windowMs },
      ),
  })
}
