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
}

/** The rate limit a production gateway (`causeway gateway`) applies unless configured. */
export const DEFAULT_RATE_LIMIT = Object.freeze({ max: 5000, windowMs: 1000 })

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
