/**
 * A {@link LabelLink} over HTTP to the gateways of another region: the checkpoint is
 * `GET /v1/internal/causal/labels/:origin` and an envelope is `POST`ed to the same path (the
 * receiving gateway takes it into the region's label queue, `http/routes/causal-internal.ts`),
 * both with the cluster secret as bearer token. FIFO, one request at a time in the order they were
 * made, like the shipping link; which gateway of the region is asked is its shared
 * {@link GatewayHealth}'s choice, and a request to a gateway found down is aborted at once.
 */
import type { Hlc, LabelEnvelope } from '@causeway/core'
import { DelayedRoundTrip } from '../delayed-round-trip.js'
import { GatewayHealth } from '../gateway-health.js'
import { ShippingRequestError } from '../http-shipping-link.js'
import { type ShippingFetch, keepAliveFetch, shippingAgent } from '../keep-alive-fetch.js'
import type { LabelCheckpoint, LabelLink } from './label-link.js'

/** The path of the internal label endpoint for labels of `origin`. */
export function labelsPath(origin: number): string {
  return `/v1/internal/causal/labels/${origin}`
}

/** Options of an {@link HttpLabelLink}. */
export interface HttpLabelLinkOptions {
  /** The destination region's gateways and their health (held until the link closes). */
  gateways: GatewayHealth | readonly string[]
  /** The region whose labels travel on this link (the local one). */
  origin: number
  partitions: number
  /** The cluster secret, sent as `authorization: Bearer <secret>`. */
  secret: string
  /** @default 2000 */
  timeoutMs?: number
  /**
   * The HTTP client (tests inject a `fetch`).
   * @default a keep-alive `node:http` client of this link's own, as the shipping links use
   */
  fetch?: ShippingFetch
}

/** Ships labels over HTTP to another region's gateways. */
export class HttpLabelLink implements LabelLink {
  readonly #gateways: GatewayHealth
  readonly #path: string
  readonly #options: HttpLabelLinkOptions
  readonly #fetch: ShippingFetch
  readonly #closeAgent: () => void
  readonly #aborts = new Set<AbortController>()
  #tail: Promise<unknown> = Promise.resolve()
  #generation = 0
  #closed = false

  constructor(options: HttpLabelLinkOptions) {
    this.#options = options
    if (options.fetch) {
      this.#fetch = options.fetch
      this.#closeAgent = () => {}
    } else {
      const agent = shippingAgent()
      this.#fetch = keepAliveFetch(agent)
      this.#closeAgent = () => agent.destroy()
    }
    // Health checks on their own connections (global fetch), unless a test injects a client.
    this.#gateways =
      options.gateways instanceof GatewayHealth
        ? options.gateways
        : new GatewayHealth({
            gateways: options.gateways,
            ...(options.fetch ? { fetch: options.fetch } : {}),
          })
    this.#path = labelsPath(options.origin)
    this.#gateways.retain()
  }

  checkpoint(): Promise<LabelCheckpoint> {
    return this.#queue(() => this.#request('GET'))
  }

  send(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    return this.#queue(() => this.#request('POST', envelope))
  }

  async close(): Promise<void> {
    if (!this.#closed) this.#gateways.release()
    this.#closed = true
    for (const abort of this.#aborts) abort.abort(new Error('label link closed'))
    this.#aborts.clear()
    this.#closeAgent()
  }

  // One request after the other; a failure drops those queued behind it (the shipper starts over).
  #queue<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('label link closed'))
    const generation = this.#generation
    const run = this.#tail.then(async () => {
      if (this.#closed) throw new Error('label link closed')
      if (generation !== this.#generation)
        throw new Error('dropped: an earlier request on this link failed')
      try {
        return await call()
      } catch (error) {
        this.#generation++
        throw error
      }
    })
    this.#tail = run.catch(() => undefined)
    return run
  }

  async #request(method: 'GET' | 'POST', envelope?: LabelEnvelope): Promise<LabelCheckpoint> {
    const base = this.#gateways.pick()
    const abort = new AbortController()
    this.#aborts.add(abort)
    const timeoutMs = this.#options.timeoutMs ?? 2000
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer from ${base} in ${timeoutMs} ms`)),
      timeoutMs,
    )
    const unsubscribe = this.#gateways.onDown(base, () =>
      abort.abort(new Error(`${base} failed its health check`)),
    )
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#options.secret}` }
      if (envelope) headers['content-type'] = 'application/json'
      const res = await this.#fetch(base + this.#path, {
        method,
        headers,
        body: envelope ? JSON.stringify(envelope) : null,
        signal: abort.signal,
      })
      const body = (await res.json().catch(() => undefined)) as
        | {
            received?: unknown
            applied?: unknown
            stable?: unknown
            code?: unknown
            message?: unknown
          }
        | undefined
      if (!res.ok) {
        const code = typeof body?.code === 'string' ? body.code : undefined
        const message = typeof body?.message === 'string' ? body.message : res.statusText
        throw new ShippingRequestError(
          `${method} ${base}${this.#path}: ${res.status} ${code ?? ''} ${message}`.trim(),
          res.status,
          code,
        )
      }
      const counters = (v: unknown) =>
        Array.isArray(v) &&
        v.length === this.#options.partitions &&
        v.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)
      if (!counters(body?.received) || !counters(body?.applied) || typeof body?.stable !== 'string')
        throw new ShippingRequestError(`${method} ${base}${this.#path}: no checkpoint in the reply`)
      return {
        received: body!.received as number[],
        applied: body!.applied as number[],
        stable: body!.stable as Hlc,
      }
    } catch (error) {
      this.#gateways.failed(base)
      throw error
    } finally {
      clearTimeout(timer)
      unsubscribe()
      this.#aborts.delete(abort)
    }
  }
}

/** A {@link LabelLink} whose calls and answers each take `delayMs` longer (benchmarks). */
export class DelayedLabelLink implements LabelLink {
  readonly #inner: LabelLink
  readonly #wan: DelayedRoundTrip

  /** @param delayMs one-way delay in ms. */
  constructor(inner: LabelLink, delayMs: number) {
    this.#inner = inner
    this.#wan = new DelayedRoundTrip(delayMs)
  }

  checkpoint(): Promise<LabelCheckpoint> {
    return this.#wan.call(() => this.#inner.checkpoint())
  }

  send(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    return this.#wan.call(() => this.#inner.send(envelope))
  }

  async close(): Promise<void> {
    this.#wan.close()
    await this.#inner.close()
  }
}
