/**
 * The commit cache (Nami section 2.3.1): what the applier knows of the recent past without asking
 * the partitions. For a sliding window of the last `capacity` transactions that changed anything,
 * it indexes, by key, the newest version they made (its tid and `(ts, dc)`). The index is complete
 * from {@link CommitCache.start} on: a key it does not list was not changed since, so a read made at
 * a snapshot at least `start - 1` is decided without a read of the partition stores.
 *
 * Nami caches values; deciding here needs only which tid last changed a key, so that is what it
 * keeps. It is an optimisation only: the applier decides the same outcomes with or without it
 * (the fast-check test runs both).
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
    this.#window = []
    this.#head = 0
    this.#start = from
  }

  /**
   * Whether a key read at `snapshot` changed after it, before `tid`: `true` or `false` when the
   * cache knows, `undefined` when only the partition can tell (the snapshot is older than the
   * window and the key is not in it).
   */
  changedSince(key: string, snapshot: number): boolean | undefined {
    const newest = this.#index.get(key)
    if (newest !== undefined) {
      this.hits++
      return newest.tid > snapshot
    }
    if (snapshot >= this.#start - 1) {
      this.hits++
      return false
    }
    this.misses++
    return undefined
  }

  /**
   * The newest version of `key` when a transaction in the window made it, `null` when none did
   * (the partition has the one from before the window), `undefined` never.
   */
  newest(key: string): CachedVersion | null {
    return this.#index.get(key) ?? null
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
    for (const [key, version] of changed) this.#index.set(key, version)
    this.#window.push({ tid, keys: changed.map(([key]) => key) })
    while (
      this.#window.length - this.#head > this.capacity &&
      this.#window[this.#head]!.tid <= stored
    ) {
      const oldest = this.#window[this.#head++]!
      for (const key of oldest.keys)
        if (this.#index.get(key)?.tid === oldest.tid) this.#index.delete(key)
      this.#start = oldest.tid + 1
    }
    if (this.#head > 1024 && this.#head * 2 > this.#window.length) {
      this.#window = this.#window.slice(this.#head)
      this.#head = 0
    }
  }
}
