/**
 * The {@link TxLink}s: in process with an emulated WAN delay (the embedded cluster), and over HTTP
 * to another region's gateways (`POST /v1/internal/tx/:origin`, its checkpoint by `GET`, with the
 * cluster secret), one request at a time so shipments stay in order. And what a receiving region
 * does with a shipment: checks it whole, then appends each unit to its transaction log.
 */
import { type TxShipment, checkTxShipment } from '@causeway/core'
import type { AbstractTxLog } from '../storage/tx-log.js'
import { DelayedRoundTrip } from './delayed-round-trip.js'
import type { ShippingFetch } from './keep-alive-fetch.js'
import { RegionRequests, checkpointOf } from './region-requests.js'
import type { TxLink } from './tx-link.js'

/**
 * Appends the units of a shipment (checked whole first: `checkTxShipment`) to `log`, each unless
 * it has it; resolves to the log's checkpoint of the shipment's origin.
 */
export async function receiveShipment(
  log: AbstractTxLog,
  shipment: unknown,
  partitions: number,
): Promise<number> {
  const { from, units } = checkTxShipment(shipment, log.regions, log.region, partitions)
  let checkpoint = await log.foreignCheckpoint(from)
  for (const u of units)
    checkpoint = await log.appendForeign({
      region: from,
      tid: u.tid,
      ts: u.ts,
      writes: u.writes,
      parts: u.parts,
    })
  return checkpoint
}

/** A {@link TxLink} to a transaction log of this process. */
export class InProcessTxLink implements TxLink {
  readonly #origin: number
  readonly #destination: AbstractTxLog
  readonly #partitions: number
  readonly #wan: DelayedRoundTrip

  constructor(options: {
    origin: number
    destination: AbstractTxLog
    partitions: number
    /** One-way delay, ms. @default 0 */
    delayMs?: number
  }) {
    this.#origin = options.origin
    this.#destination = options.destination
    this.#partitions = options.partitions
    this.#wan = new DelayedRoundTrip(options.delayMs ?? 0)
  }

  checkpoint(): Promise<number> {
    return this.#wan.call(() => this.#destination.foreignCheckpoint(this.#origin))
  }

  send(shipment: TxShipment): Promise<number> {
    return this.#wan.call(() => receiveShipment(this.#destination, shipment, this.#partitions))
  }

  async close(): Promise<void> {
    this.#wan.close()
  }
}

/** The path of the internal transaction shipping endpoint, for transactions of `origin`. */
export function txShippingPath(origin: number): string {
  return `/v1/internal/tx/${origin}`
}

/** A {@link TxLink} over HTTP to another region's gateways, tried in turn. */
export class HttpTxLink implements TxLink {
  readonly #requests: RegionRequests
  readonly #path: string

  constructor(options: {
    gateways: readonly string[]
    origin: number
    secret: string
    /** @default 10000 */
    timeoutMs?: number
    /** @default a keep-alive `node:http` client of this link's own (`keep-alive-fetch.ts`) */
    fetch?: ShippingFetch
  }) {
    if (options.gateways.length === 0) throw new RangeError('a link needs a gateway URL')
    const gateways = options.gateways.map((u) => u.replace(/\/+$/, ''))
    let next = 0
    this.#requests = new RegionRequests({
      // In turn: the next gateway after a failure.
      gateways: { pick: () => gateways[next % gateways.length]!, failed: () => void next++ },
      secret: options.secret,
      timeoutMs: options.timeoutMs ?? 10_000,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      name: 'transaction link',
    })
    this.#path = txShippingPath(options.origin)
  }

  checkpoint(): Promise<number> {
    return this.#requests.queue(() => this.#request('GET', `${this.#path}/checkpoint`))
  }

  send(shipment: TxShipment): Promise<number> {
    return this.#requests.queue(() => this.#request('POST', this.#path, shipment))
  }

  async close(): Promise<void> {
    this.#requests.close()
  }

  async #request(method: 'GET' | 'POST', path: string, shipment?: TxShipment): Promise<number> {
    return checkpointOf(await this.#requests.request(method, path, shipment), `${method} ${path}`)
  }
}
