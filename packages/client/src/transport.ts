/**
 * The transport: how the SDK sends one HTTP request to a gateway. The client builds the request
 * (URL, headers, JSON body) and interprets the reply; a transport only moves bytes, so a test can
 * replace it with a fake and Node can swap in a keep-alive one (`@causeway/client/node`).
 */

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

/** The default transport: WHATWG `fetch`, as browsers, Node 18+, Deno and Bun provide it. */
export function fetchTransport(options: FetchTransportOptions = {}): Transport {
  const doFetch = options.fetch ?? globalThis.fetch
  if (typeof doFetch !== 'function') {
    throw new TypeError('no fetch available: pass a transport to connect()')
  }
  return {
    async request(req) {
      const res = await doFetch(req.url, {
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: req.signal,
      })
      const body = parseJsonBody(await res.text())
      if (res.status !== 429) return { status: res.status, body }
      const retryAfter = res.headers.get('retry-after')
      return retryAfter === null
        ? { status: res.status, body }
        : { status: res.status, body, retryAfter }
    },
  }
}
