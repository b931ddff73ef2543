/**
 * The commit cache (Nami section 2.3.1): what the applier knows of the recent past without asking
 * the partitions. For a sliding window of the last `capacity` transactions that changed anything,
 * it indexes, by key, the newest version they made (its tid and `(ts, dc)`). The index is complete
 * from {@link CommitCache.start} on: a key it does not list was not changed since.
 *
 * Nami caches values; deciding here needs only which tid last changed a key, so that is what it
 * keeps. It is an optimisation only: the applier decides the same outcomes with or without it
 * (the fast-check test runs both).
 *
 * A read is valid only when the tid it names is the key's newest version before the commit (issue
 * 22), so the applier needs the newest tid of keys the window does not list either: beside the
 * window, a bounded map of versions older than it (`known`), learnt from the partitions' answers
 * and from what the window forgets. An entry stays true as long as the window lists no newer one
 * (any change of the key enters the window first, and leaves it only into this map).
 */
import type { Hlc } from '@causeway/core'

/** The newest version a transaction in the window made of a key. */
export interface CachedVersion {
  tid: number
  ts: Hlc
  dc: number
}

/** See the module comment. */
export class CommitCache {
  readonly capacity: number
  readonly #index = new Map<string, CachedVersion>()
  /** Newest versions older than the window (`null`: the key had none), oldest learnt first. */
  readonly #known = new Map<string, CachedVersion | null>()
  /** The tids in the window that changed something, oldest first, with the keys they changed. */
  #window: { tid: number; keys: string[] }[] = []
  #head = 0
  #start = 1
  /** Lookups answered, and lookups it could not answer (for the benchmark's report). */
  hits = 0
  misses = 0

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError('the commit cache holds at least one transaction')
    this.capacity = capacity
  }

  /** The first tid whose changes are all indexed. */
  get start(): number {
    return this.#start
  }

  /** Forgets everything: the index is complete from tid `from` on. */
  reset(from: number): void {
    this.#index.clear()
    this.#known.clear()
    this.#window = []
    this.#head = 0
    this.#start = from
  }

  /**
   * The newest version of `key` when a transaction in the window made it, `null` when none did
   * (the partition has the one from before the window), `undefined` never.
   */
  newest(key: string): CachedVersion | null {
    return this.#index.get(key) ?? null
  }

  /**
   * The tid of the newest version of `key` made before the next tid to be recorded (0: none), when
   * the cache knows it; `undefined` when only the partition can tell.
   */
  newestTid(key: string): number | undefined {
    const newest = this.#index.get(key)
    const known = newest ?? this.#known.get(key)
    if (known === undefined) {
      this.misses++
      return undefined
    }
    this.hits++
    return known?.tid ?? 0
  }

  /**
   * Remembers what the partition answered for `key` at a tid the window holds no change of it
   * before (`undefined`: no version). Keeps at most `capacity` such keys, forgetting the oldest learnt.
   */
  learn(key: string, version: CachedVersion | undefined): void {
    if (this.#index.has(key)) return
    this.#known.delete(key)
    this.#known.set(key, version ?? null)
    if (this.#known.size > this.capacity)
      this.#known.delete(this.#known.keys().next().value as string)
  }

  /**
   * Records the versions transaction `tid` made (it must follow every tid recorded before). The
   * window keeps at most `capacity` transactions, but never forgets one above `stored` (the
   * partitions may not have it yet, and a key the index does not list must be read from them).
   */
  record(
    tid: number,
    changed: readonly (readonly [key: string, version: CachedVersion])[],
    stored: number,
  ): void {
    if (changed.length === 0) return
    for (const [key, version] of changed) {
      this.#index.set(key, version)
      this.#known.delete(key)
    }
    this.#window.push({ tid, keys: changed.map(([key]) => key) })
    while (
      this.#window.length - this.#head > this.capacity &&
      this.#window[this.#head]!.tid <= stored
    ) {
      const oldest = this.#window[this.#head++]!
      for (const key of oldest.keys) {
        const version = this.#index.get(key)
        if (version?.tid !== oldest.tid) continue
        this.#index.delete(key)
        // Still the key's newest version: it leaves the window into the bounded map.
        this.learn(key, version)
      }
      this.#start = oldest.tid + 1
    }
    if (this.#head > 1024 && this.#head * 2 > this.#window.length) {
      this.#window = this.#window.slice(this.#head)
      this.#head = 0
    }
  }
}
