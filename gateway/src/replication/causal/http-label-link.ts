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
import type { ShippingFetch } from '../keep-alive-fetch.js'
import { RegionRequests, ShippingRequestError } from '../region-requests.js'
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
  readonly #requests: RegionRequests
  readonly #path: string
  readonly #partitions: number

  constructor(options: HttpLabelLinkOptions) {
    // Health checks on their own connections (global fetch), unless a test injects a client.
    this.#gateways =
      options.gateways instanceof GatewayHealth
        ? options.gateways
        : new GatewayHealth({
            gateways: options.gateways,
            ...(options.fetch ? { fetch: options.fetch } : {}),
          })
    this.#requests = new RegionRequests({
      gateways: this.#gateways,
      secret: options.secret,
      timeoutMs: options.timeoutMs ?? 2000,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      name: 'label link',
    })
    this.#path = labelsPath(options.origin)
    this.#partitions = options.partitions
    this.#gateways.retain()
  }

  checkpoint(): Promise<LabelCheckpoint> {
    return this.#requests.queue(() => this.#request('GET'))
  }

  send(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    return this.#requests.queue(() => this.#request('POST', envelope))
  }

  async close(): Promise<void> {
    if (!this.#requests.closed) this.#gateways.release()
    this.#requests.close()
  }

  async #request(method: 'GET' | 'POST', envelope?: LabelEnvelope): Promise<LabelCheckpoint> {
    const reply = await this.#requests.request(method, this.#path, envelope)
    const counters = (v: unknown) =>
      Array.isArray(v) &&
      v.length === this.#partitions &&
      v.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)
    const { received, applied, stable } = reply
    if (!counters(received) || !counters(applied) || typeof stable !== 'string')
      throw new ShippingRequestError(`${method} ${this.#path}: no checkpoint in the reply`)
    return {
      received: received as number[],
      applied: applied as number[],
      stable: stable as Hlc,
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
