/**
 * The receiver of a region (thesis Algorithm 5), run by the region's stabiliser leader: it makes
 * other regions' updates visible in an order that respects causality. For each other region `k`
 * it walks `k`'s label queue (`Queue_m[k]`, in `k`'s stream order) and applies an update once
 *
 * - its label is at the head of the queue (every earlier update of `k` is applied),
 * - its data has arrived (the per-partition shippers put it in the inbox), and
 * - its dependencies in every region but `k` and this one are applied here:
 *   `SiteTime[d] >= vts[d]`,
 *
 * then raises `SiteTime[k]` to its timestamp. Each origin's queue runs on its own; one whose head
 * waits for another origin's updates is looked at again when `SiteTime` moves.
 *
 * Applying one label at a time would cost a leader commit (a LevelDB batch, a Redis script) per
 * update, in series. Instead the applier takes a wave: the longest run of labels from the head that
 * may all be applied now (dependencies covered, data here), applies each partition's part of it as
 * one envelope at that partition's leader, all partitions at once, and raises `SiteTime[k]` only
 * after every part is applied. Within a wave an update may become readable at its partition a
 * moment before an earlier update of the wave at another partition; a causal read or write waits
 * for `SiteTime` to cover the client's clock first (`CausalService`), so a client that read the
 * later one waits until the whole wave, the earlier one included, is applied before its next call.
 * Dependencies on other regions are only ever checked against waves that are complete.
 *
 * Every step is idempotent: an update its leader has already applied (after a restart, or when a
 * previous applier stopped half-way through a wave) is counted as applied and skipped.
 */
import { type Hlc, type Label, type LogEntry, shipEnvelope } from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import type { ReceiverStore } from './receiver-store.js'

/** Options of a {@link CausalApplier}. */
export interface CausalApplierOptions {
  region: number
  regions: number
  /** The region's partition leaders, by partition. */
  leaders: readonly AbstractPartitionReplica[]
  store: ReceiverStore
  /**
   * Most labels applied in one wave.
   * @default 4096
   */
  maxWave?: number
  /**
   * How long a queue whose head waits for data or dependencies waits before it is looked at again,
   * when no event came sooner, ms.
   * @default 5
   */
  retryMs?: number
  /**
   * Longest wait for labels before a queue is looked at again, ms.
   * @default 200
   */
  idleMs?: number
  /** Told when `SiteTime[origin]` rose (after the store has it). */
  onSiteTime?: (origin: number, ts: Hlc) => void
  /** Told about failures; the applier tries again. */
  onError?: (error: unknown, source: string) => void
}

/** Why the head of a queue waits. */
export type Blocked = 'data' | 'dependencies'

/** The data of a wave: how much of it has arrived, and per partition its entries. */
interface WaveData {
  /** The wave is cut before this label: its data has not arrived. */
  cut: number
  /** Per partition, the entries after its applied idx that are here. */
  entries: Map<number, { entries: LogEntry[]; epoch: number }>
  /** Per partition, the idx the cut wave applies up to. */
  last: Map<number, number>
}

/** Applies other regions' updates in causal order. See the module comment. */
export class CausalApplier {
  readonly #options: CausalApplierOptions
  readonly #origins: number[]
  #site: Hlc[] = []
  #running = false
  #loops: Promise<void>[] = []
  readonly #wakers = new Map<number, () => void>()
  readonly #blocked = new Map<number, Blocked>()
  #applied = 0

  constructor(options: CausalApplierOptions) {
    this.#options = options
    this.#origins = Array.from({ length: options.regions }, (_, d) => d).filter(
      (d) => d !== options.region,
    )
  }

  /** Starts applying, from `SiteTime` as stored. */
  start(): void {
    if (this.#running) return
    this.#running = true
    this.#loops = this.#origins.map((k) => this.#loop(k))
  }

  /** Stops after the wave in progress (resolves when every loop ended). */
  async stop(): Promise<void> {
    this.#running = false
    for (const wake of this.#wakers.values()) wake()
    await Promise.all(this.#loops)
    this.#loops = []
  }

  /** Looks at every queue again now (labels or data arrived, or another region's time moved). */
  kick(): void {
    for (const wake of this.#wakers.values()) wake()
  }

  /** Why the head of `origin`'s queue waits, if it does. */
  blocked(origin: number): Blocked | undefined {
    return this.#blocked.get(origin)
  }

  /** Updates applied since it started. */
  get applied(): number {
    return this.#applied
  }

  async #loop(k: number): Promise<void> {
    const { store, onError } = this.#options
    const retryMs = this.#options.retryMs ?? 5
    const idleMs = this.#options.idleMs ?? 200
    while (this.#running) {
      try {
        if (this.#site.length === 0) this.#site = await store.site.read()
        const step = await this.#step(k)
        if (step === 'idle') {
          const head = await store.labels.head(k, 1)
          if (head.labels.length === 0)
            await Promise.race([
              store.labels.waitForLabels(k, head.first, head.stable, idleMs),
              this.#wait(k, idleMs),
            ])
        } else if (step !== 'applied') await this.#wait(k, retryMs)
      } catch (error) {
        if (this.#running) onError?.(error, `applying updates of region ${k}`)
        await this.#wait(k, Math.max(retryMs, 50))
      }
    }
  }

  // One wave of region `k`'s queue: 'applied' when it applied something, 'idle' when the queue is
  // empty, or why its head waits.
  async #step(k: number): Promise<'applied' | 'idle' | Blocked> {
    const { store, leaders } = this.#options
    const head = await store.labels.head(k, this.#options.maxWave ?? 4096)
    if (head.labels.length === 0) {
      this.#blocked.delete(k)
      await this.#announce(k, head.first, head.stable, head.stableAt)
      return 'idle'
    }
    const applied = leaders.map((leader) => leader.sv()[k] ?? 0)
    let wave: Label[] = []
    let blocked: Blocked | undefined
    for (const l of head.labels) {
      if (l.idx > applied[l.p]! && !this.#depsCovered(l, k)) {
        blocked = 'dependencies'
        break
      }
      wave.push(l)
    }
    if (wave.length > 0) {
      const data = await this.#data(k, wave, applied)
      if (data.cut < wave.length) blocked = 'data'
      wave = wave.slice(0, data.cut)
      if (wave.length > 0) {
        await this.#apply(k, applied, data)
        await store.labels.pop(k, head.first, wave.length)
        await this.#raise(k, wave.at(-1)!.vts[k]!)
        await this.#announce(k, head.first + wave.length, head.stable, head.stableAt)
        await Promise.all([...data.last.entries()].map(([p, idx]) => store.inbox.drop(k, p, idx)))
        this.#applied += wave.length
      }
    }
    if (blocked === undefined) this.#blocked.delete(k)
    else this.#blocked.set(k, blocked)
    return wave.length > 0 ? 'applied' : blocked!
  }

  // Algorithm 5 line 4: every region but the origin and this one has applied what it depends on.
  #depsCovered(l: Label, k: number): boolean {
    for (let d = 0; d < l.vts.length; d++) {
      if (d === k || d === this.#options.region) continue
      if ((this.#site[d] ?? '0000000000000000') < l.vts[d]!) return false
    }
    return true
  }

  // The data of the wave's updates not yet applied, per partition, and how much of the wave it
  // covers (the wave is cut before the first update whose data has not arrived).
  async #data(k: number, wave: readonly Label[], applied: readonly number[]): Promise<WaveData> {
    const want = new Map<number, number>()
    for (const l of wave) if (l.idx > applied[l.p]!) want.set(l.p, l.idx)
    const entries = new Map<number, { entries: LogEntry[]; epoch: number }>()
    await Promise.all(
      [...want].map(async ([p, lastIdx]) => {
        entries.set(p, await this.#options.store.inbox.take(k, p, applied[p]!, lastIdx))
      }),
    )
    let cut = 0
    for (; cut < wave.length; cut++) {
      const l = wave[cut]!
      if (l.idx <= applied[l.p]!) continue
      const have = applied[l.p]! + (entries.get(l.p)?.entries.length ?? 0)
      if (l.idx > have) break
    }
    const last = new Map<number, number>()
    for (const l of wave.slice(0, cut)) if (l.idx > applied[l.p]!) last.set(l.p, l.idx)
    return { cut, entries, last }
  }

  async #apply(k: number, applied: readonly number[], data: WaveData): Promise<void> {
    const { leaders } = this.#options
    await Promise.all(
      [...data.last].map(async ([p, lastIdx]) => {
        const part = data.entries.get(p)!
        const entries = part.entries.slice(0, lastIdx - applied[p]!)
        const now = await leaders[p]!.receive(shipEnvelope(k, part.epoch, entries))
        if (now < lastIdx)
          throw new Error(
            `partition ${p} applied region ${k}'s entries up to ${now}, not ${lastIdx}`,
          )
      }),
    )
  }

  // A stable time of `k` holds here once every label queued before it was said is applied.
  async #announce(k: number, position: number, stable: Hlc, stableAt: number): Promise<void> {
    if (position >= stableAt && stable > (this.#site[k] ?? '0000000000000000'))
      await this.#raise(k, stable)
  }

  async #raise(k: number, ts: Hlc): Promise<void> {
    if (ts <= (this.#site[k] ?? '0000000000000000')) return
    await this.#options.store.site.raise(k, ts)
    this.#site[k] = ts
    this.#options.onSiteTime?.(k, ts)
    // Another queue's head may have waited for this.
    for (const [origin, wake] of this.#wakers) if (origin !== k) wake()
  }

  #wait(k: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        if (this.#wakers.get(k) === done) this.#wakers.delete(k)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#wakers.set(k, done)
    })
  }
}
