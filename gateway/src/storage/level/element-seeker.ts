/**
 * The iterators `has` seeks in, kept open between calls. Opening an iterator can cost
 * classic-level far more than a seek on an open one: in a store whose recent writes are not
 * compacted yet (the bigsets benchmark's storage level), 0.3 ms against 0.02 ms, which made a
 * `has` 20× a key read. A few are kept because an iterator serves one call at a time.
 *
 * An iterator's view of the store is fixed when it opens, so it answers for a set only if its
 * view holds the set's cached head: the head became current (`CachedHead.since`) no later than
 * the last commit the view holds for certain (`SetHeadCache.view`, taken when it opened). The
 * caller still checks afterwards that the cache holds the head, so no commit touched the set in
 * between (`set-head-cache.ts`). Iterators open for more than {@link MAX_AGE} of the replica's
 * commits (of any keys) are closed, so none pins old versions of the store for long.
 */
import type { AbstractKeyIterator } from 'abstract-level'
import {
  SET_NAMESPACE,
  SET_NAMESPACE_END,
  elementKeys,
  keysBefore,
  type StoreRange,
} from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import type { SetHeadCache } from './set-head-cache.js'

/** Commits after which an idle iterator is closed. */
const MAX_AGE = 64

interface Open {
  readonly iterator: AbstractKeyIterator<StringLevel, string>
  /** The last commit its view holds for certain (a commit number of the head cache). */
  readonly view: number
  /** When it opened, in {@link ElementSeeker.prune} calls. */
  readonly opened: number
  busy: boolean
}

/** The open iterators of one replica's sets (see the module comment). */
export class ElementSeeker {
  readonly #db: StringLevel
  readonly #cache: SetHeadCache
  readonly #open: Open[] = []
  /** Commits of the replica so far (calls of {@link prune}). */
  #commits = 0

  constructor(db: StringLevel, cache: SetHeadCache) {
    this.#db = db
    this.#cache = cache
  }

  /** The keys in `range` as of a view holding commit `since` (see the module comment). */
  async keys(range: StoreRange, since: number): Promise<string[]> {
    const open = this.#take(since)
    if (open === undefined) return elementKeys(this.#db, range) // all busy: a one-off iterator
    try {
      open.iterator.seek(range.gte)
      return await keysBefore(open.iterator, range.lt)
    } catch (error) {
      this.#close(open)
      throw error
    } finally {
      open.busy = false
    }
  }

  /** Closes the idle iterators more than {@link MAX_AGE} commits old (after each commit). */
  prune(): void {
    const now = this.#cache.view()
    for (const open of [...this.#open])
      if (!open.busy && now - open.view > MAX_AGE) this.#close(open)
  }

  /** Closes every iterator (the replica closes). */
  close(): void {
    for (const open of [...this.#open]) this.#close(open)
  }

  // An idle iterator whose view holds `since`, else a new one in place of an idle one.
  #take(since: number): Open | undefined {
    let open = this.#open.find((o) => !o.busy && o.view >= since)
    if (open === undefined) {
      const idle = this.#open.find((o) => !o.busy)
      if (idle !== undefined) this.#close(idle)
      else if (this.#open.length >= this.#cache.openIterators) return undefined
      const iterator = this.#db.keys({ gte: SET_NAMESPACE, lt: SET_NAMESPACE_END })
      const view = this.#cache.view()
      this.#open.push((open = { iterator, view, opened: this.#commits, busy: false }))
    }
    open.busy = true
    return open
  }

  #close(open: Open): void {
    const at = this.#open.indexOf(open)
    if (at >= 0) this.#open.splice(at, 1)
    open.iterator.close().catch(() => {}) // fails only when the store closed it already
  }
}
