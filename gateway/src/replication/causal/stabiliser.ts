/**
 * Eunomia's site stabilisation (thesis Algorithm 3) for one region, as pure state: no I/O, no
 * timers, the wall clock injected. The region's partitions hand it their update labels, each
 * partition in idx order with growing timestamps (Property 2), and heartbeats when they write
 * nothing; it keeps `PartitionTime` (the latest time each partition has reported),
 * `StableTime = min(PartitionTime)`, and, when asked to ({@link Stabiliser.stabilise}), moves every
 * label at or below `StableTime` into one stream, in timestamp order with ties broken by
 * partition: the order the region's updates are shipped and applied in elsewhere.
 *
 * The stream is kept (not handed out and forgotten) until every other region has applied its
 * labels ({@link Stabiliser.trim}), so that a new leader among the stabiliser's replicas
 * (Algorithm 4) can ship from wherever each destination stands. Positions in the stream are
 * sequence numbers: 0 for the first label this stabiliser ordered.
 *
 * Bad input is refused with a stable code and leaves the state as it was: a partition the region
 * does not have or a label out of order (`INVALID_LABEL`), a vector timestamp without one entry
 * per region (`INVALID_VECTOR`), a time far past the clock (`CLOCK_SKEW_EXCEEDED`).
 */
import {
  CausewayError,
  HLC_ZERO,
  type Hlc,
  type Label,
  checkAhead,
  checkVector,
  isHlc,
  isSafeCounter,
  label as makeLabel,
} from '@causeway/core'

/** Options of a {@link Stabiliser}. */
export interface StabiliserOptions {
  /** The region whose labels it orders. */
  origin: number
  regions: number
  partitions: number
  /**
   * The wall clock in ms: a label or heartbeat further ahead of it than `maxAheadMs` is refused.
   * @default Date.now
   */
  now?: () => number
  /**
   * How far ahead of the clock a time may be, in ms (a partition's HLC may run ahead of the wall
   * clock by what clients depend on, bounded by the skew and clock-offset limits).
   * @default an hour and a half
   */
  maxAheadMs?: number
}

/** What {@link Stabiliser.counts} reports. */
export interface StabiliserCounts {
  /** Labels received and not yet stable. */
  pending: number
  /** Stable labels kept until every other region applied them. */
  retained: number
  /** Labels ordered since the stabiliser started. */
  ordered: number
}

/** A FIFO of labels with a moving head: pushes at the end, drops at the front. */
class LabelQueue {
  items: Label[] = []
  head = 0

  get size(): number {
    return this.items.length - this.head
  }

  first(): Label | undefined {
    return this.items[this.head]
  }

  at(i: number): Label | undefined {
    return this.items[this.head + i]
  }

  push(l: Label): void {
    this.items.push(l)
  }

  shift(): Label | undefined {
    const l = this.items[this.head]
    if (l === undefined) return undefined
    this.head++
    // Compacted now and then, so a long-lived queue neither grows nor copies on every shift.
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return l
  }
}

/** One region's stabiliser state. See the module comment. */
export class Stabiliser {
  readonly origin: number
  readonly regions: number
  readonly partitions: number
  readonly #now: () => number
  readonly #maxAheadMs: number | undefined
  /** Labels received and not yet stable, per partition, in idx order. */
  readonly #queues: LabelQueue[]
  /** The highest idx received of each partition. */
  readonly #top: number[]
  /** The timestamp of label `#top[p]` (or of the starting point). */
  readonly #lastTs: Hlc[]
  readonly #partitionTime: Hlc[]
  /** The stable stream, from sequence number `#firstSeq` on. */
  readonly #stable = new LabelQueue()
  #firstSeq = 0
  /** Every label at or below this time is in the stable stream. */
  #stabilisedTo: Hlc = HLC_ZERO
  #ordered = 0

  constructor(options: StabiliserOptions) {
    const { origin, regions, partitions } = options
    if (!Number.isInteger(regions) || regions < 1) throw new RangeError('regions must be >= 1')
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new RangeError('partitions must be >= 1')
    if (!Number.isInteger(origin) || origin < 0 || origin >= regions)
      throw new RangeError('origin must be a region')
    this.origin = origin
    this.regions = regions
    this.partitions = partitions
    this.#now = options.now ?? Date.now
    this.#maxAheadMs = options.maxAheadMs
    this.#queues = Array.from({ length: partitions }, () => new LabelQueue())
    this.#top = new Array<number>(partitions).fill(0)
    this.#lastTs = new Array<Hlc>(partitions).fill(HLC_ZERO)
    this.#partitionTime = new Array<Hlc>(partitions).fill(HLC_ZERO)
  }

  /**
   * Where partition `p`'s labels start: those up to `idx` (the last of them stamped `ts`) are not
   * needed (every other region has applied them). Only before any label of `p` arrived.
   */
  startAt(p: number, idx: number, ts: Hlc): void {
    this.#checkPartition(p)
    if (this.#top[p] !== 0 || this.#queues[p]!.size > 0)
      throw new Error(`partition ${p} has started already`)
    this.#top[p] = idx
    this.#lastTs[p] = ts
    if (ts > this.#partitionTime[p]!) this.#partitionTime[p] = ts
  }

  /**
   * Takes labels of partition `p` (Algorithm 3, `ADD_OP`), in idx order; labels it has already
   * are skipped. `PartitionTime[p]` becomes the last one's timestamp. Checked whole first.
   * @throws `INVALID_LABEL` for a partition the region does not have (`details.field: 'p'`), a
   * label of another partition, a gap in the idx (`'idx'`) or a timestamp not after the one
   * before (`'ts'`); `INVALID_VECTOR`, `INVALID_HLC`, `CLOCK_SKEW_EXCEEDED` as the label check
   * says. Nothing is taken then.
   */
  addLabels(p: number, labels: readonly Label[]): number {
    this.#checkPartition(p)
    let top = this.#top[p]!
    let lastTs = this.#lastTs[p]!
    const fresh: Label[] = []
    const nowMs = this.#now()
    for (const l of labels) {
      if (typeof l !== 'object' || l === null) throw invalid('a label must be an object', 'label')
      if (l.p !== p) throw invalid(`a label of partition ${l.p} given as partition ${p}'s`, 'p')
      if (!isSafeCounter(l.idx)) throw invalid('idx is not in 1..2^53 - 2', 'idx')
      checkVector(l.vts, this, 'vts')
      const ts = l.vts[this.origin]!
      checkAhead(ts, { nowMs, ...this.#ahead() }, `the label of partition ${p} idx ${l.idx}`)
      if (l.idx <= top) continue // a label it has (sent again after a restart): dropped
      if (l.idx !== top + 1)
        throw invalid(
          `partition ${p}: label idx ${l.idx} does not follow idx ${top} (a label is missing)`,
          'idx',
          { partition: p, expected: top + 1, got: l.idx },
        )
      if (ts <= lastTs)
        throw invalid(
          `partition ${p}: label idx ${l.idx} has time ${ts}, not after ${lastTs} (Property 2)`,
          'ts',
          { partition: p },
        )
      fresh.push(Object.isFrozen(l) ? l : makeLabel(l.p, l.idx, l.vts))
      top = l.idx
      lastTs = ts
    }
    const queue = this.#queues[p]!
    for (const l of fresh) queue.push(l)
    this.#top[p] = top
    this.#lastTs[p] = lastTs
    if (lastTs > this.#partitionTime[p]!) this.#partitionTime[p] = lastTs
    return fresh.length
  }

  /**
   * A heartbeat of partition `p` (Algorithm 3, `HEARTBEAT`): its labels up to `idx` are all
   * here and every later one will have a timestamp after `ts`, so `PartitionTime[p]` moves to
   * `ts` (a heartbeat older than what the partition reported already changes nothing).
   * @throws `INVALID_LABEL` for a partition the region does not have, a heartbeat ahead of the
   * labels it covers (`details.field: 'idx'`) or not after them (`'ts'`); `INVALID_HLC`,
   * `CLOCK_SKEW_EXCEEDED`.
   */
  heartbeat(p: number, ts: Hlc, idx: number): void {
    this.#checkPartition(p)
    if (!isHlc(ts)) throw new CausewayError('INVALID_HLC', 'a heartbeat time must be an HLC')
    if (!isSafeCounter(idx, 0)) throw invalid('idx is not in 0..2^53 - 2', 'idx')
    checkAhead(ts, { nowMs: this.#now(), ...this.#ahead() }, `the heartbeat of partition ${p}`)
    const top = this.#top[p]!
    if (idx > top)
      throw invalid(
        `partition ${p}: a heartbeat after idx ${idx}, but labels only up to ${top} arrived`,
        'idx',
        { partition: p, top, got: idx },
      )
    if (idx === top && ts <= this.#lastTs[p]!)
      throw invalid(
        `partition ${p}: a heartbeat at ${ts}, not after its last label's ${this.#lastTs[p]}`,
        'ts',
        { partition: p },
      )
    if (ts > this.#partitionTime[p]!) this.#partitionTime[p] = ts
  }

  /** `StableTime`: no partition will report anything at or below it. */
  stableTime(): Hlc {
    let min = this.#partitionTime[0]!
    for (const t of this.#partitionTime) if (t < min) min = t
    return min
  }

  /** `PartitionTime`, a copy. */
  partitionTime(): Hlc[] {
    return [...this.#partitionTime]
  }

  /** The highest idx of partition `p` received. */
  top(p: number): number {
    return this.#top[p]!
  }

  /** Every label at or below this time is in the stable stream (and was stable when moved). */
  stabilisedTo(): Hlc {
    return this.#stabilisedTo
  }

  /**
   * Algorithm 3, `PROCESS_STABLE`: moves every label at or below `StableTime` (and `upTo`, when
   * given) into the stable stream, in (timestamp, partition) order. Returns how many it moved.
   */
  stabilise(upTo?: Hlc): number {
    let limit = this.stableTime()
    if (upTo !== undefined && upTo < limit) limit = upTo
    const origin = this.origin
    // Each partition's stable labels are a prefix of its queue, already in order: gathered run
    // after run and sorted, which merges the runs (the engine's sort finds them), faster than a
    // heap of queue heads in JavaScript.
    const stable: Label[] = []
    for (const queue of this.#queues) {
      for (let l = queue.first(); l !== undefined && l.vts[origin]! <= limit; l = queue.first()) {
        stable.push(l)
        queue.shift()
      }
    }
    stable.sort((a, b) => {
      const ta = a.vts[origin]!
      const tb = b.vts[origin]!
      return ta < tb ? -1 : ta > tb ? 1 : a.p - b.p
    })
    for (const l of stable) this.#stable.push(l)
    this.#ordered += stable.length
    if (limit > this.#stabilisedTo) this.#stabilisedTo = limit
    return stable.length
  }

  /** The sequence number of the first stable label kept. */
  firstSeq(): number {
    return this.#firstSeq
  }

  /** The sequence number after the last stable label. */
  endSeq(): number {
    return this.#firstSeq + this.#stable.size
  }

  /** Up to `max` stable labels from sequence number `from` (at least {@link firstSeq}). */
  slice(from: number, max: number): Label[] {
    const start = Math.max(from, this.#firstSeq) - this.#firstSeq
    const end = Math.min(this.#stable.size, start + max)
    const out: Label[] = []
    for (let i = start; i < end; i++) out.push(this.#stable.at(i)!)
    return out
  }

  /**
   * Where a destination that has received `received[p]` of each partition stands in the stable
   * stream: the sequence number of the first label it lacks (it has received a prefix of the
   * stream). Undefined when it lacks labels this stabiliser no longer keeps.
   */
  seqAfter(received: readonly number[]): number | undefined {
    // The first idx of each partition this stabiliser still has (stable, pending, or to come).
    const firstKnown = this.#top.map((top) => top + 1)
    const seen = new Array<boolean>(this.partitions).fill(false)
    for (let i = 0; i < this.#stable.size; i++) {
      const l = this.#stable.at(i)!
      if (!seen[l.p]) {
        seen[l.p] = true
        firstKnown[l.p] = l.idx
      }
    }
    for (let p = 0; p < this.partitions; p++) {
      const pending = this.#queues[p]!.first()
      if (!seen[p] && pending !== undefined) firstKnown[p] = pending.idx
      if ((received[p] ?? 0) + 1 < firstKnown[p]!) return undefined
    }
    let i = 0
    while (
      i < this.#stable.size &&
      this.#stable.at(i)!.idx <= (received[this.#stable.at(i)!.p] ?? 0)
    )
      i++
    return this.#firstSeq + i
  }

  /**
   * Drops the labels every other region has applied (`applied[p]`: the idx of partition `p`
   * applied everywhere): from the front of the stable stream and of each partition's queue (a
   * replica that does not lead never stabilises: only a leader, which has asked every partition
   * for its time, knows the order past its own labels; and a new leader may hold labels its
   * predecessor shipped that are not yet stable for it).
   */
  trim(applied: readonly number[]): number {
    let dropped = 0
    for (let head = this.#stable.first(); head !== undefined; head = this.#stable.first()) {
      if (head.idx > (applied[head.p] ?? 0)) break
      this.#stable.shift()
      this.#firstSeq++
      dropped++
    }
    this.#queues.forEach((queue, p) => {
      for (let head = queue.first(); head !== undefined; head = queue.first()) {
        if (head.idx > (applied[p] ?? 0)) break
        queue.shift()
        dropped++
      }
    })
    return dropped
  }

  /** Sizes, for the status. */
  counts(): StabiliserCounts {
    let pending = 0
    for (const queue of this.#queues) pending += queue.size
    return { pending, retained: this.#stable.size, ordered: this.#ordered }
  }

  #ahead(): { maxAheadMs?: number } {
    return this.#maxAheadMs === undefined ? {} : { maxAheadMs: this.#maxAheadMs }
  }

  #checkPartition(p: number): void {
    if (!Number.isInteger(p) || p < 0 || p >= this.partitions)
      throw invalid(
        `partition ${JSON.stringify(p)} does not exist (the region has ${this.partitions})`,
        'p',
        { partition: typeof p === 'number' ? p : null, partitions: this.partitions },
      )
  }
}

function invalid(why: string, field: string, details: Record<string, unknown> = {}): CausewayError {
  return new CausewayError('INVALID_LABEL', `invalid label: ${why}`, { field, ...details })
}
