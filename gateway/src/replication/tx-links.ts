/**
 * The {@link TxLink}s: in process with an emulated WAN delay (the embedded cluster), and over HTTP
 * to another region's gateways (`POST /v1/internal/tx/:origin`, its checkpoint by `GET`, with the
 * cluster secret), one request at a time so shipments stay in order. And what a receiving region
 * does with a shipment: checks it whole, then appends each unit to its transaction log.
 */
import { type TxShipment, checkTxShipment } from '@causeway/core'
import type { AbstractTxLog } from '../storage/tx-log.js'
import { DelayedRoundTrip } from './delayed-round-trip.js'
import { ShippingRequestError } from './http-shipping-link.js'
import { type ShippingFetch, keepAliveFetch, shippingAgent } from './keep-alive-fetch.js'
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
  readonly #gateways: readonly string[]
  readonly #path: string
  readonly #secret: string
  readonly #timeoutMs: number
  readonly #fetch: ShippingFetch
  readonly #closeClient: () => void
  readonly #aborts = new Set<AbortController>()
  #next = 0
  #tail: Promise<unknown> = Promise.resolve()
  #closed = false

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
    this.#gateways = options.gateways.map((u) => u.replace(/\/+$/, ''))
    this.#path = txShippingPath(options.origin)
    this.#secret = options.secret
    this.#timeoutMs = options.timeoutMs ?? 10_000
    if (options.fetch) {
      this.#fetch = options.fetch
      this.#closeClient = () => {}
    } else {
      // As the partitions' links: node:http costs a fraction of fetch's CPU per request.
      const agent = shippingAgent()
      this.#fetch = keepAliveFetch(agent)
      this.#closeClient = () => agent.destroy()
    }
  }

  checkpoint(): Promise<number> {
    return this.#queue(() => this.#request('GET'))
  }

  send(shipment: TxShipment): Promise<number> {
    return this.#queue(() => this.#request('POST', shipment))
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const abort of this.#aborts) abort.abort(new Error('transaction link closed'))
    this.#aborts.clear()
    this.#closeClient()
  }

  #queue<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('transaction link closed'))
    const run = this.#tail.then(() => {
      if (this.#closed) throw new Error('transaction link closed')
      return call()
    })
    this.#tail = run.catch(() => undefined)
    return run
  }

  async #request(method: 'GET' | 'POST', shipment?: TxShipment): Promise<number> {
    const base = this.#gateways[this.#next % this.#gateways.length]!
    const url = base + this.#path + (method === 'GET' ? '/checkpoint' : '')
    const abort = new AbortController()
    this.#aborts.add(abort)
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer from ${base} in ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
    )
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#secret}` }
      if (shipment) headers['content-type'] = 'application/json'
      const res = await this.#fetch(url, {
        method,
        headers,
        body: shipment ? JSON.stringify(shipment) : null,
        signal: abort.signal,
      })
      const body = (await res.json().catch(() => undefined)) as
        { checkpoint?: unknown; code?: unknown; message?: unknown } | undefined
      if (!res.ok)
        throw new ShippingRequestError(
          `${method} ${url}: ${res.status} ${typeof body?.code === 'string' ? body.code : ''} ${typeof body?.message === 'string' ? body.message : res.statusText}`.trim(),
          res.status,
          typeof body?.code === 'string' ? body.code : undefined,
        )
      const checkpoint = body?.checkpoint
      if (typeof checkpoint !== 'number' || !Number.isSafeInteger(checkpoint) || checkpoint < 0)
        throw new ShippingRequestError(`${method} ${url}: no checkpoint in the reply`)
      return checkpoint
    } catch (error) {
      this.#next++
      throw error
    } finally {
      clearTimeout(timer)
      this.#aborts.delete(abort)
    }
  }
}
