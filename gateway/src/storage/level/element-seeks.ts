/**
 * A few long-lived iterators over the sets' keys that `has` seeks in, instead of opening an
 * iterator per call: on classic-level opening one costs about as much as a whole key read
 * (a seek on an open iterator costs about one read).
 *
 * An iterator sees the store as of its implicit snapshot, fixed soon after it is opened. Its
 * {@link SetReadCache.viewTicket} says as of when: its view of a set is current while no commit
 * touching that set started since (the cache's seqlock), so a `has` uses it for a set only then,
 * and checks once, after the first seek of a new iterator, that its view got fixed before any such
 * commit. Iterators are closed when too many commits passed for them to serve any set, so they
 * never pin old versions of the store for long.
 */
import type { AbstractKeyIterator } from 'abstract-level'
import type { StringLevel } from './level-replica.js'
import { SET_NAMESPACE } from './level-set-kv.js'
import type { SetReadCache } from './set-read-cache.js'

/** Iterators kept: concurrent `has` calls beyond that open their own. */
const POOL_SIZE = 4
/** Keys read per step: an element usually has one key, and the next element's key ends the walk. */
const STEP = 2
/** Just past every set key: the namespace `b/` with its last byte incremented. */
const NAMESPACE_END = 'b0'

interface Pooled {
  readonly iterator: AbstractKeyIterator<StringLevel, string>
  readonly ticket: number
  busy: boolean
}

/** The pool of one replica's sets (see the module comment). */
export class ElementSeeks {
  readonly #db: StringLevel
  readonly #cache: SetReadCache
  readonly #pool: Pooled[] = []

  constructor(db: StringLevel, cache: SetReadCache) {
    this.#db = db
    this.#cache = cache
  }

  /**
   * The keys in `[start, end)` of set `name` as of now, or `undefined` when no pooled iterator
   * can serve (the caller opens its own). Call it in the same tick as the cache read whose state
   * the keys must match: whether an iterator's view of the set is current is decided right away.
   */
  async keys(name: string, start: string, end: string): Promise<string[] | undefined> {
    let pooled = this.#pool.find((p) => !p.busy && this.#cache.unchanged(name, p.ticket))
    const fresh = pooled === undefined
    if (pooled === undefined) {
      pooled = this.#replace()
      if (pooled === undefined) return undefined
    }
    pooled.busy = true
    try {
      pooled.iterator.seek(start)
      const out: string[] = []
      for (;;) {
        const step = await pooled.iterator.nextv(STEP)
        for (const key of step) {
          if (key >= end) return this.#checked(name, pooled, fresh, out)
          out.push(key)
        }
        if (step.length === 0) return this.#checked(name, pooled, fresh, out)
      }
    } catch (error) {
      this.#drop(pooled)
      throw error
    } finally {
      pooled.busy = false
    }
  }

  /** Closes iterators too old to serve any set (after each commit). */
  closeExpired(): void {
    for (const p of [...this.#pool]) if (!p.busy && this.#cache.expired(p.ticket)) this.#drop(p)
  }

  /** Closes every iterator (the replica closes). */
  close(): void {
    for (const p of [...this.#pool]) this.#drop(p)
  }

  // A new iterator's view got fixed at some point before its first step returned: it serves
  // `name` only if no commit touching `name` started since it was opened.
  #checked(name: string, pooled: Pooled, fresh: boolean, out: string[]): string[] | undefined {
    if (!fresh || this.#cache.unchanged(name, pooled.ticket)) return out
    return undefined
  }

  // Opens a new iterator in place of an idle one (or in a free place); `undefined` if all busy.
  #replace(): Pooled | undefined {
    const idle = this.#pool.find((p) => !p.busy)
    if (idle !== undefined) this.#drop(idle)
    else if (this.#pool.length >= POOL_SIZE) return undefined
    const ticket = this.#cache.viewTicket()
    const iterator = this.#db.keys({ gte: SET_NAMESPACE, lt: NAMESPACE_END })
    const pooled = { iterator, ticket, busy: false }
    this.#pool.push(pooled)
    return pooled
  }

  #drop(pooled: Pooled): void {
    const at = this.#pool.indexOf(pooled)
    if (at >= 0) this.#pool.splice(at, 1)
    pooled.iterator.close().catch(() => {}) // closing fails only when the store already closed it
  }
}
