/**
 * What a LevelDB replica's `has` needs besides the element's own keys: per set, the decoded
 * set-tombstone and stamp, kept in memory (LRU by set name, bounded by entries and by tombstone
 * dots) so a `has` is one seek of the element's keys instead of a snapshot, a read of the clocks
 * and a seek.
 *
 * Correct only because the replica's commit queue is the only writer of its store, one commit at
 * a time, and tells this cache what it is about to write ({@link SetReadCache.starting}) and
 * when it is written ({@link SetReadCache.finished}). A read takes a {@link SetReadCache.observe}
 * ticket, reads the store without a snapshot, then asks {@link SetReadCache.unchanged}: when no
 * commit touching the set started since the ticket (a per-set seqlock), every read between the
 * two saw exactly the state the ticket describes, so the dots and the stamp agree. Otherwise the
 * caller falls back to reading from one snapshot.
 */
import { cloudSize, type BigsetKeys, type DotClock } from '@causeway/core'
import type { SetStamp } from '../set-replica.js'

/** The parts of a set's state a `has` returns with the element's keys. */
export interface CachedSetState {
  readonly tombstone: DotClock
  readonly stamp: SetStamp
}

/** A read's view of one set: what the cache holds (if anything) as of `ticket`. */
export interface SetObservation {
  readonly keys: BigsetKeys
  readonly state: CachedSetState | undefined
  readonly ticket: number
}

/** Bounds of a {@link SetReadCache}. */
export interface SetReadCacheOptions {
  /** Most sets kept. @default 4096 */
  maxSets?: number
  /** Most tombstone dots (the dot clouds, summed over sets) kept. @default 100_000 */
  maxCloudDots?: number
}

interface Entry {
  readonly keys: BigsetKeys
  state: CachedSetState
  weight: number
}

/** How many recent commits remember which sets they touched (a ticket older than that fails). */
const RECENT_COMMITS = 64

/** The LRU cache and commit seqlock of one replica's sets (see the module comment). */
export class SetReadCache {
  readonly #maxSets: number
  readonly #maxCloudDots: number
  /** By set name, least recently used first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>()
  /** The sets touched by the last commits, by sequence modulo {@link RECENT_COMMITS}. */
  readonly #recent: ReadonlySet<string>[] = []
  /** Commits started so far; a commit's sequence is this count once it started. */
  #started = 0
  /** Whether commit `#started` is being written. */
  #writing = false
  #cloudDots = 0

  constructor(options: SetReadCacheOptions = {}) {
    this.#maxSets = options.maxSets ?? 4096
    this.#maxCloudDots = options.maxCloudDots ?? 100_000
  }

  /** Sets cached now (tests). */
  get size(): number {
    return this.#entries.size
  }

  /**
   * The cached state of set `name` and a ticket for {@link unchanged}, or `undefined` while a
   * commit touching the set is being written (read from a snapshot instead). `keys` makes the
   * set's keys when they are not cached.
   */
  observe(name: string, keys: () => BigsetKeys): SetObservation | undefined {
    if (this.#writing && this.#touched(this.#started, name)) return undefined
    const entry = this.#entries.get(name)
    if (entry === undefined) return { keys: keys(), state: undefined, ticket: this.#started }
    // Most recently used last.
    this.#entries.delete(name)
    this.#entries.set(name, entry)
    return { keys: entry.keys, state: entry.state, ticket: this.#started }
  }

  /**
   * Whether no commit touching set `name` started since `ticket` was taken (and none was being
   * written then): reads of the store made in between all saw the set as it was at the ticket.
   */
  unchanged(name: string, ticket: number): boolean {
    if (this.expired(ticket)) return false
    for (let seq = ticket + 1; seq <= this.#started; seq++)
      if (this.#touched(seq, name)) return false
    return true
  }

  /**
   * A ticket for a view of the store that gets fixed at some point from now on (an iterator's
   * implicit snapshot): a commit being written now may or may not be in that view, so it counts
   * as started after the ticket.
   */
  viewTicket(): number {
    return this.#writing ? this.#started - 1 : this.#started
  }

  /** Whether `ticket` is too old to hold for any set. */
  expired(ticket: number): boolean {
    return this.#started - ticket > RECENT_COMMITS
  }

  /**
   * Remembers `state`, read with `observation` and checked {@link unchanged} since, as set
   * `name`'s state (unless it is cached already: then the cached one is as new).
   */
  remember(name: string, observation: SetObservation, state: CachedSetState): void {
    if (this.#entries.has(name) || !this.unchanged(name, observation.ticket)) return
    this.#put(name, observation.keys, state)
  }

  /**
   * A commit touching `names` is about to be written: until {@link finished}, reads of these sets
   * do not use the cache, and tickets taken before no longer hold for them.
   */
  starting(names: Iterable<string>): void {
    const seq = ++this.#started
    this.#recent[seq % RECENT_COMMITS] = new Set(names)
    this.#writing = true
  }

  /**
   * The commit announced by {@link starting} is written; `states` are the states it left the
   * sets it touched in. Cached sets are updated; the others are not added (a read adds them).
   */
  finished(states: ReadonlyMap<string, CachedSetState>): void {
    for (const [name, state] of states) {
      const entry = this.#entries.get(name)
      if (entry !== undefined) this.#put(name, entry.keys, state)
    }
    this.#writing = false
  }

  /** Forgets everything (the replica closes; its store may change before it opens again). */
  clear(): void {
    this.#entries.clear()
    this.#cloudDots = 0
    // Tickets taken before no longer hold.
    this.#started += RECENT_COMMITS + 1
    this.#recent.length = 0
    this.#writing = false
  }

  #touched(seq: number, name: string): boolean {
    // A commit forgotten (after clear) counts as touching everything.
    return this.#recent[seq % RECENT_COMMITS]?.has(name) ?? true
  }

  #put(name: string, keys: BigsetKeys, state: CachedSetState): void {
    this.#drop(name)
    const weight = cloudSize(state.tombstone)
    if (weight > this.#maxCloudDots) return
    this.#entries.set(name, { keys, state, weight })
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
