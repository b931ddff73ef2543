/**
 * Cross-region FIFO shipping (NuKV's XC): one shipper per (partition, local region → destination
 * region). It tails the local leader's log for entries whose origin is the local region and sends
 * them in idx order, in bounded batches, pipelined over a FIFO {@link ShippingLink}.
 *
 * The destination's `sv[origin]` is the checkpoint: the shipper starts from it, and after any
 * failure it waits (exponential backoff), asks for it again and resends from there. The receiver
 * skips what it already has, so resending is harmless and shipping is resumable across restarts.
 *
 * Each envelope carries the source's epoch history of its own sequence (version 2 once it has
 * more than the initial epoch): a new epoch starts above a range of indexes that were lost or
 * never used, so an envelope never spans such a gap, and the first one after it tells the
 * destination, by that history, that nothing lies in between.
 */
import { type ShipperStatus, lastKeptBefore, shipEnvelope } from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { LogEntry } from '../storage/partition-replica.js'
import type { ShippingLink } from './shipping-link.js'

/** Options of a {@link Shipper}. */
export interface ShipperOptions {
  /** The local leader of the partition, whose own-region entries are shipped. */
  source: AbstractPartitionReplica
  /** The destination region. */
  to: number
  /** The channel to the destination's leader of the same partition. The shipper closes it on stop. */
  link: ShippingLink
  /**
   * Most entries in one batch.
   * @default 256
   */
  batchSize?: number
  /**
   * Most batches sent and not yet acknowledged.
   * @default 8
   */
  maxInFlight?: number
  /**
   * First wait before retrying after a failure, in ms; doubled on each consecutive failure.
   * @default 50
   */
  retryMinMs?: number
  /**
   * Longest wait between retries, in ms.
   * @default 5000
   */
  retryMaxMs?: number
  /**
   * Told about every failed attempt (the shipper retries by itself).
   * @default ignores them
   */
  onError?: (error: unknown) => void
  /**
   * The wall clock the source stamps its entries' `at` with, for the link's lag in ms.
   * @default Date.now
   */
  now?: () => number
}

/** Ships one partition's local writes to one other region, in order. */
export class Shipper {
  readonly partition: number
  readonly from: number
  readonly to: number
  readonly #source: AbstractPartitionReplica
  readonly #link: ShippingLink
  readonly #batchSize: number
  readonly #maxInFlight: number
  readonly #retryMinMs: number
  readonly #retryMaxMs: number
  readonly #onError: (error: unknown) => void
  readonly #now: () => number

  /** Highest idx the destination has acknowledged. */
  #acked = 0
  /** Highest idx sent in the current attempt. */
  #sent = 0
  #inFlight = 0
  /** Bumped on each (re)start, so answers to an abandoned attempt cannot disturb the next. */
  #attempt = 0
  #ready = false
  #pumping = false
  #failures = 0
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #unsubscribe: (() => void) | undefined
  #stopped = false

  constructor(options: ShipperOptions) {
    this.#source = options.source
    this.partition = options.source.partition
    this.from = options.source.region
    this.to = options.to
    this.#link = options.link
    this.#batchSize = options.batchSize ?? 256
    this.#maxInFlight = options.maxInFlight ?? 8
    this.#retryMinMs = options.retryMinMs ?? 50
    this.#retryMaxMs = options.retryMaxMs ?? 5000
    this.#onError = options.onError ?? (() => {})
    this.#now = options.now ?? Date.now
    if (!(this.#batchSize >= 1) || !(this.#maxInFlight >= 1)) {
      throw new RangeError('batchSize and maxInFlight must be at least 1')
    }
  }

  /** Starts shipping from the destination's checkpoint. */
  start(): void {
    if (this.#unsubscribe || this.#stopped) return
    this.#unsubscribe = this.#source.onAdvance(() => this.#pump())
    void this.#resume()
  }

  /** Stops shipping and closes the link; what is in flight is dropped and resent on the next start. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#ready = false
    this.#unsubscribe?.()
    clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    await this.#link.close()
  }

  /** Highest idx the destination has acknowledged. */
  shipped(): number {
    return this.#acked
  }

  /** Local writes not yet acknowledged by the destination. */
  backlog(): number {
    return Math.max(0, this.#written() - this.#acked)
  }

  // The highest index of the source's own log: its `sv`, less a new epoch's unused start.
  #written(): number {
    const sv = this.#source.sv()[this.from] ?? 0
    return lastKeptBefore(this.#source.epochHistory(this.from), sv + 1)
  }

  /**
   * This shipper's line of `GET /v1/status`. Its `lagMs` is the age of the oldest entry the
   * destination has not acknowledged (read from the source's log; 0 when there is none, or when
   * the log cannot be read now).
   */
  async status(): Promise<ShipperStatus> {
    const shipped = this.#acked
    const backlog = this.backlog()
    let lagMs = 0
    if (backlog > 0) {
      const [oldest] = await this.#source.readLog(this.from, shipped, 1).catch(() => [])
      if (oldest) lagMs = Math.max(0, this.#now() - oldest.at)
    }
    return { partition: this.partition, from: this.from, to: this.to, shipped, backlog, lagMs }
  }

  // Asks the destination how far it got and ships from there.
  async #resume(): Promise<void> {
    const attempt = ++this.#attempt
    this.#ready = false
    this.#inFlight = 0
    let checkpoint: number
    try {
      checkpoint = await this.#link.checkpoint()
    } catch (error) {
      if (attempt === this.#attempt) this.#fail(error)
      return
    }
    if (attempt !== this.#attempt || this.#stopped) return
    this.#acked = Math.max(this.#acked, checkpoint)
    this.#sent = checkpoint
    this.#ready = true
    this.#pump()
  }

  // Sends batches while there is something to send and room in flight.
  #pump(): void {
    if (!this.#ready || this.#pumping || this.#stopped) return
    this.#pumping = true
    void this.#fill()
  }

  async #fill(): Promise<void> {
    const attempt = this.#attempt
    try {
      while (this.#ready && attempt === this.#attempt && this.#inFlight < this.#maxInFlight) {
        const written = this.#written()
        if (written <= this.#sent) return
        const read = await this.#source.readLog(
          this.from,
          this.#sent,
          Math.min(this.#batchSize, written - this.#sent),
        )
        if (attempt !== this.#attempt || read.length === 0) return
        // One envelope never spans a new epoch's start: cut the batch there.
        let n = 1
        while (n < read.length && read[n]!.idx === read[n - 1]!.idx + 1) n++
        const entries = n === read.length ? read : read.slice(0, n)
        this.#sent = entries.at(-1)!.idx
        this.#inFlight++
        this.#send(entries, attempt)
      }
    } catch (error) {
      if (attempt === this.#attempt) this.#fail(error)
    } finally {
      this.#pumping = false
      // A new attempt began while this one was reading the log: it has not pumped yet.
      if (attempt !== this.#attempt) this.#pump()
    }
  }

  #send(entries: readonly LogEntry[], attempt: number): void {
    const envelope = shipEnvelope(this.from, this.#source.epochHistory(this.from), entries)
    const last = envelope.last
    this.#link.send(envelope).then(
      (checkpoint) => {
        // The destination's sv only grows, so even a late answer is a valid checkpoint.
        this.#acked = Math.max(this.#acked, checkpoint)
        if (attempt !== this.#attempt) return
        this.#inFlight--
        if (checkpoint < last)
          return this.#fail(
            new Error(`destination stopped at ${checkpoint}, before ${last}: a gap`),
          )
        this.#failures = 0
        this.#pump()
      },
      (error: unknown) => {
        if (attempt === this.#attempt) this.#fail(error)
      },
    )
  }

  // Abandons the current attempt and retries from the checkpoint after a backoff.
  #fail(error: unknown): void {
    this.#attempt++
    this.#ready = false
    if (this.#stopped) return
    this.#onError(error)
    const wait = Math.min(this.#retryMaxMs, this.#retryMinMs * 2 ** this.#failures++)
    clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      void this.#resume()
    }, wait)
  }
}
