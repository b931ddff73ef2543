/**
 * A budget of request-body bytes in flight (received or declared, and not yet answered), for the
 * whole gateway and for each API key (each client address without one). Without it only the
 * connection cap bounds what bodies may hold: twelve concurrent 16.8 MB `/v1/ops` bodies with one
 * valid key took a gateway from 239 to 637 MB.
 *
 * A request is charged, before its body is read, what its body may take: its `content-length`, or
 * its route's body limit when it has no length (chunked); never more than the route's body limit
 * (Fastify refuses a longer declared body itself, unread). It is refused with
 * `BODY_BUDGET_EXCEEDED` (429, `retry-after`) when the charge would take its key's bytes past the
 * key's share or the gateway's past the global cap; a request is never refused while nothing else
 * of its key (or of the gateway) is in flight, so a body of any size its route takes can always
 * pass. The charge is returned when the reply is done or the connection goes.
 */
import { CausewayError } from '@causeway/core'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { principalOf } from './auth.js'

/** The limits of a {@link BodyBudget}. */
export interface BodyBudgetLimits {
  /** Most bytes in flight for the whole gateway. */
  maxBodyBytesInFlight: number
  /** Most bytes in flight for one API key (one client address without a key). */
  maxBodyBytesInFlightPerKey: number
}

/** The `retry-after` (seconds) of a refused body: bodies in flight are answered within seconds. */
const RETRY_AFTER_S = 1

/** Bytes in flight, per key and in all; pure bookkeeping (no I/O). */
export class BodyBudget {
  readonly #limits: BodyBudgetLimits
  readonly #byKey = new Map<string, number>()
  #total = 0

  constructor(limits: BodyBudgetLimits) {
    this.#limits = limits
  }

  /** Bytes in flight for `key`, or in all when `key` is undefined. */
  inFlight(key?: string): number {
    return key === undefined ? this.#total : (this.#byKey.get(key) ?? 0)
  }

  /**
   * Charges `bytes` to `key` and returns undefined, or returns what refuses it (charging nothing).
   */
  take(key: string, bytes: number): 'key' | 'gateway' | undefined {
    const held = this.#byKey.get(key) ?? 0
    if (held > 0 && held + bytes > this.#limits.maxBodyBytesInFlightPerKey) return 'key'
    if (this.#total > 0 && this.#total + bytes > this.#limits.maxBodyBytesInFlight) return 'gateway'
    this.#byKey.set(key, held + bytes)
    this.#total += bytes
    return undefined
  }

  /** Returns a charge {@link take} accepted. */
  give(key: string, bytes: number): void {
    const left = (this.#byKey.get(key) ?? bytes) - bytes
    if (left > 0) this.#byKey.set(key, left)
    else this.#byKey.delete(key)
    this.#total -= bytes
  }
}

/** What a request's body may take, in bytes (0: no body). */
function chargeOf(request: FastifyRequest): number {
  const limit = request.routeOptions.bodyLimit ?? 0
  const headers = request.headers
  const length = headers['content-length']
  if (length !== undefined) {
    const declared = Number(length)
    return Number.isFinite(declared) && declared > 0 ? Math.min(declared, limit) : 0
  }
  return headers['transfer-encoding'] === undefined ? 0 : limit
}

/**
 * An `onRequest` hook charging each request's body to `budget`; it must run after
 * authentication (it charges the request's API key).
 */
export function chargeBodies(budget: BodyBudget, limits: BodyBudgetLimits) {
  return async function chargeBody(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.is404) return
    const bytes = chargeOf(request)
    if (bytes === 0) return
    const key = principalOf(request)?.id ?? `ip:${request.ip}`
    const refused = budget.take(key, bytes)
    if (refused !== undefined) {
      const limit =
        refused === 'key' ? limits.maxBodyBytesInFlightPerKey : limits.maxBodyBytesInFlight
      reply.header('retry-after', String(RETRY_AFTER_S))
      // The body is left unread: the connection cannot carry another request after it.
      reply.header('connection', 'close')
      throw new CausewayError(
        'BODY_BUDGET_EXCEEDED',
        refused === 'key'
          ? `this ${key.startsWith('ip:') ? 'address' : 'API key'} already sends ${budget.inFlight(key)} body bytes; its share is ${limit}; retry in ${RETRY_AFTER_S} s`
          : `the gateway already holds ${budget.inFlight()} body bytes in flight, its limit is ${limit}; retry in ${RETRY_AFTER_S} s`,
        { scope: refused, limit, bytes, retryAfterS: RETRY_AFTER_S },
      )
    }
    let charged = true
    // 'close' comes once the reply is sent, or when the connection goes before that.
    reply.raw.once('close', () => {
      if (!charged) return
      charged = false
      budget.give(key, bytes)
    })
  }
}
