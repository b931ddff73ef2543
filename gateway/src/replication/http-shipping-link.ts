/**
 * A {@link ShippingLink} over HTTP to the gateways of another region: the checkpoint is
 * `GET /v1/internal/ship/:partition/:origin` (the destination leader's `sv[origin]`), an envelope
 * is `POST` to the same path in its JSON form (`envelopeToWire`; `receive()` at the destination
 * leader), both with the cluster secret as bearer token.
 *
 * FIFO: requests go one at a time, in the order they were made, so a batch never overtakes the
 * one before it (HTTP on several connections would reorder them, and the receiver would see gaps).
 * An envelope larger than `maxBatchBytes` goes as several envelopes, in order. When a gateway of
 * the destination fails, the next request goes to the next one.
 */
import {
  type LogEntry,
  type ShipEnvelope,
  type ShipEnvelopeWire,
  envelopeToWire,
  shipEnvelope,
} from '@causeway/core'
import type { ShippingLink } from './shipping-link.js'

/** Options of an {@link HttpShippingLink}. */
export interface HttpShippingLinkOptions {
  /** Base URLs of the destination region's gateways, tried in turn. */
  gateways: readonly string[]
  partition: number
  /** The region whose entries travel on this link (the local one). */
  origin: number
  /** The cluster secret, sent as `authorization: Bearer <secret>`. */
  secret: string
  /**
   * Deadline of one request, in ms.
   * @default 10000
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
  readonly #gateways: readonly string[]
  readonly #path: string
  readonly #secret: string
  readonly #timeoutMs: number
  readonly #maxBatchBytes: number
  readonly #fetch: typeof fetch
  readonly #aborts = new Set<AbortController>()
  #next = 0
  #tail: Promise<unknown> = Promise.resolve()
  /** Bumped by every failure: calls queued before it are dropped instead of sent. */
  #generation = 0
  #closed = false

  constructor(options: HttpShippingLinkOptions) {
    if (options.gateways.length === 0) throw new RangeError('a shipping link needs a gateway URL')
    this.#gateways = options.gateways.map((u) => u.replace(/\/+$/, ''))
    this.#path = shippingPath(options.partition, options.origin)
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#maxBatchBytes = options.maxBatchBytes ?? 4 * 1024 * 1024
    this.#fetch = options.fetch ?? globalThis.fetch
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
    const base = this.#gateways[this.#next % this.#gateways.length]!
    const abort = new AbortController()
    this.#aborts.add(abort)
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer from ${base} in ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
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
      // Try the region's next gateway next time.
      this.#next++
      throw error
    } finally {
      clearTimeout(timer)
      this.#aborts.delete(abort)
    }
  }
}
