/**
 * What the SDK does not take on trust from a gateway (issue 23, item 5): a reply may be hostile
 * (a compromised gateway, a proxy in between, a forged topology), so
 *
 * - a reply's body is read up to `maxReplyBytes` and no further (`REPLY_TOO_LARGE`), in every
 *   transport, while it arrives: a 600 MB reply never sits in memory;
 * - every index, counter and HLC a reply gives the session is within the bounds the gateway
 *   itself enforces (`INVALID_REPLY`): a value past them would go out in the next
 *   `causeway-after` or `causeway-dt` and wedge the session, or be refused by every gateway;
 * - credentials (the `authorization` header, API key or token, and the like) go only to the
 *   origin of the gateway the app connected to and to the origins it trusts explicitly
 *   (`trustedOrigins`); a call that would carry them elsewhere fails with `UNTRUSTED_ORIGIN`
 *   before anything is sent. Region URLs come from the topology, which a hostile reply controls.
 */
import { CausewayError, MAX_SAFE_COUNTER, hlcMillis, isHlc } from '@causeway/core'
import type { Transport, TransportRequest, TransportResponse } from './transport.js'

/** Default of `maxReplyBytes`: 32 MiB, 32 times the largest value a default cluster stores. */
export const DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024

/**
 * How far past this device's clock a reply's HLC may be, in ms: the furthest the gateway's own
 * check lets a dependency time run ahead (`limits.maxSkewMs`, at most an hour) of a region clock
 * that may itself run an hour ahead of another's (the gateway's `maxClockOffsetMs` default).
 * Every timestamp a gateway stamps is within this of true time; a device whose clock is more
 * than two hours slow refuses replies (it would also be refused by every gateway's skew check).
 */
export const MAX_REPLY_CLOCK_AHEAD_MS = 2 * 60 * 60 * 1000

/** Headers that carry credentials: never sent to an origin not trusted. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key']

/** The `INVALID_REPLY` error of a reply field out of bounds. */
export function invalidReply(what: string, why: string, body?: unknown): CausewayError {
  return new CausewayError(
    'INVALID_REPLY',
    `refused a ${what} reply: ${why}`,
    body === undefined ? undefined : { body },
  )
}

/**
 * True when `v` is an index, counter, epoch or tid a gateway can send: an integer in
 * `min..2^53 - 2` (`counter-bounds.ts`: one more must stay exact).
 */
export function isReplyIndex(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= MAX_SAFE_COUNTER
}

/**
 * True when `v` is a wire HLC no further ahead of this device's clock than
 * {@link MAX_REPLY_CLOCK_AHEAD_MS}. `0000000000000000` ("no dependency") passes.
 */
export function isReplyHlc(v: unknown, now: number = Date.now()): v is string {
  return isHlc(v) && hlcMillis(v) <= now + MAX_REPLY_CLOCK_AHEAD_MS
}

/**
 * Throws `INVALID_REPLY` unless each of `indices` (given as `[name, value, min]`) passes
 * {@link isReplyIndex} and each of `hlcs` (`[name, value]`, undefined skipped) passes
 * {@link isReplyHlc}. Called on replies already checked for shape, so it reports bounds only.
 */
export function checkReplyBounds(
  what: string,
  body: unknown,
  indices: readonly (readonly [string, unknown, number])[],
  hlcs: readonly (readonly [string, unknown])[] = [],
): void {
  for (const [name, value, min] of indices) {
    if (value !== undefined && !isReplyIndex(value, min))
      throw invalidReply(what, `${name} ${String(value)} is beyond 2^53 - 2`, body)
  }
  const now = Date.now()
  for (const [name, value] of hlcs) {
    if (value !== undefined && !isReplyHlc(value, now))
      throw invalidReply(what, `${name} ${String(value)} is over 2 h ahead of this clock`, body)
  }
}

/** Checks `maxReplyBytes`: a positive integer. */
export function checkMaxReplyBytes(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_REPLY_BYTES
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1024)
    throw new CausewayError(
      'INVALID_OPTION',
      `maxReplyBytes must be an integer of at least 1024, not ${JSON.stringify(value)}`,
    )
  return value
}

/** The `REPLY_TOO_LARGE` error of a reply past `limit` bytes. */
export function replyTooLarge(url: string, limit: number): CausewayError {
  return new CausewayError(
    'REPLY_TOO_LARGE',
    `the reply of ${url} is over maxReplyBytes (${limit})`,
    { url, limit },
  )
}

/** The origin of an http(s) URL, or undefined for any other URL (or none). */
export function httpOrigin(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined
}

/**
 * The origins credentials may go to: the connected gateway's and each of `trustedOrigins`
 * (checked: absolute http(s) URLs, of which only the origin counts).
 */
export function trustedOriginsOf(connectedUrl: string, trustedOrigins: unknown): Set<string> {
  const origins = new Set<string>([httpOrigin(connectedUrl)!])
  if (trustedOrigins === undefined) return origins
  if (!Array.isArray(trustedOrigins))
    throw new CausewayError('INVALID_OPTION', 'trustedOrigins must be an array of http(s) URLs')
  for (const o of trustedOrigins as unknown[]) {
    const origin = typeof o === 'string' ? httpOrigin(o) : undefined
    if (origin === undefined)
      throw new CausewayError(
        'INVALID_OPTION',
        `trustedOrigins holds ${JSON.stringify(o)}, not an absolute http(s) URL`,
      )
    origins.add(origin)
  }
  return origins
}

/** What {@link guardTransport} enforces. */
export interface ReplyGuard {
  /** Most bytes of one reply body (or one change-feed event). */
  readonly maxReplyBytes: number
  /** Origins credentials may be sent to. */
  readonly trustedOrigins: ReadonlySet<string>
}

/**
 * Throws `UNTRUSTED_ORIGIN` when `headers` carry credentials and `url`'s origin is not trusted.
 * Used by every request the client sends (the guarded transport) and by the change feed.
 */
export function checkCredentialsOrigin(
  guard: ReplyGuard,
  url: string,
  headers: Record<string, string>,
): void {
  // The common case without parsing the URL: a URL of a trusted origin followed by its path.
  for (const origin of guard.trustedOrigins) {
    if (url.startsWith(origin) && (url.length === origin.length || url[origin.length] === '/'))
      return
  }
  if (!CREDENTIAL_HEADERS.some((h) => headers[h] !== undefined)) return
  const origin = httpOrigin(url)
  if (origin !== undefined && guard.trustedOrigins.has(origin)) return
  throw new CausewayError(
    'UNTRUSTED_ORIGIN',
    `credentials go only to the gateway's origin and trustedOrigins, not ${origin ?? url}`,
    { origin: origin ?? url, trusted: [...guard.trustedOrigins] },
  )
}

/**
 * A transport that refuses to send credentials to an origin not trusted, and asks the transport
 * under it to stop reading a reply at `maxReplyBytes` (`TransportRequest.maxReplyBytes`).
 */
export function guardTransport(inner: Transport, guard: ReplyGuard): Transport {
  return {
    request(req: TransportRequest): Promise<TransportResponse> {
      try {
        checkCredentialsOrigin(guard, req.url, req.headers)
      } catch (error) {
        return Promise.reject(error)
      }
      // The client builds each request for this one call: it may carry the cap itself.
      req.maxReplyBytes ??= guard.maxReplyBytes
      return inner.request(req)
    },
    ...(inner.close ? { close: () => inner.close!() } : {}),
  }
}

/**
 * Whether a transport's rejection is the guard refusing (an untrusted origin, a reply too
 * large) rather than a network failure: such an error is thrown as it is, never retried
 * elsewhere or reported as `NETWORK_ERROR`.
 */
export function isGuardRefusal(cause: unknown): cause is CausewayError {
  return (
    cause instanceof CausewayError &&
    (cause.code === 'UNTRUSTED_ORIGIN' || cause.code === 'REPLY_TOO_LARGE')
  )
}
