/**
 * Cross-origin requests (CORS): which web pages of other origins may call the gateway, done with
 * `@fastify/cors`. A page of an allowed origin may send the headers the SDK sends and read the
 * reply headers the protocol defines; a page of any other origin gets no CORS headers at all, so
 * its browser neither sends its writes (their preflight fails) nor shows it a reply. The internal
 * shipping routes never answer cross-origin (their routes say `config: { cors: false }`).
 *
 * Preflights the gateway refuses are answered by {@link refusePreflights}, before `@fastify/cors`
 * sees them, with `403 CROSS_ORIGIN_REFUSED` naming the reason: a browser only reports "CORS
 * error", but whoever replays the preflight with curl learns which origin, method or header it was.
 */
import { CausewayError, EXPOSED_REPLY_HEADERS, SDK_REQUEST_HEADERS } from '@causeway/core'
import type { FastifyCorsOptions } from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import { INTERNAL_PREFIX } from './auth.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false`: the route never answers cross-origin (no CORS headers, preflights refused). */
    cors?: false
  }
}

/** `--cors-origin '*'`: pages of any origin may call the gateway. */
export const ANY_ORIGIN = '*'

/** The methods pages of other origins may use (the routes' methods). */
const METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']

/** How long a browser may cache a preflight answer, in seconds (Chromium caps it at 7200). */
const PREFLIGHT_MAX_AGE_S = 600

/**
 * Checks one allowed origin as an operator writes it: `*`, or `scheme://host[:port]` exactly as
 * a browser sends it in `Origin` (no path, no trailing slash, lower-case scheme and host, no
 * default port). Returns it, or throws a `TypeError` saying what is wrong.
 */
export function checkCorsOrigin(text: string): string {
  if (text === ANY_ORIGIN) return text
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new TypeError(
      `${JSON.stringify(text)} is not an origin: use scheme://host[:port], e.g. http://localhost:5173, or *`,
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`${JSON.stringify(text)} is not an http or https origin`)
  // A browser's Origin header is exactly `url.origin`; anything else would never match.
  if (url.origin !== text)
    throw new TypeError(
      `${JSON.stringify(text)} is not an origin as browsers send it; did you mean ${url.origin}?`,
    )
  return text
}

/** The origins a gateway allows, checked. */
export class CorsPolicy {
  /** True when pages of any origin may call. */
  readonly any: boolean
  readonly #origins: ReadonlySet<string>
  readonly #headers: ReadonlySet<string>

  /** `origins`: as {@link checkCorsOrigin} takes them; `['*']` for any, `[]` for none. */
  constructor(origins: readonly string[]) {
    const checked = origins.map(checkCorsOrigin)
    this.any = checked.includes(ANY_ORIGIN)
    this.#origins = new Set(checked)
    this.#headers = new Set(SDK_REQUEST_HEADERS)
  }

  /** True when no origin is allowed: `@fastify/cors` need not even be registered. */
  get none(): boolean {
    return this.#origins.size === 0
  }

  /** True when a page of `origin` may call. */
  allows(origin: string): boolean {
    return this.any || this.#origins.has(origin)
  }

  /** The options of `@fastify/cors` for this policy. */
  pluginOptions(): FastifyCorsOptions {
    return {
      // Answers `*` for any origin, the page's own origin when it is allowed, and no CORS header
      // at all otherwise. A function (not a list) so that a refused origin gets no
      // Access-Control-* header of any kind, and so that `Vary: Origin` is always set.
      origin: (origin, callback) => {
        if (origin === undefined || !this.allows(origin)) callback(null, false)
        else callback(null, this.any ? ANY_ORIGIN : origin)
      },
      methods: METHODS,
      allowedHeaders: [...this.#headers],
      exposedHeaders: [...EXPOSED_REPLY_HEADERS],
      // Bearer tokens, never cookies: pages call with `credentials: 'omit'` or 'same-origin'.
      credentials: false,
      maxAge: PREFLIGHT_MAX_AGE_S,
      strictPreflight: true,
    }
  }

  /**
   * Why a preflight (an `OPTIONS` with `Origin` and `Access-Control-Request-Method`) is refused,
   * or undefined when it is allowed.
   */
  preflightRefusal(
    path: string,
    origin: string,
    method: string,
    requestHeaders: string | undefined,
  ): CausewayError | undefined {
    const refuse = (message: string, details: Record<string, unknown>) =>
      new CausewayError('CROSS_ORIGIN_REFUSED', message, { origin, ...details })
    if (isInternal(path))
      return refuse('the internal routes never answer cross-origin requests', { path })
    if (!this.allows(origin))
      return refuse(
        this.none
          ? `this gateway allows no cross-origin requests; start it with --cors-origin ${origin} to allow this page`
          : `origin ${origin} is not allowed; start the gateway with --cors-origin ${origin} to allow it`,
        {},
      )
    if (!METHODS.includes(method))
      return refuse(
        `method ${method} is not allowed cross-origin; allowed: ${METHODS.join(', ')}`,
        {
          method,
          allowed: METHODS,
        },
      )
    const unknown = (requestHeaders ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== '' && !this.#headers.has(name))
    if (unknown.length > 0)
      return refuse(
        `request header${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} not allowed cross-origin; allowed: ${[...this.#headers].join(', ')}`,
        { headers: unknown, allowed: [...this.#headers] },
      )
    return undefined
  }
}

// Decoded, so that `/v1/%69nternal/...` is recognised too; a path that does not decode is
// treated as internal (refused), never as open.
function isInternal(path: string): boolean {
  let decoded: string
  try {
    decoded = decodeURIComponent(path)
  } catch {
    return true
  }
  return decoded.toLowerCase().startsWith(INTERNAL_PREFIX)
}

/**
 * An `onRequest` hook, added before `@fastify/cors`'s: answers the preflights `policy` refuses
 * with `CROSS_ORIGIN_REFUSED` (and no CORS headers), and an `OPTIONS` with an `Origin` but no
 * `Access-Control-Request-Method` with `INVALID_REQUEST`. Everything else passes on.
 */
export function refusePreflights(policy: CorsPolicy) {
  return async function refusePreflight(request: FastifyRequest): Promise<void> {
    if (request.method !== 'OPTIONS') return
    const origin = request.headers.origin
    if (origin === undefined) return
    const method = request.headers['access-control-request-method']
    if (typeof method !== 'string' || method === '')
      throw new CausewayError(
        'INVALID_REQUEST',
        'an OPTIONS request with an Origin is a CORS preflight: it needs Access-Control-Request-Method',
      )
    const path = request.url.split('?', 1)[0] ?? ''
    const headers = request.headers['access-control-request-headers']
    const refusal = policy.preflightRefusal(path, origin, method.toUpperCase(), headers)
    if (refusal) throw refusal
  }
}
