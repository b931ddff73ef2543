/**
 * The partition's side of Eunomia (thesis Algorithm 2) for one partition and one stabiliser
 * replica. The partition's leader already tags each update with a timestamp above every earlier
 * one and above what its client depends on (its HLC, NuKV's `updateHLC(dt)`), in the order of its
 * log; so the label of each local update is in the log, and the log is the FIFO, loss-free channel
 * from the partition to every replica of the stabiliser: each replica's feed reads the local
 * entries it has not read yet (on every `sv` advance) and hands their labels to its stabiliser,
 * in idx order. A heartbeat (`HEARTBEAT`, when the partition has written nothing for `Delta`) is
 * asked of the leader itself (`AbstractPartitionReplica.heartbeat`): it moves the partition's
 * clock on atomically with respect to its writes, so every label up to the idx it returns is read
 * before the heartbeat is taken.
 *
 * A label's vector timestamp is the update's HLC in its own region's entry and, in the others,
 * what its writer depended on (the client's vector clock, which the writer waited for this
 * region's `SiteTime` to cover): recorded by the writing gateway when it is this process
 * (`deps`); otherwise the region's `SiteTime` as read after the entry, which covers the writer's
 * clock and is only later (more dependencies than needed, never fewer). With two regions the other
 * entry is never looked at (Algorithm 5 checks regions other than the origin and the receiver) and
 * is left at zero.
 */
import { HLC_ZERO, type Hlc, type Label, label } from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import type { Stabiliser } from './stabiliser.js'

/** Options of a {@link PartitionFeed}. */
export interface PartitionFeedOptions {
  /** The region's leader of the partition. */
  leader: AbstractPartitionReplica
  stabiliser: Stabiliser
  /**
   * Most entries read from the log at once.
   * @default 1024
   */
  batchSize?: number
  /** The vector timestamp the writing gateway recorded for local update `idx`, if it is known here. */
  deps?: (p: number, idx: number) => readonly Hlc[] | undefined
  /** The region's `SiteTime` now, from where it is kept (regions > 2 only). */
  siteTime: () => Promise<readonly Hlc[]>
  /** Told about a read of the log that failed (the feed tries again on the next advance). */
  onError?: (error: unknown) => void
  /** The wall clock in ms. @default Date.now */
  now?: () => number
}

/** Feeds one partition's labels to one stabiliser replica. */
export class PartitionFeed {
  readonly p: number
  readonly #options: PartitionFeedOptions
  readonly #leader: AbstractPartitionReplica
  readonly #origin: number
  readonly #batchSize: number
  readonly #now: () => number
  /** The highest idx whose label the stabiliser has. */
  #read = 0
  #pulling: Promise<void> | undefined
  #again = false
  #unsubscribe: (() => void) | undefined
  #stopped = false
  /** Wall-clock ms at which the last label was taken. */
  #lastLabelAt = 0

  constructor(options: PartitionFeedOptions) {
    this.#options = options
    this.#leader = options.leader
    this.p = options.leader.partition
    this.#origin = options.leader.region
    this.#batchSize = options.batchSize ?? 1024
    this.#now = options.now ?? Date.now
  }

  /** The highest idx whose label the stabiliser has. */
  get read(): number {
    return this.#read
  }

  /** Starts after local update `afterIdx` (stamped `ts`), then follows the log. */
  start(afterIdx: number, ts: Hlc): void {
    this.#options.stabiliser.startAt(this.p, afterIdx, ts)
    this.#read = afterIdx
    this.#lastLabelAt = this.#now()
    this.#unsubscribe = this.#leader.onAdvance((sv) => {
      if ((sv[this.#origin] ?? 0) > this.#read) void this.pull()
    })
    void this.pull()
  }

  stop(): void {
    this.#stopped = true
    this.#unsubscribe?.()
  }

  /** Reads what the log has beyond what was read, up to `idx` at least when given. */
  pull(idx?: number): Promise<void> {
    if (this.#pulling) {
      this.#again = true
      return this.#pulling.then(() =>
        idx !== undefined && this.#read < idx ? this.pull(idx) : undefined,
      )
    }
    this.#pulling = this.#drain(idx).finally(() => {
      this.#pulling = undefined
    })
    return this.#pulling
  }

  /**
   * Asks the leader for a heartbeat and hands it to the stabiliser once every label it covers is
   * there. Rejects when the leader cannot be reached (the caller asks again later).
   */
  async heartbeat(): Promise<void> {
    const beat = await this.#leader.heartbeat()
    if (this.#read < beat.idx) await this.pull(beat.idx)
    if (this.#stopped || this.#read < beat.idx) return
    this.#options.stabiliser.heartbeat(this.p, beat.ts, beat.idx)
  }

  /** How long ago, in ms, the last label was taken (or the feed started). */
  idleMs(): number {
    return this.#now() - this.#lastLabelAt
  }

  async #drain(idx: number | undefined): Promise<void> {
    try {
      do {
        this.#again = false
        for (;;) {
          if (this.#stopped || this.#leader.state !== 'open') return
          const known = this.#leader.sv()[this.#origin] ?? 0
          const target = Math.max(known, idx ?? 0)
          if (this.#read >= target) break
          const entries = await this.#leader.readLog(
            this.#origin,
            this.#read,
            Math.min(this.#batchSize, target - this.#read),
          )
          if (entries.length === 0) break
          const labels = await this.#labelsOf(entries)
          if (this.#stopped) return
          this.#options.stabiliser.addLabels(this.p, labels)
          this.#read = entries.at(-1)!.idx
          this.#lastLabelAt = this.#now()
        }
      } while (this.#again)
    } catch (error) {
      this.#options.onError?.(error)
    }
  }

  async #labelsOf(entries: readonly { idx: number; ts: Hlc }[]): Promise<Label[]> {
    const { stabiliser, deps } = this.#options
    const regions = stabiliser.regions
    let site: readonly Hlc[] | undefined
    const out: Label[] = []
    for (const entry of entries) {
      let vts = deps?.(this.p, entry.idx)
      if (vts === undefined || vts[this.#origin] !== entry.ts) {
        if (regions > 2) site ??= await this.#options.siteTime()
        const conservative = regions > 2 ? [...site!] : new Array<Hlc>(regions).fill(HLC_ZERO)
        conservative[this.#origin] = entry.ts
        vts = conservative
      }
      out.push(label(this.p, entry.idx, vts))
    }
    return out
  }
}
