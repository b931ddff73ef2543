/**
 * An emulated WAN in front of any {@link ShippingLink}, for benchmarks and tests on one machine
 * (`causeway dev --backend redis --wan-delay MS`): every call reaches the inner link `delayMs`
 * after it was made and its answer comes back `delayMs` after the inner link answered, as the
 * embedded cluster's in-process link does. Calls travel one FIFO line each way, so pipelined
 * batches still arrive in order (the inner link keeps its own order for what it is handed).
 */
import type { ShipEnvelope, TxShipment } from '@causeway/core'
import { DelayedRoundTrip } from '../replication/delayed-round-trip.js'
import type { ShippingLink } from '../replication/shipping-link.js'
import type { TxLink } from '../replication/tx-link.js'

/** A {@link ShippingLink} whose calls and answers each take `delayMs` longer. */
export class DelayedShippingLink implements ShippingLink {
  readonly #inner: ShippingLink
  readonly #wan: DelayedRoundTrip

  /** @param delayMs one-way delay in ms (0 still answers asynchronously). */
  constructor(inner: ShippingLink, delayMs: number) {
    this.#inner = inner
    this.#wan = new DelayedRoundTrip(delayMs)
  }

  checkpoint(): Promise<number> {
    return this.#wan.call(() => this.#inner.checkpoint())
  }

  send(envelope: ShipEnvelope): Promise<number> {
    return this.#wan.call(() => this.#inner.send(envelope))
  }

  async close(): Promise<void> {
    this.#wan.close()
    await this.#inner.close()
  }
}

/** A {@link TxLink} whose calls and answers each take `delayMs` longer (as above). */
export class DelayedTxLink implements TxLink {
  readonly #inner: TxLink
  readonly #wan: DelayedRoundTrip

  constructor(inner: TxLink, delayMs: number) {
    this.#inner = inner
    this.#wan = new DelayedRoundTrip(delayMs)
  }

  checkpoint(): Promise<number> {
    return this.#wan.call(() => this.#inner.checkpoint())
  }

  send(shipment: TxShipment): Promise<number> {
    return this.#wan.call(() => this.#inner.send(shipment))
  }

  async close(): Promise<void> {
    this.#wan.close()
    await this.#inner.close()
  }
}
