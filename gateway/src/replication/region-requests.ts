/**
 * What every link to another region's gateways shares (partition shipping, causal labels,
 * transactions): requests to the internal routes with the cluster secret, on a keep-alive
 * `node:http` client of the link's own, to the gateway its chooser picks, with a timeout, aborted
 * at once when that gateway is found down; and a queue that runs them one after the other.
 */
import { type ShippingFetch, keepAliveFetch, shippingAgent } from './keep-alive-fetch.js'

/** A failed request to another region, with the code the destination answered (if any). */
export class ShippingRequestError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message)
    this.name = 'ShippingRequestError'
  }
}

/** Which gateway of the destination region a request goes to (`GatewayHealth` is one). */
export interface GatewayChooser {
  pick(): string
  /** A request to `gateway` failed: the next may go elsewhere. */
  failed(gateway: string): void
  /** Calls `listener` when `gateway` is found down; returns the unsubscribe. */
  onDown?(gateway: string, listener: () => void): () => void
}

/** Options of {@link RegionRequests}. */
export interface RegionRequestsOptions {
  gateways: GatewayChooser
  /** The cluster secret, sent as `authorization: Bearer <secret>`. */
  secret: string
  timeoutMs: number
  /** @default a keep-alive `node:http` client of its own (`keep-alive-fetch.ts`) */
  fetch?: ShippingFetch
  /** What the link is, for its errors (`shipping link`). */
  name: string
}

/** A link's requests to another region's gateways, one at a time. */
export class RegionRequests {
  readonly #options: RegionRequestsOptions
  readonly #fetch: ShippingFetch
  readonly #closeClient: () => void
  readonly #aborts = new Set<AbortController>()
  #tail: Promise<unknown> = Promise.resolve()
  /** Bumped by every failure: calls queued before it are dropped instead of sent. */
  #generation = 0
  #closed = false

  constructor(options: RegionRequestsOptions) {
    this.#options = options
    if (options.fetch) {
      this.#fetch = options.fetch
      this.#closeClient = () => {}
    } else {
      // node:http costs a fraction of the global fetch's CPU per request (keep-alive-fetch.ts).
      const agent = shippingAgent()
      this.#fetch = keepAliveFetch(agent)
      this.#closeClient = () => agent.destroy()
    }
  }

  get closed(): boolean {
    return this.#closed
  }

  /**
   * Runs `call` after every call queued before it. A failure drops the calls queued behind it
   * (the sender abandons them anyway and starts over from the checkpoint), so a destination that
   * hangs costs one timeout, not one per request in flight; `onFailure` runs first.
   */
  queue<T>(call: () => Promise<T>, onFailure?: () => void): Promise<T> {
    if (this.#closed) return Promise.reject(this.#closedError())
    const generation = this.#generation
    const run = this.#tail.then(async () => {
      if (this.#closed) throw this.#closedError()
      if (generation !== this.#generation)
        throw new Error('dropped: an earlier request on this link failed')
      try {
        return await call()
      } catch (error) {
        this.#generation++
        onFailure?.()
        throw error
      }
    })
    this.#tail = run.catch(() => undefined)
    return run
  }

  /**
   * Sends `body` (JSON) with `method` to `path` of a gateway the chooser picks; resolves to the
   * answer's body. Throws a {@link ShippingRequestError} for an answer that is not 2xx.
   */
  async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ReplyBody> {
    const { gateways, timeoutMs, secret } = this.#options
    const base = gateways.pick()
    const abort = new AbortController()
    this.#aborts.add(abort)
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer from ${base} in ${timeoutMs} ms`)),
      timeoutMs,
    )
    const unsubscribe = gateways.onDown?.(base, () =>
      abort.abort(new Error(`${base} failed its health check`)),
    )
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${secret}` }
      if (body !== undefined) headers['content-type'] = 'application/json'
      const res = await this.#fetch(base + path, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        signal: abort.signal,
      })
      const reply = ((await res.json().catch(() => undefined)) ?? {}) as ReplyBody
      if (!res.ok) {
        const code = typeof reply.code === 'string' ? reply.code : undefined
        const message = typeof reply.message === 'string' ? reply.message : res.statusText
        throw new ShippingRequestError(
          `${method} ${base}${path}: ${res.status} ${code ?? ''} ${message}`.trim(),
          res.status,
          code,
        )
      }
      return reply
    } catch (error) {
      // Another gateway of the region next time.
      gateways.failed(base)
      throw error
    } finally {
      clearTimeout(timer)
      unsubscribe?.()
      this.#aborts.delete(abort)
    }
  }

  /** Refuses further calls, aborts those in flight and closes the client's connections. */
  close(): void {
    this.#closed = true
    for (const abort of this.#aborts) abort.abort(this.#closedError())
    this.#aborts.clear()
    this.#closeClient()
  }

  #closedError(): Error {
    return new Error(`${this.#options.name} closed`)
  }
}

/** An answer's JSON body, unchecked. */
export type ReplyBody = Record<string, unknown>

/** The `checkpoint` of an answer: a safe non-negative integer, or a {@link ShippingRequestError}. */
export function checkpointOf(reply: ReplyBody, what: string): number {
  const checkpoint = reply['checkpoint']
  if (typeof checkpoint !== 'number' || !Number.isSafeInteger(checkpoint) || checkpoint < 0)
    throw new ShippingRequestError(`${what}: no checkpoint in the reply`)
  return checkpoint
}
