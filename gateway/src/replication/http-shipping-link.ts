/**
 * A {@link ShippingLink} over HTTP to the gateways of another region: the checkpoint is
 * `GET /v1/internal/ship/:partition/:origin` (the destination leader's `sv[origin]`), an envelope
 * is `POST` to the same path in its JSON form (`envelopeToWire`; `receive()` at the destination
 * leader), both with the cluster secret as bearer token.
 *
 * FIFO: requests go one at a time, in the order they were made, so a batch never overtakes the
 * one before it (HTTP on several connections would reorder them, and the receiver would see gaps).
 * Envelopes sent while a request is on its way wait together and go as one envelope when their
 * turn comes (they follow each other: the shipper sends consecutive batches), so a busy link makes
 * fewer, larger requests instead of a queue of small ones; each sender gets the checkpoint of the
 * request that carried its entries. An envelope larger than `maxBatchBytes` goes as several
 * envelopes, in order.
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
import type { ShippingFetch } from './keep-alive-fetch.js'
import { RegionRequests, checkpointOf } from './region-requests.js'
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
   * The HTTP client (tests inject a `fetch`).
   * @default a keep-alive `node:http` client of this link's own (`keep-alive-fetch.ts`)
   */
  fetch?: ShippingFetch
}

/** Envelopes waiting for their turn together, to go as one (see the module comment). */
interface WaitingBatch {
  envelopes: ShipEnvelope[]
  sent: Promise<number>
}

/**
 * At least the summed `JSON.stringify(entry).length` of `entries`, without encoding them: a
 * string's JSON is at most six characters per character (`\uXXXX`) and two quotes, a number's
 * at most 24; anything else counts as unbounded.
 */
export function jsonLengthBound(entries: readonly LogEntry[]): number {
  let bound = 0
  for (const entry of entries) {
    bound += 2
    for (const [name, value] of Object.entries(entry)) {
      if (value === undefined) continue
      bound += name.length + 4
      if (typeof value === 'string') bound += 6 * value.length + 2
      else if (typeof value === 'number') bound += 24
      else return Infinity
    }
  }
  return bound
}

/** True when `next` carries the entries right after `last`'s, of the same sender and epoch. */
function follows(last: ShipEnvelope, next: ShipEnvelope): boolean {
  return next.from === last.from && next.epoch === last.epoch && next.first === last.last + 1
}

/** The default {@link HttpShippingLinkOptions.timeoutMs}. */
export const DEFAULT_SHIPPING_REQUEST_TIMEOUT_MS = 2000

/** The path of the internal shipping endpoint of `partition`, for entries of `origin`. */
export function shippingPath(partition: number, origin: number): string {
  return `/v1/internal/ship/${partition}/${origin}`
}

export { ShippingRequestError } from './region-requests.js'

/** Ships over HTTP to another region's gateways. */
export class HttpShippingLink implements ShippingLink {
  readonly #gateways: GatewayHealth
  readonly #requests: RegionRequests
  readonly #path: string
  readonly #maxBatchBytes: number
  /** The batch queued and not started yet, which later envelopes may join. */
  #waiting: WaitingBatch | undefined

  constructor(options: HttpShippingLinkOptions) {
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
      timeoutMs: options.timeoutMs ?? DEFAULT_SHIPPING_REQUEST_TIMEOUT_MS,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      name: 'shipping link',
    })
    this.#path = shippingPath(options.partition, options.origin)
    this.#maxBatchBytes = options.maxBatchBytes ?? 4 * 1024 * 1024
    this.#gateways.retain()
  }

  checkpoint(): Promise<number> {
    // Nothing queued before it may move behind it.
    this.#waiting = undefined
    return this.#queue(() => this.#request('GET'))
  }

  send(envelope: ShipEnvelope): Promise<number> {
    const waiting = this.#waiting
    if (waiting !== undefined && follows(waiting.envelopes.at(-1)!, envelope)) {
      waiting.envelopes.push(envelope)
      return waiting.sent
    }
    const batch: WaitingBatch = { envelopes: [envelope], sent: Promise.resolve(0) }
    batch.sent = this.#queue(async () => {
      // Its turn: nothing joins it any more.
      if (this.#waiting === batch) this.#waiting = undefined
      const joined =
        batch.envelopes.length === 1
          ? envelope
          : shipEnvelope(
              envelope.from,
              envelope.epoch,
              batch.envelopes.flatMap((e) => e.entries),
            )
      let checkpoint = 0
      for (const chunk of this.#chunks(joined)) {
        checkpoint = await this.#request('POST', envelopeToWire(chunk))
        // A gap at the destination: later chunks would be refused as well.
        if (checkpoint < chunk.last) break
      }
      return checkpoint
    })
    this.#waiting = batch
    return batch.sent
  }

  async close(): Promise<void> {
    if (!this.#requests.closed) this.#gateways.release()
    this.#waiting = undefined
    this.#requests.close()
  }

  // One request after the other (`RegionRequests.queue`); what waits behind a failure is dropped,
  // so nothing may join it either.
  #queue<T>(call: () => Promise<T>): Promise<T> {
    return this.#requests.queue(call, () => {
      this.#waiting = undefined
    })
  }

  // Splits an envelope by the size of its entries' JSON into envelopes of consecutive entries,
  // keeping order; every chunk has at least one entry.
  #chunks(envelope: ShipEnvelope): ShipEnvelope[] {
    // Most envelopes are far below the limit: then no entry is encoded just to be measured.
    if (jsonLengthBound(envelope.entries) <= this.#maxBatchBytes) return [envelope]
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
    const reply = await this.#requests.request(method, this.#path, envelope)
    return checkpointOf(reply, `${method} ${this.#path}`)
  }
}
