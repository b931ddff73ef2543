/**
 * The receiving side of a region of the embedded cluster, in memory (`receiver-store.ts`). What it
 * holds is lost with the process, and so is everything else of an embedded cluster's process but
 * its replicas: after a restart the label queues and the inbox start empty, their checkpoints are
 * what the leaders have applied, and the senders resend from there.
 */
import {
  type Hlc,
  HLC_ZERO,
  type Label,
  type LabelEnvelope,
  type LogEntry,
  type ShipEnvelope,
  checkShipEnvelope,
  zeroClock,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import type { LabelCheckpoint } from './label-link.js'
import type {
  CausalInbox,
  LabelQueues,
  QueuedLabels,
  ReceiverStore,
  SiteTimeStore,
} from './receiver-store.js'

/** Options of a {@link MemoryReceiverStore}. */
export interface MemoryReceiverStoreOptions {
  region: number
  regions: number
  /** The region's partition leaders, by partition. */
  leaders: readonly AbstractPartitionReplica[]
  /**
   * Most entries kept per origin and partition; a shipper that would pass it is told to come back
   * later (its checkpoint stays behind).
   * @default 100000
   */
  maxInbox?: number
  /** Told when labels or data arrive. */
  onArrival?: (origin: number) => void
  /** Told when `SiteTime` rises. */
  onSiteTime?: (site: readonly Hlc[]) => void
}

interface OriginQueue {
  labels: Label[]
  head: number
  /** Labels popped since the store started: the position of `labels[head]`. */
  popped: number
  /** Per partition, the highest idx queued. */
  top: number[]
  stable: Hlc
  stableAt: number
  waiters: Set<() => void>
}

interface InboxPart {
  entries: Map<number, LogEntry>
  /** The highest idx kept. */
  top: number
  /** The lowest idx that may still be kept. */
  low: number
  epoch: number
}

/** A region's receiver store in memory. */
export class MemoryReceiverStore implements ReceiverStore, LabelQueues, CausalInbox, SiteTimeStore {
  readonly labels: LabelQueues = this
  readonly inbox: CausalInbox = this
  readonly site: SiteTimeStore = this
  readonly #options: MemoryReceiverStoreOptions
  readonly #queues: OriginQueue[]
  readonly #inbox: InboxPart[][]
  readonly #site: Hlc[]

  constructor(options: MemoryReceiverStoreOptions) {
    this.#options = options
    const partitions = options.leaders.length
    this.#queues = Array.from({ length: options.regions }, () => ({
      labels: [],
      head: 0,
      popped: 0,
      top: new Array<number>(partitions).fill(0),
      stable: HLC_ZERO,
      stableAt: 0,
      waiters: new Set(),
    }))
    this.#inbox = Array.from({ length: options.regions }, () =>
      Array.from({ length: partitions }, () => ({
        entries: new Map(),
        top: 0,
        low: 1,
        epoch: 1,
      })),
    )
    this.#site = zeroClock(options.regions)
  }

  // ---- labels

  labelCheckpoint(origin: number): Promise<LabelCheckpoint> {
    return Promise.resolve(this.labelCheckpointNow(origin))
  }

  /** Where `origin`'s labels stand, now. */
  labelCheckpointNow(origin: number): LabelCheckpoint {
    const queue = this.#queue(origin)
    const applied = this.#applied(origin)
    return {
      received: applied.map((idx, p) => Math.max(idx, queue.top[p]!)),
      applied,
      stable: queue.stable,
    }
  }

  append(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    const queue = this.#queue(envelope.from)
    const received = this.labelCheckpointNow(envelope.from).received
    let whole = true
    for (const l of envelope.labels) {
      const have = received[l.p]!
      if (l.idx <= have) continue
      if (l.idx !== have + 1) {
        whole = false
        break
      }
      queue.labels.push(l)
      queue.top[l.p] = l.idx
      received[l.p] = l.idx
    }
    if (whole && envelope.stable > queue.stable) {
      queue.stable = envelope.stable
      queue.stableAt = queue.popped + queue.labels.length - queue.head
    }
    for (const wake of queue.waiters) wake()
    this.#options.onArrival?.(envelope.from)
    return Promise.resolve(this.labelCheckpointNow(envelope.from))
  }

  head(origin: number, max: number): Promise<QueuedLabels> {
    const queue = this.#queue(origin)
    return Promise.resolve({
      labels: queue.labels.slice(queue.head, queue.head + max),
      first: queue.popped,
      stable: queue.stable,
      stableAt: queue.stableAt,
    })
  }

  pop(origin: number, first: number, count: number): Promise<void> {
    const queue = this.#queue(origin)
    if (queue.popped !== first) return Promise.resolve()
    const n = Math.min(count, queue.labels.length - queue.head)
    queue.head += n
    queue.popped += n
    if (queue.head > 4096 && queue.head * 2 > queue.labels.length) {
      queue.labels = queue.labels.slice(queue.head)
      queue.head = 0
    }
    return Promise.resolve()
  }

  waitForLabels(origin: number, after: number, stable: Hlc, ms: number): Promise<void> {
    const queue = this.#queue(origin)
    if (queue.popped + queue.labels.length - queue.head > after || queue.stable > stable)
      return Promise.resolve()
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        queue.waiters.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      queue.waiters.add(wake)
    })
  }

  queued(origin: number): Promise<number> {
    const queue = this.#queue(origin)
    return Promise.resolve(queue.labels.length - queue.head)
  }

  // ---- data

  dataCheckpoint(origin: number, p: number): Promise<number> {
    return Promise.resolve(this.dataCheckpointNow(origin, p))
  }

  /** The shipper's checkpoint for `origin`'s entries of partition `p`, now. */
  dataCheckpointNow(origin: number, p: number): number {
    const part = this.#part(origin, p)
    return Math.max(this.#leader(p).sv()[origin] ?? 0, part.top)
  }

  stash(p: number, envelope: ShipEnvelope): Promise<number> {
    try {
      const checked = checkShipEnvelope(envelope, this.#options.regions, this.#options.region)
      const part = this.#part(checked.from, p)
      const max = this.#options.maxInbox ?? 100_000
      let have = this.dataCheckpointNow(checked.from, p)
      for (const entry of checked.entries) {
        if (entry.idx <= have) continue
        if (entry.idx !== have + 1 || part.entries.size >= max) break
        part.entries.set(entry.idx, entry)
        part.top = have = entry.idx
      }
      part.epoch = checked.epoch
      this.#options.onArrival?.(checked.from)
      return Promise.resolve(this.dataCheckpointNow(checked.from, p))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  take(
    origin: number,
    p: number,
    afterIdx: number,
    lastIdx: number,
  ): Promise<{ entries: LogEntry[]; epoch: number }> {
    const part = this.#part(origin, p)
    const entries: LogEntry[] = []
    for (let idx = afterIdx + 1; idx <= lastIdx; idx++) {
      const entry = part.entries.get(idx)
      if (entry === undefined) break
      entries.push(entry)
    }
    return Promise.resolve({ entries, epoch: part.epoch })
  }

  drop(origin: number, p: number, idx: number): Promise<void> {
    const part = this.#part(origin, p)
    for (; part.low <= idx; part.low++) part.entries.delete(part.low)
    return Promise.resolve()
  }

  /** How many entries of `origin` wait in the inbox, over every partition. */
  inboxSize(origin: number): number {
    return this.#inbox[origin]!.reduce((sum, part) => sum + part.entries.size, 0)
  }

  // ---- SiteTime

  read(): Promise<Hlc[]> {
    return Promise.resolve([...this.#site])
  }

  raise(origin: number, ts: Hlc): Promise<void> {
    if (ts > this.#site[origin]!) {
      this.#site[origin] = ts
      this.#options.onSiteTime?.(this.#site)
    }
    return Promise.resolve()
  }

  #queue(origin: number): OriginQueue {
    const queue = this.#queues[origin]
    if (!queue || origin === this.#options.region) throw new RangeError(`no queue for ${origin}`)
    return queue
  }

  #part(origin: number, p: number): InboxPart {
    const part = this.#inbox[origin]?.[p]
    if (!part || origin === this.#options.region)
      throw new RangeError(`no inbox for region ${origin}, partition ${p}`)
    return part
  }

  #leader(p: number): AbstractPartitionReplica {
    return this.#options.leaders[p]!
  }

  #applied(origin: number): number[] {
    return this.#options.leaders.map((leader) => leader.sv()[origin] ?? 0)
  }
}
