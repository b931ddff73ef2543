/**
 * The transport: how the SDK sends one HTTP request to a gateway. The client builds the request
 * (URL, headers, JSON body) and interprets the reply; a transport only moves bytes, so a test can
 * replace it with a fake and Node can swap in a keep-alive one (`@causeway/client/node`).
 */

import { CausewayError } from '@causeway/core'
import { replyTooLarge } from './reply-guard.js'

/** One HTTP request, fully built by the client. */
export interface TransportRequest {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE'
  /** Absolute URL, query string included. */
  url: string
  /** Lower-case header names. */
  headers: Record<string, string>
  /** JSON text, or undefined when the request has no body. */
  body?: string
  /** Aborts the request: the call's deadline, the caller's signal or `close()`. */
  signal?: AbortSignal
  /**
   * Most bytes of the reply's body: a transport stops reading past it and rejects with
   * `REPLY_TOO_LARGE`. The client sets it on every request (`connect({ maxReplyBytes })`).
   * @default no limit
   */
  maxReplyBytes?: number
}

/** The gateway's reply: its status and its body parsed as JSON (undefined when not JSON). */
export interface TransportResponse {
  status: number
  body: unknown
  /**
   * The `retry-after` header of a 429 reply (a transport may omit it: the gateway's error body
   * says the same in `details.retryAfterMs`).
   */
  retryAfter?: string
}

/**
 * Sends requests. `request` rejects only when no reply arrived (network failure or abort); any
 * HTTP status, errors included, resolves.
 */
export interface Transport {
  request(request: TransportRequest): Promise<TransportResponse>
  /** Releases connections; called by the client's `close()`. */
  close?(): void | Promise<void>
}

/** Parses a reply body as JSON; a body that is not JSON becomes undefined (the client reports it). */
export function parseJsonBody(text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Options of {@link fetchTransport}. */
export interface FetchTransportOptions {
  /**
   * The `fetch` to use, e.g. one with a custom dispatcher.
   * @default globalThis.fetch
   */
  fetch?: typeof globalThis.fetch
}

/**
 * The default transport: WHATWG `fetch`, as browsers, Node 18+, Deno and Bun provide it. A request
 * that gets no reply rejects with a `NETWORK_ERROR` naming its URL (`details.url`) and, in a
 * browser, the likely causes; an aborted one with the abort's reason.
 */
export function fetchTransport(options: FetchTransportOptions = {}): Transport {
  const doFetch = options.fetch ?? globalThis.fetch
  if (typeof doFetch !== 'function') {
    throw new TypeError('no fetch available: pass a transport to connect()')
  }
  return {
    async request(req) {
      let res: Response
      try {
        res = await doFetch(req.url, {
          method: req.method,
          headers: req.headers,
          body: req.body,
          signal: req.signal,
        })
      } catch (cause) {
        if (req.signal?.aborted) throw cause
        throw fetchFailure(req, cause)
      }
      const body = parseJsonBody(await readText(res, req))
      if (res.status !== 429) return { status: res.status, body }
      const retryAfter = res.headers.get('retry-after')
      return retryAfter === null
        ? { status: res.status, body }
        : { status: res.status, body, retryAfter }
    },
  }
}

/**
 * A reply's body as text, read up to `req.maxReplyBytes`: a reply that announces or reaches more
 * is cancelled as soon as it passes the limit, so it never sits in memory whole.
 */
async function readText(res: Response, req: TransportRequest): Promise<string> {
  const limit = req.maxReplyBytes
  if (limit === undefined || res.body === null) return res.text()
  const announced = Number(res.headers.get('content-length') ?? NaN)
  if (announced > limit) {
    await res.body.cancel().catch(() => {})
    throw replyTooLarge(req.url, limit)
  }
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw replyTooLarge(req.url, limit)
    }
    chunks.push(value)
  }
  // Decoded once, whole: a multi-byte character may straddle two chunks.
  const all = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    all.set(chunk, at)
    at += chunk.byteLength
  }
  return new TextDecoder().decode(all)
}

/**
 * The error of a fetch that got no reply. Browsers say only "Failed to fetch" whatever happened
 * (a page may not learn why, CORS refusals included), so in a browser the message lists the usual
 * causes; Node's fetch hides the reason in its cause, so that is added.
 */
export function fetchFailure(req: TransportRequest, cause: unknown): CausewayError {
  const error = cause as { message?: unknown; cause?: { message?: unknown } } | undefined
  let why = typeof error?.message === 'string' ? error.message : String(cause)
  if (typeof error?.cause?.message === 'string') why += ` (${error.cause.message})`
  return new CausewayError(
    'NETWORK_ERROR',
    `${req.method} ${req.url} failed: ${why}${browserHint(req.url)}`,
    { url: req.url },
    { cause },
  )
}

// The likely causes of a failed fetch in a browser (or a worker); nothing elsewhere.
function browserHint(url: string): string {
  const scope = globalThis as { location?: { origin?: unknown }; navigator?: { onLine?: unknown } }
  const origin = scope.location?.origin
  if (typeof origin !== 'string') return ''
  const offline =
    scope.navigator?.onLine === false ? ' The browser reports that it is offline.' : ''
  let target = url
  try {
    target = new URL(url).origin
  } catch {
    // keep the URL as given
  }
  return (
    `.${offline} In a browser the likely causes are: the gateway at ${target} does not allow pages of ` +
    `${origin} (CORS: start it with --cors-origin ${origin}), a proxy in between refused the ` +
    `request, or the network is offline.`
  )
}
