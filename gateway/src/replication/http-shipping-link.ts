/**
 * A {@link ShippingLink} over HTTP to the gateways of another region: the checkpoint is
 * `GET /v1/internal/ship/:partition/:origin` (the destination leader's `sv[origin]`), an envelope
 * is `POST` to the same path in its JSON form (`envelopeToWire`; `receive()` at the destination
 * leader), both with the cluster secret as bearer token.
 *
 * FIFO: requests go one at a time, in the order they were made, so a batch never overtakes the
 * one before it (HTTP on several connections would reorder them, and the receiver would see gaps).
 * An envelope larger than `maxBatchBytes` goes as several envelopes, in order.
 *
 * Which gateway of the destination region: the one its {@link GatewayHealth} picks (shared by
 * every link of the process to that region). A request to a gateway that fails its health check
 * meanwhile is aborted at once, so a frozen gateway stalls shipping for about the health check's
 * interval and timeout (under a second by default) instead of the request timeout; after any
 * failure the next request goes to another gateway that is up. The shipper then resumes from the
 * checkpoint, and the destination skips what it already has, so a request the frozen gateway
 * answers late changes nothing.
 */
import {
  type LogEntry,
  type ShipEnvelope,
  type ShipEnvelopeWire,
  envelopeToWire,
  shipEnvelope,
} from '@causeway/core'
import { GatewayHealth } from './gateway-health.js'
import type { ShippingLink } from './shipping-link.js'

/** Options of an {@link HttpShippingLink}. */
export interface HttpShippingLinkOptions {
  /**
   * The destination region's gateways and their health, shared by the links to that region; the
   * link holds it ({@link GatewayHealth.retain}) until it closes. A list of base URLs gets a
   * {@link GatewayHealth} of its own, with its default interval and timeout.
   */
  gateways: GatewayHealth | readonly string[]
  partition: number
  /** The region whose entries travel on this link (the local one). */
  origin: number
  /** The cluster secret, sent as `authorization: Bearer <secret>`. */
  secret: string
  /**
   * Deadline of one request, in ms, for a gateway that still passes its health checks (one that
   * fails them is given up on sooner).
   * @default 2000
   */
  timeoutMs?: number
  /**
   * Most bytes of entries in one request; a single larger entry goes alone.
   * @default 4 MiB
   */
  maxBatchBytes?: number
  /**
   * The fetch to use (tests inject one).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
}

/** The default {@link HttpShippingLinkOptions.timeoutMs}. */
export const DEFAULT_SHIPPING_REQUEST_TIMEOUT_MS = 2000

/** The path of the internal shipping endpoint of `partition`, for entries of `origin`. */
export function shippingPath(partition: number, origin: number): string {
  return `/v1/internal/ship/${partition}/${origin}`
}

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

/** Ships over HTTP to another region's gateways. */
export class HttpShippingLink implements ShippingLink {
  readonly #gateways: GatewayHealth
  readonly #path: string
  readonly #secret: string
  readonly #timeoutMs: number
  readonly #maxBatchBytes: number
  readonly #fetch: typeof fetch
  readonly #aborts = new Set<AbortController>()
  #tail: Promise<unknown> = Promise.resolve()
  /** Bumped by every failure: calls queued before it are dropped instead of sent. */
  #generation = 0
  #closed = false

  constructor(options: HttpShippingLinkOptions) {
    this.#fetch = options.fetch ?? globalThis.fetch
    this.#gateways =
      options.gateways instanceof GatewayHealth
        ? options.gateways
        : new GatewayHealth({ gateways: options.gateways, fetch: this.#fetch })
    this.#path = shippingPath(options.partition, options.origin)
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_SHIPPING_REQUEST_TIMEOUT_MS
    this.#maxBatchBytes = options.maxBatchBytes ?? 4 * 1024 * 1024
    this.#gateways.retain()
  }

  checkpoint(): Promise<number> {
    return this.#queue(() => this.#request('GET'))
  }

  send(envelope: ShipEnvelope): Promise<number> {
    return this.#queue(async () => {
      let checkpoint = 0
      for (const chunk of this.#chunks(envelope)) {
        checkpoint = await this.#request('POST', envelopeToWire(chunk))
        // A gap at the destination: later chunks would be refused as well.
        if (checkpoint < chunk.last) break
      }
      return checkpoint
    })
  }

  async close(): Promise<void> {
    if (!this.#closed) this.#gateways.release()
    this.#closed = true
    for (const abort of this.#aborts) abort.abort(new Error('shipping link closed'))
    this.#aborts.clear()
  }

  // Runs `call` after every call queued before it. A failure drops the calls queued behind it
  // (the shipper abandons them anyway and starts over from the checkpoint), so a destination that
  // hangs costs one timeout, not one per batch in flight.
  #queue<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('shipping link closed'))
    const generation = this.#generation
    const run = this.#tail.then(async () => {
      if (this.#closed) throw new Error('shipping link closed')
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

  // Splits an envelope by the size of its entries' JSON into envelopes of consecutive entries,
  // keeping order; every chunk has at least one entry.
  #chunks(envelope: ShipEnvelope): ShipEnvelope[] {
    const chunks: ShipEnvelope[] = []
    let chunk: LogEntry[] = []
    let bytes = 0
    const close = () =>
      chunks.push(shipEnvelope(envelope.from, envelope.epochs ?? envelope.epoch, chunk))
    for (const entry of envelope.entries) {
      const size = JSON.stringify(entry).length
      if (chunk.length > 0 && bytes + size > this.#maxBatchBytes) {
        close()
        chunk = []
        bytes = 0
      }
      chunk.push(entry)
      bytes += size
    }
    if (chunk.length === envelope.entries.length) return [envelope]
    if (chunk.length > 0) close()
    return chunks
  }

  async #request(method: 'GET' | 'POST', envelope?: ShipEnvelopeWire): Promise<number> {
    const base = this.#gateways.pick()
    const abort = new AbortController()
    this.#aborts.add(abort)
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer from ${base} in ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
    )
    const unsubscribe = this.#gateways.onDown(base, () =>
      abort.abort(new Error(`${base} failed its health check`)),
    )
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#secret}` }
      if (envelope) headers['content-type'] = 'application/json'
      const res = await this.#fetch(base + this.#path, {
        method,
        headers,
        body: envelope ? JSON.stringify(envelope) : null,
        signal: abort.signal,
      })
      const body = (await res.json().catch(() => undefined)) as
        { checkpoint?: unknown; code?: unknown; message?: unknown } | undefined
      if (!res.ok) {
        const code = typeof body?.code === 'string' ? body.code : undefined
        const message = typeof body?.message === 'string' ? body.message : res.statusText
        throw new ShippingRequestError(
          `${method} ${base}${this.#path}: ${res.status} ${code ?? ''} ${message}`.trim(),
          res.status,
          code,
        )
      }
      const checkpoint = body?.checkpoint
      if (typeof checkpoint !== 'number' || !Number.isSafeInteger(checkpoint) || checkpoint < 0)
        throw new ShippingRequestError(`${method} ${base}${this.#path}: no checkpoint in the reply`)
      return checkpoint
    } catch (error) {
      // Try another gateway of the region next time.
      this.#gateways.failed(base)
      throw error
    } finally {
      clearTimeout(timer)
      unsubscribe()
      this.#aborts.delete(abort)
    }
  }
}
