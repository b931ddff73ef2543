/**
 * How far ahead a write's dependency time (`causeway-dt`) may be, checked against clocks rather
 * than against this region's wall clock alone.
 *
 * A session carries the HLC of what it read and wrote, possibly stamped in a region whose wall
 * clock runs ahead of this one's. Such a time is legitimate: this region's HLC would reach it
 * anyway once that region's entries are shipped here. What the clamp must stop is a client moving
 * a partition's clock further into the future than any region's clock is. So the reference is
 * the latest of this region's wall clock and the wall clocks of the other regions as their
 * shipped entries report them (each log entry's `at`: the wall-clock ms its origin leader appended
 * it, which no client can move, unlike `ts`; so two regions cannot ratchet each other's clocks
 * forward through their clients). A dependency more than `maxSkewMs` ahead of that reference waits
 * up to `waitMs` (for shipping to bring a later entry, or for the wall clock to catch up) and is
 * refused only then; one that no region's clock could reach, as it is more than `maxSkewMs` past
 * this region's clock plus `maxOffsetMs` (how far ahead another region's clock may run) and past
 * every clock known, is refused at once.
 *
 * The other regions' clocks are read from the newest entry of each origin at this region's
 * partition leaders: on the slow path only (a dependency ahead of what is known), then on each
 * `sv` advance of a leader while writes wait; only entries not read before. One read of all
 * leaders at a time is shared by every write that needs it.
 */
import { hlcMillis, type Hlc } from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'

/** Options of {@link RegionClocks}. */
export interface RegionClocksOptions {
  region: number
  /** This region's partition leaders, by partition. */
  leaders: () => readonly AbstractPartitionReplica[]
  /** This region's wall clock, in ms. */
  now: () => number
}

/** What {@link RegionClocks.admit} found. */
export interface ClockCheck {
  ok: boolean
  /** How far the dependency is ahead of the reference (the latest clock known), in ms. */
  aheadMs: number
  /** The latest wall clock known: this region's or another's, as its entries report it. */
  referenceMs: number
  /** How long the check waited, in ms. */
  waitedMs: number
}

interface Waiter {
  dtMs: number
  allowanceMs: number
  resolve: () => void
}

/** The wall clocks of a region and of the regions that ship to it, as far as it knows them. */
export class RegionClocks {
  readonly #options: RegionClocksOptions
  /** The latest `at` of another region's entry seen at this region's leaders. */
  #othersMs = 0
  /** `#seen[p][d]`: the idx of region `d`'s newest entry read at partition `p`'s leader. */
  readonly #seen: number[][] = []
  #learning: Promise<void> | undefined
  readonly #waiters = new Set<Waiter>()
  #unsubscribe: (() => void)[] = []
  /** Partitions whose leader advanced since their newest entries were read. */
  readonly #advanced = new Set<number>()
  #reading = false

  constructor(options: RegionClocksOptions) {
    this.#options = options
  }

  /** The latest wall clock this region knows of, in ms. */
  referenceMs(): number {
    return Math.max(this.#options.now(), this.#othersMs)
  }

  /**
   * Whether `dt` is at most `allowanceMs` ahead of the latest clock known, waiting up to `waitMs`
   * for that to become true (other regions' newer entries arriving, or the wall clock moving);
   * without waiting when `dt` is more than `allowanceMs` past this region's clock plus
   * `maxOffsetMs` too.
   */
  async admit(
    dt: Hlc,
    allowanceMs: number,
    waitMs: number,
    maxOffsetMs: number,
  ): Promise<ClockCheck> {
    const dtMs = hlcMillis(dt)
    const started = performance.now()
    const check = (): ClockCheck => {
      const referenceMs = this.referenceMs()
      const aheadMs = dtMs - referenceMs
      return {
        ok: aheadMs <= allowanceMs,
        aheadMs,
        referenceMs,
        waitedMs: performance.now() - started,
      }
    }
    if (check().ok) return check()
    await this.#learnAll()
    const after = check()
    if (after.ok || waitMs <= 0) return after
    const reachable = Math.max(after.referenceMs, this.#options.now() + maxOffsetMs)
    if (dtMs - reachable > allowanceMs) return after
    await this.#wait({ dtMs, allowanceMs, resolve: () => {} }, waitMs)
    // A last look, in case an advance came without its event (entries already read are skipped).
    if (!check().ok) await this.#learnAll()
    return check()
  }

  // Resolves when the waiter is admitted or after `waitMs`, whichever is first.
  #wait(waiter: Waiter, waitMs: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const deadline = performance.now() + waitMs
      const done = () => {
        clearTimeout(timer)
        this.#waiters.delete(waiter)
        if (this.#waiters.size === 0) this.#stopWatching()
        resolve()
      }
      waiter.resolve = done
      // Wakes when the wall clock alone admits the write, or at the deadline.
      const arm = () => {
        const left = deadline - performance.now()
        if (left <= 0 || this.#admits(waiter)) return done()
        const catchUp = waiter.dtMs - waiter.allowanceMs - this.#options.now()
        timer = setTimeout(arm, Math.max(1, Math.min(left, catchUp)))
      }
      this.#waiters.add(waiter)
      this.#watch()
      arm()
    })
  }

  #admits(waiter: Waiter): boolean {
    return waiter.dtMs - this.referenceMs() <= waiter.allowanceMs
  }

  // While writes wait: every advance of a leader may carry a newer entry of another region.
  #watch(): void {
    if (this.#unsubscribe.length > 0) return
    this.#unsubscribe = this.#options
      .leaders()
      .map((leader, p) => leader.onAdvance(() => this.#onAdvance(p)))
  }

  #stopWatching(): void {
    for (const unsubscribe of this.#unsubscribe) unsubscribe()
    this.#unsubscribe = []
    this.#advanced.clear()
  }

  #onAdvance(p: number): void {
    this.#advanced.add(p)
    if (this.#reading) return
    this.#reading = true
    void (async () => {
      try {
        while (this.#advanced.size > 0 && this.#waiters.size > 0) {
          const partitions = [...this.#advanced]
          this.#advanced.clear()
          const leaders = this.#options.leaders()
          await Promise.all(partitions.map((q) => this.#learn(q, leaders[q])))
          for (const waiter of [...this.#waiters]) if (this.#admits(waiter)) waiter.resolve()
        }
      } finally {
        this.#reading = false
      }
    })()
  }

  // One read of every leader at a time, shared by the writes that need it.
  #learnAll(): Promise<void> {
    this.#learning ??= Promise.all(this.#options.leaders().map((l, p) => this.#learn(p, l)))
      .then(() => undefined)
      .finally(() => {
        this.#learning = undefined
      })
    return this.#learning
  }

  // The `at` of the newest entry of each other region at `leader` of partition `p`, read only
  // when that region's `sv` there moved since the last read (a flood of forged times costs no
  // reads). A leader that cannot be read now tells nothing (the write then waits, or is refused,
  // as if it had no such entry).
  async #learn(p: number, leader: AbstractPartitionReplica | undefined): Promise<void> {
    if (!leader?.available) return
    const sv = leader.sv()
    const seen = (this.#seen[p] ??= [])
    await Promise.all(
      sv.map(async (idx, d) => {
        if (d === this.#options.region || idx <= (seen[d] ?? 0)) return
        const [newest] = await leader.readLog(d, idx - 1, 1).catch(() => [])
        if (!newest) return
        seen[d] = Math.max(seen[d] ?? 0, idx)
        if (newest.at > this.#othersMs) this.#othersMs = newest.at
      }),
    )
  }
}
