/**
 * Ships one region's applied transactions to another region, each as one unit (Nami across
 * regions): it follows the local transaction log's outcomes in tid order and sends the writes of
 * every applied transaction of this region (not the ones it relayed from others) over a
 * {@link TxLink}, with where its commit entries are in the partition logs. The destination's
 * checkpoint of this region is where it starts and, after a failure, starts again (the receiver
 * takes each unit once). In the destination, the unit is one entry of its transaction log, applied
 * at one tid: a reader there sees all of the transaction or none of it.
 *
 * The commit entries themselves also reach the destination's partitions by the partition
 * shippers (the log of every origin is shipped whole, gap-free); there they are only logged.
 */
import { type TxShipment, TX_SHIPMENT_VERSION, encodeCommitWrites } from '@causeway/core'
import type { AbstractTxLog, ForeignTx } from '../storage/tx-log.js'
import type { TxLink } from './tx-link.js'

/** Options of a {@link TxShipper}. */
export interface TxShipperOptions {
  /** The local region's transaction log. */
  log: AbstractTxLog
  /** The destination region. */
  to: number
  link: TxLink
  /** Most transactions read at once. @default 256 */
  batchSize?: number
  /** First pause before a retry, ms (doubled up to `retryMaxMs`). @default 50 */
  retryMinMs?: number
  /** @default 5000 */
  retryMaxMs?: number
  /** Told about every failed attempt (retried). @default ignores it */
  onError?: (error: unknown) => void
}

/** See the module comment. */
export class TxShipper {
  readonly from: number
  readonly to: number
  readonly #log: AbstractTxLog
  readonly #link: TxLink
  readonly #batchSize: number
  readonly #retryMinMs: number
  readonly #retryMaxMs: number
  readonly #onError: (error: unknown) => void
  /** The local tid shipped (or looked at) through. */
  #sent = 0
  /** The destination's checkpoint, as last acknowledged. */
  #acked = 0
  #ready = false
  #pumping = false
  #again = false
  #failures = 0
  #stopped = false
  #timer: ReturnType<typeof setTimeout> | undefined
  #unsubscribe: (() => void) | undefined

  constructor(options: TxShipperOptions) {
    this.#log = options.log
    this.from = options.log.region
    this.to = options.to
    this.#link = options.link
    this.#batchSize = options.batchSize ?? 256
    this.#retryMinMs = options.retryMinMs ?? 50
    this.#retryMaxMs = options.retryMaxMs ?? 5000
    this.#onError = options.onError ?? (() => {})
  }

  /** Starts shipping from the destination's checkpoint. */
  start(): void {
    if (this.#unsubscribe || this.#stopped) return
    this.#unsubscribe = this.#log.onOutcomes(() => this.#pump())
    void this.#resume()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#ready = false
    this.#unsubscribe?.()
    clearTimeout(this.#timer)
    await this.#link.close()
  }

  /** The highest local tid the destination has acknowledged. */
  shipped(): number {
    return this.#acked
  }

  async #resume(): Promise<void> {
    this.#ready = false
    try {
      const checkpoint = await this.#link.checkpoint()
      if (this.#stopped) return
      this.#acked = checkpoint
      this.#sent = checkpoint
      this.#ready = true
      this.#pump()
    } catch (error) {
      this.#fail(error)
    }
  }

  #pump(): void {
    if (!this.#ready || this.#stopped) return
    if (this.#pumping) {
      this.#again = true
      return
    }
    this.#pumping = true
    void this.#fill().finally(() => {
      this.#pumping = false
      if (this.#again && this.#ready) {
        this.#again = false
        this.#pump()
      }
    })
  }

  async #fill(): Promise<void> {
    try {
      while (this.#ready && !this.#stopped && this.#sent < this.#log.appliedTid()) {
        const outcomes = await this.#log.readOutcomes(this.#sent, this.#batchSize)
        if (outcomes.length === 0) return
        const records = await this.#log.read(this.#sent, outcomes.length)
        const byTid = new Map(records.map((r) => [r.tid, r]))
        const units: ForeignTx[] = []
        for (const o of outcomes) {
          const record = byTid.get(o.tid)
          if (o.outcome !== 'applied' || record === undefined || record.foreign) continue
          if (record.writes.length === 0) continue
          units.push({
            region: this.from,
            tid: o.tid,
            ts: o.ts,
            writes: record.writes,
            parts: o.parts,
          })
        }
        const last = outcomes.at(-1)!.tid
        if (units.length > 0) {
          const shipment: TxShipment = {
            v: TX_SHIPMENT_VERSION,
            from: this.from,
            units: units.map((u) => ({
              tid: u.tid,
              ts: u.ts,
              writes: encodeCommitWrites(u.writes),
              parts: u.parts.map(([p, idx]) => [p, idx] as [number, number]),
            })),
          }
          this.#acked = Math.max(this.#acked, await this.#link.send(shipment))
        }
        this.#sent = last
        this.#failures = 0
      }
    } catch (error) {
      this.#fail(error)
    }
  }

  #fail(error: unknown): void {
    this.#ready = false
    if (this.#stopped) return
    this.#onError(error)
    const wait = Math.min(this.#retryMaxMs, this.#retryMinMs * 2 ** this.#failures++)
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => void this.#resume(), wait)
  }
}
