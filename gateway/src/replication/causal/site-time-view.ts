/**
 * A gateway's view of its region's `SiteTime` (thesis section 3.4.2.3, datacenter client
 * failover): a causal call may be served once `SiteTime` covers the client's vector clock in every
 * other region's entry. The view holds the latest `SiteTime` it knows, takes every raise it is told
 * of (the applier in this process, or a change pushed from where `SiteTime` is kept), and lets calls
 * wait for a clock to be covered, with a deadline: on events, never by polling, with one look at
 * the stored value when a wait starts and one when it ends unsatisfied (a push may be lost while a
 * connection is re-established).
 */
import { type Hlc, type VectorClock, clockCovers, clockMaxInto, zeroClock } from '@causeway/core'

interface Waiter {
  clock: VectorClock
  resolve: (covered: boolean) => void
  timer: ReturnType<typeof setTimeout> | undefined
}

/** Options of a {@link SiteTimeView}. */
export interface SiteTimeViewOptions {
  /** The region (its own entry of a clock needs no waiting). */
  region: number
  regions: number
  /** Reads `SiteTime` from where it is kept. */
  read: () => Promise<readonly Hlc[]>
}

/** The region's `SiteTime` as this gateway knows it. See the module comment. */
export class SiteTimeView {
  readonly #options: SiteTimeViewOptions
  readonly #site: Hlc[]
  readonly #waiters = new Set<Waiter>()
  #reading: Promise<void> | undefined

  constructor(options: SiteTimeViewOptions) {
    this.#options = options
    this.#site = zeroClock(options.regions)
  }

  /** The latest `SiteTime` known here. A copy. */
  current(): Hlc[] {
    return [...this.#site]
  }

  /** True when the known `SiteTime` covers `clock` (but for this region's entry). */
  covers(clock: VectorClock): boolean {
    return clockCovers(this.#site, clock, this.#options.region)
  }

  /** Takes a newer `SiteTime` (entries only ever grow) and wakes the waits it satisfies. */
  advance(site: VectorClock): void {
    clockMaxInto(this.#site, site)
    for (const waiter of this.#waiters) if (this.covers(waiter.clock)) this.#settle(waiter, true)
  }

  /** Reads the stored `SiteTime` again (concurrent calls share one read). */
  refresh(): Promise<void> {
    this.#reading ??= this.#options
      .read()
      .then((site) => this.advance(site))
      .finally(() => {
        this.#reading = undefined
      })
    return this.#reading
  }

  /**
   * Resolves `true` once `SiteTime` covers `clock` (at once when it does), `false` when
   * `deadline` (epoch ms) passes first or {@link close} runs.
   */
  async waitCovers(clock: VectorClock, deadline: number): Promise<boolean> {
    if (this.covers(clock)) return true
    await this.refresh().catch(() => undefined)
    if (this.covers(clock)) return true
    const covered = await new Promise<boolean>((resolve) => {
      const waiter: Waiter = { clock, resolve, timer: undefined }
      this.#waiters.add(waiter)
      const arm = () => {
        const left = deadline - Date.now()
        if (left <= 0) return this.#settle(waiter, false)
        waiter.timer = setTimeout(arm, Math.min(left, 2 ** 31 - 1))
      }
      arm()
    })
    if (covered) return true
    await this.refresh().catch(() => undefined)
    return this.covers(clock)
  }

  /** Ends every wait as not covered. */
  close(): void {
    for (const waiter of this.#waiters) this.#settle(waiter, false)
  }

  #settle(waiter: Waiter, covered: boolean): void {
    if (!this.#waiters.delete(waiter)) return
    clearTimeout(waiter.timer)
    waiter.resolve(covered)
  }
}
