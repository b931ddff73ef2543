/**
 * A transport on undici, Node's own HTTP/1.1 client (the engine under Node's `fetch`), used
 * directly: one connection pool per gateway origin and a minimal response handler that collects
 * the body's bytes, with no stream, no `Response` object and no header parsing of its own. It
 * costs markedly less CPU per call than `node:http` (and than undici's own `request()`, which
 * wraps the body in a stream). Node only: the browser entry (`index.ts`) must never import it.
 */
import { Agent, type Dispatcher } from 'undici'
import {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  parseJsonBody,
} from './transport.js'
import { replyTooLarge } from './reply-guard.js'

/** Options of {@link undiciTransport}. */
export interface UndiciTransportOptions {
  /** Most connections open to one gateway. @default 64 */
  connections?: number
  /**
   * How long an idle connection stays open for the next call, in ms, when the gateway's reply
   * carries no `Keep-Alive: timeout=…` hint. With a hint, undici keeps it 2 s less than the hint
   * (at most 10 minutes), so it closes the connection before the gateway does.
   * @default 4000
   */
  keepAliveTimeout?: number
  /**
   * Requests sent on one connection before its first reply arrives (HTTP/1.1 pipelining). 1 sends
   * one request at a time per connection: a slow reply then never holds up a fast one behind it.
   * @default 1
   */
  pipelining?: number
}

type Resolve = (response: TransportResponse) => void
type Reject = (error: unknown) => void

/**
 * One request's handler: resolves with the status and the body once the whole body has arrived,
 * rejects when undici reports an error (refused connection, socket closed mid-reply, parse error)
 * or as soon as the request's signal aborts.
 */
class ReplyCollector implements Dispatcher.DispatchHandler {
  readonly #resolve: Resolve
  readonly #reject: Reject
  readonly #signal: AbortSignal | undefined
  readonly #url: string
  /** `maxReplyBytes`: reading stops past it. */
  readonly #limit: number
  #size = 0
  #controller: Dispatcher.DispatchController | undefined
  #status = 0
  #retryAfter: string | undefined
  #chunks: Buffer[] = []
  #settled = false

  constructor(resolve: Resolve, reject: Reject, req: TransportRequest) {
    const signal = req.signal
    this.#resolve = resolve
    this.#reject = reject
    this.#signal = signal
    this.#url = req.url
    this.#limit = req.maxReplyBytes ?? Infinity
    // The handler itself is the listener (handleEvent): no closure per request.
    signal?.addEventListener('abort', this)
  }

  /** Aborted while queued for a connection: stop it before it is sent. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#signal?.aborted === true) controller.abort(abortError(this.#signal.reason))
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // Called again after an informational (1xx) reply: the last status is the reply's.
    this.#status = statusCode
    const length = headers['content-length']
    if (typeof length === 'string' && Number(length) > this.#limit) this.#tooLarge()
    // Only a 429's: the client waits what it says (rate-limit-backoff.ts).
    if (statusCode === 429) {
      const value = headers['retry-after']
      this.#retryAfter = Array.isArray(value) ? value[0] : value
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return
    this.#size += chunk.length
    if (this.#size > this.#limit) return this.#tooLarge()
    this.#chunks.push(chunk)
  }

  /** Past `maxReplyBytes`: stop reading (the connection is dropped) and reject. */
  #tooLarge(): void {
    if (!this.#finish()) return
    const error = replyTooLarge(this.#url, this.#limit)
    this.#chunks = []
    this.#controller?.abort(error)
    this.#reject(error)
  }

  onResponseEnd(): void {
    if (!this.#finish()) return
    // Decoded once, whole: a multi-byte character may straddle two chunks.
    const chunks = this.#chunks
    const text =
      chunks.length === 0
        ? ''
        : (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8')
    const body = parseJsonBody(text)
    this.#resolve(
      this.#retryAfter === undefined
        ? { status: this.#status, body }
        : { status: this.#status, body, retryAfter: this.#retryAfter },
    )
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.#finish()) this.#reject(error)
  }

  /** @internal The signal's abort: reject now, and abort the request if undici has started it. */
  handleEvent(): void {
    if (!this.#finish()) return
    const reason: unknown = this.#signal?.reason
    this.#controller?.abort(abortError(reason))
    this.#reject(reason)
  }

  /** Marks the request settled; false when it already was. */
  #finish(): boolean {
    if (this.#settled) return false
    this.#settled = true
    this.#signal?.removeEventListener('abort', this)
    return true
  }
}

/** What undici aborts a request with: the signal's reason when it is an Error (as it is by default). */
function abortError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('the request was aborted', { cause: reason })
}

/** Where `url`'s origin ends: at the first `/`, `?` or `#` after `scheme://`. */
function originEnd(url: string): number {
  const start = url.indexOf('//') + 2
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) return i
  }
  return url.length
}

/**
 * A transport on undici: one keep-alive connection pool per gateway origin (`http:` or
 * `https:`, kept by an undici `Agent`), requests sent one at a time per connection. The default transport of
 * `@causeway/client/node`'s `connect`.
 *
 * `request` rejects with undici's error when no complete reply arrived (a refused connection, a
 * socket closed before the reply's last byte, an unparsable reply) and with the signal's reason
 * when the request's signal aborts, at once, even while the request still waits for a free
 * connection. `close()` destroys every pool: requests still in flight reject.
 */
export function undiciTransport(options: UndiciTransportOptions = {}): Transport {
  // An agent keeps one pool per origin, made on first use: the options apply to each.
  const agent = new Agent({
    connections: options.connections ?? 64,
    pipelining: options.pipelining ?? 1,
    keepAliveTimeout: options.keepAliveTimeout ?? 4000,
  })
  let closed = false

  return {
    request(req: TransportRequest): Promise<TransportResponse> {
      return new Promise((resolve, reject) => {
        if (closed) return reject(new Error('the transport is closed'))
        if (req.signal?.aborted === true) return reject(req.signal.reason)
        const end = originEnd(req.url)
        const rest = req.url.slice(end)
        try {
          agent.dispatch(
            {
              origin: req.url.slice(0, end),
              path: rest.startsWith('/') ? rest : '/' + rest,
              method: req.method,
              headers: req.headers,
              body: req.body ?? null,
            },
            new ReplyCollector(resolve, reject, req),
          )
        } catch (error) {
          // Not an http(s) URL undici accepts.
          reject(error)
        }
      })
    },
    async close() {
      closed = true
      await agent.destroy()
    },
  }
}
