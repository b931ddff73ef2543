/**
 * Ships a region's stable label stream to one other region (the stabiliser leader runs one per
 * destination): from the destination's checkpoint (the labels it has received), in stream order,
 * in batches of at most `batchSize`, pipelined over a FIFO {@link LabelLink}. Each batch that
 * reaches the end of the stream carries the stabiliser's stable time, and the stable time also
 * travels alone (an envelope without labels) when it moved on and nothing else is to be sent, at
 * most once per `announceMs`. After any failure it waits (exponential backoff), asks for the
 * checkpoint again and resends from there; the destination drops the labels it has, so a resend
 * (or a new leader's first sends) changes nothing twice.
 *
 * The destination's answers carry what it has applied; the leader keeps stable labels until every
 * destination has applied them (`Stabiliser.trim`).
 */
import { type Hlc, labelEnvelope, type LabelEnvelope } from '@causeway/core'
import type { LabelCheckpoint, LabelLink } from './label-link.js'
import type { Stabiliser } from './stabiliser.js'

/** Options of a {@link LabelShipper}. */
export interface LabelShipperOptions {
  stabiliser: Stabiliser
  /** The destination region. */
  to: number
  /** The link to it; the shipper closes it on stop. */
  link: LabelLink
  /** @default 4096 */
  batchSize?: number
  /** @default 4 */
  maxInFlight?: number
  /** @default 50 */
  retryMinMs?: number
  /** @default 2000 */
  retryMaxMs?: number
  /**
   * Least time between two envelopes that only carry a newer stable time, in ms.
   * @default 5
   */
  announceMs?: number
  /** Told about every failed attempt (the shipper retries by itself). */
  onError?: (error: unknown) => void
  /** @default Date.now */
  now?: () => number
}

/** What one label shipper reports. */
export interface LabelShipperStatus {
  to: number
  /** Labels sent since it started. */
  sent: number
  /** Stable labels the destination has not acknowledged. */
  backlog: number
  /** The destination's applied idx of the origin, per partition (zeros until it answered). */
  applied: number[]
}

/** Ships one region's stable labels to one other region. */
export class LabelShipper {
  readonly to: number
  readonly #options: LabelShipperOptions
  readonly #stabiliser: Stabiliser
  readonly #link: LabelLink
  readonly #batchSize: number
  readonly #maxInFlight: number
  readonly #now: () => number
  /** The next sequence number to send. */
  #next = 0
  /** The sequence number up to which the destination acknowledged. */
  #acked = 0
  #inFlight = 0
  #attempt = 0
  #ready = false
  #stopped = false
  #failures = 0
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  /** The stable time the destination has, or will have once what is in flight arrives. */
  #announced: Hlc = '0000000000000000'
  #lastAnnounceAt = 0
  #applied: number[] | undefined
  #sent = 0

  constructor(options: LabelShipperOptions) {
    this.#options = options
    this.to = options.to
    this.#stabiliser = options.stabiliser
    this.#link = options.link
    this.#batchSize = options.batchSize ?? 4096
    this.#maxInFlight = options.maxInFlight ?? 4
    this.#now = options.now ?? Date.now
  }

  /** Asks the destination where it stands and ships from there. */
  start(): void {
    if (this.#stopped) return
    void this.#resume()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#ready = false
    clearTimeout(this.#retryTimer)
    await this.#link.close()
  }

  /** What the destination has applied, per partition, as it last said; undefined before it said. */
  applied(): readonly number[] | undefined {
    return this.#applied
  }

  status(): LabelShipperStatus {
    return {
      to: this.to,
      sent: this.#sent,
      backlog: Math.max(
        0,
        this.#stabiliser.endSeq() - Math.max(this.#acked, this.#stabiliser.firstSeq()),
      ),
      applied: [...(this.#applied ?? new Array<number>(this.#stabiliser.partitions).fill(0))],
    }
  }

  /** Sends what there is to send (called after each stabilisation). */
  pump(): void {
    if (!this.#ready || this.#stopped) return
    const attempt = this.#attempt
    while (this.#ready && attempt === this.#attempt && this.#inFlight < this.#maxInFlight) {
      const from = Math.max(this.#next, this.#stabiliser.firstSeq())
      const labels = this.#stabiliser.slice(from, this.#batchSize)
      const stableTo = this.#stabiliser.stabilisedTo()
      if (labels.length === 0) {
        const announce = this.#options.announceMs ?? 5
        if (stableTo <= this.#announced || this.#now() - this.#lastAnnounceAt < announce) return
        this.#send(labelEnvelope(this.#stabiliser.origin, stableTo, []), from, attempt)
        continue
      }
      const end = from + labels.length
      // Only a batch that reaches the end of the stream may claim the stable time.
      const stable = end === this.#stabiliser.endSeq() ? stableTo : this.#announced
      this.#next = end
      this.#sent += labels.length
      this.#send(labelEnvelope(this.#stabiliser.origin, stable, labels), end, attempt)
    }
  }

  #send(envelope: LabelEnvelope, end: number, attempt: number): void {
    this.#inFlight++
    if (envelope.stable > this.#announced) {
      this.#announced = envelope.stable
      this.#lastAnnounceAt = this.#now()
    }
    const last = envelope.labels.at(-1)
    this.#link.send(envelope).then(
      (checkpoint) => {
        this.#learn(checkpoint)
        if (attempt !== this.#attempt) return
        this.#inFlight--
        // A destination that did not take the last label has a gap: start over from it.
        if (last !== undefined && (checkpoint.received[last.p] ?? 0) < last.idx)
          return this.#fail(
            new Error(
              `region ${this.to} stopped at idx ${checkpoint.received[last.p] ?? 0} of partition ${last.p}, before ${last.idx}`,
            ),
          )
        if (end > this.#acked) this.#acked = end
        this.#failures = 0
        this.pump()
      },
      (error: unknown) => {
        if (attempt === this.#attempt) this.#fail(error)
      },
    )
  }

  async #resume(): Promise<void> {
    const attempt = ++this.#attempt
    this.#ready = false
    this.#inFlight = 0
    let checkpoint: LabelCheckpoint
    try {
      checkpoint = await this.#link.checkpoint()
    } catch (error) {
      if (attempt === this.#attempt) this.#fail(error)
      return
    }
    if (attempt !== this.#attempt || this.#stopped) return
    this.#learn(checkpoint)
    const seq = this.#stabiliser.seqAfter(checkpoint.received)
    if (seq === undefined) {
      this.#fail(
        new Error(
          `region ${this.to} lacks labels this stabiliser no longer keeps (it received ${checkpoint.received.join(',')})`,
        ),
      )
      return
    }
    this.#next = seq
    this.#acked = seq
    this.#announced = checkpoint.stable
    this.#ready = true
    this.pump()
  }

  #learn(checkpoint: LabelCheckpoint): void {
    const applied = (this.#applied ??= [...checkpoint.applied])
    checkpoint.applied.forEach((idx, p) => {
      if (idx > (applied[p] ?? 0)) applied[p] = idx
    })
  }

  #fail(error: unknown): void {
    this.#attempt++
    this.#ready = false
    if (this.#stopped) return
    this.#options.onError?.(error)
    const min = this.#options.retryMinMs ?? 50
    const max = this.#options.retryMaxMs ?? 2000
    const wait = Math.min(max, min * 2 ** this.#failures++)
    clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      void this.#resume()
    }, wait)
  }
}
