/**
 * The one cache of a LevelDB replica's sets: the heads (`set-head.ts`: clocks, count, stamp) of
 * the sets used last, exactly as the last commit that touched them left them.
 *
 * What it is for: a commit plans against a set's head and a `has` reports the element's dots with
 * the tombstone and stamp of the same state. Without the cache, each commit reads and decodes four
 * values per set it writes, and each `has` takes a snapshot to read the head and the element's
 * keys together; with it, a commit reads only the elements it touches, and a `has` only the
 * element's keys. What that buys is measured with and without, in one run, by
 * `gateway/test/storage/set-cache.micro.ts` (figures in docs/sets.md).
 *
 * Why it is exact: the replica's commit queue is the only writer of set keys, one commit at a
 * time. A commit calls {@link starting} with the sets it is about to write (their entries go) and
 * {@link committed} with their new heads once the batch is written, before anything of it is
 * acknowledged. A read that took a head and then read element keys without a snapshot asks
 * {@link holds} afterwards: the same entry means no commit touching the set started meanwhile, so
 * the keys it read are those of the state the head describes. A head read from the store enters
 * through {@link remember}, only if no commit started or was being written since its
 * {@link token}.
 *
 * Bounds: at most `maxSets` sets, and at most `maxCloudDots` dots in their clocks' clouds (a head
 * is small unless its clocks hold many out-of-order dots). Least recently used go first.
 */
import { cloudSize } from '@causeway/core'
import type { SetHead } from './set-head.js'

/** Bounds of a {@link SetHeadCache}. */
export interface SetHeadCacheOptions {
  /** Most sets kept; 0 turns the cache off. @default 4096 */
  maxSets?: number
  /** Most dots in the cached clocks' clouds, summed over sets. @default 100_000 */
  maxCloudDots?: number
  /**
   * Iterators `has` keeps open between calls (`element-seeker.ts`), which this cache proves
   * current; 0 opens one per call.
   * @default 4
   */
  openIterators?: number
}

/** A cached head, and the number of the commit as of which it is current. */
export interface CachedHead {
  readonly head: SetHead
  /**
   * The head is the set's state in every view of the store that holds commit `since` and was
   * taken while the cache still {@link SetHeadCache.holds} it (no later commit touched the set).
   */
  readonly since: number
}

interface Entry extends CachedHead {
  readonly weight: number
}

/** The heads of one replica's sets (see the module comment). */
export class SetHeadCache {
  readonly #maxSets: number
  readonly #maxCloudDots: number
  /** See {@link SetHeadCacheOptions.openIterators}. */
  readonly openIterators: number
  /** By set name, least recently used first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>()
  #cloudDots = 0
  /** Commits started so far (and cache clears): a token is this count while none is written. */
  #commits = 0
  #writing = false

  constructor(options: SetHeadCacheOptions = {}) {
    this.#maxSets = options.maxSets ?? 4096
    this.#maxCloudDots = options.maxCloudDots ?? 100_000
    this.openIterators = this.#maxSets === 0 ? 0 : (options.openIterators ?? 4)
  }

  /** Sets cached now. */
  get size(): number {
    return this.#entries.size
  }

  /** The cached head of set `name`, if any (it becomes the most recently used). */
  get(name: string): CachedHead | undefined {
    const entry = this.#entries.get(name)
    if (entry === undefined) return undefined
    this.#entries.delete(name)
    this.#entries.set(name, entry)
    return entry
  }

  /** Whether `head`, taken by {@link get}, is still set `name`'s entry: no commit touched it since. */
  holds(name: string, head: SetHead): boolean {
    return this.#entries.get(name)?.head === head
  }

  /** Taken before reading a head from the store, for {@link remember}. */
  token(): number {
    return this.#writing ? -1 : this.#commits
  }

  /** The last commit a view of the store taken from now on holds for certain. */
  view(): number {
    return this.#writing ? this.#commits - 1 : this.#commits
  }

  /** Caches a head read from the store after {@link token} gave `token`, if it is still current. */
  remember(name: string, head: SetHead, token: number): void {
    if (token !== this.token() || this.#entries.has(name)) return
    this.#put(name, head, token)
  }

  /** A commit writing sets `names` is about to be written: their heads go. */
  starting(names: Iterable<string>): void {
    this.#commits++
    this.#writing = true
    for (const name of names) this.#drop(name)
  }

  /** The commit announced by {@link starting} is written; `heads` are the heads it left. */
  committed(heads: ReadonlyMap<string, SetHead>): void {
    for (const [name, head] of heads) this.#put(name, head, this.#commits)
    this.#writing = false
  }

  /** Forgets everything (the replica closes; its store may change before it opens again). */
  clear(): void {
    this.#entries.clear()
    this.#cloudDots = 0
    this.#commits++
    this.#writing = false
  }

  #put(name: string, head: SetHead, since: number): void {
    this.#drop(name)
    const weight = cloudSize(head.clocks.clock) + cloudSize(head.clocks.tombstone)
    if (this.#maxSets === 0 || weight > this.#maxCloudDots) return
    this.#entries.set(name, { head, since, weight })
    this.#cloudDots += weight
    for (const [oldest] of this.#entries) {
      if (this.#entries.size <= this.#maxSets && this.#cloudDots <= this.#maxCloudDots) break
      this.#drop(oldest)
    }
  }

  #drop(name: string): void {
    const entry = this.#entries.get(name)
    if (entry === undefined) return
    this.#entries.delete(name)
    this.#cloudDots -= entry.weight
  }
}
