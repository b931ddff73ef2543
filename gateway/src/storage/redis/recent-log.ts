/**
 * The last log entries a leader replica object wrote itself, as its write scripts answered them,
 * so the shipper (and a change feed) tailing its own region's log read them from memory instead
 * of an `XRANGE` round trip per batch. The log is append-only and an entry never changes once
 * written, so an entry remembered here is the one the server holds, as long as the server has not
 * lost it: the replica forgets everything when its write connection is re-established (a restart
 * under `appendfsync everysec` may lose the last writes) and when it closes.
 *
 * It keeps one run of consecutive entries: an entry that does not follow the last one (another
 * gateway wrote the ones in between) starts a new run, and reads of anything not in the run go to
 * the server, so a miss costs what it always did.
 */
import type { LogEntry } from '@causeway/core'

/**
 * Entries remembered, at most: a shipper reads what was written since its last batch, well under
 * this at any load a gateway process can write.
 */
const CAPACITY = 4096

/** A run of the latest consecutive log entries of one origin. */
export class RecentLog {
  #entries: LogEntry[] = []
  /** Index of the first live entry in `#entries` (dropped ones are removed in bulk). */
  #start = 0

  /** Remembers `entry`, the latest written; see the module comment. */
  add(entry: LogEntry): void {
    const last = this.#entries.at(-1)
    if (last !== undefined && (entry.origin !== last.origin || entry.idx !== last.idx + 1))
      this.clear()
    this.#entries.push(entry)
    if (this.#entries.length - this.#start > CAPACITY) this.#start++
    if (this.#start >= CAPACITY) {
      this.#entries = this.#entries.slice(this.#start)
      this.#start = 0
    }
  }

  /**
   * Up to `limit` entries of `origin` after `afterIdx`, when the first of them is remembered
   * (fewer when the run ends sooner); undefined when it is not.
   */
  after(origin: number, afterIdx: number, limit: number): LogEntry[] | undefined {
    const first = this.#entries[this.#start]
    if (first === undefined || first.origin !== origin) return undefined
    const at = this.#start + afterIdx + 1 - first.idx
    if (at < this.#start || at >= this.#entries.length) return undefined
    return this.#entries.slice(at, at + limit)
  }

  /** Forgets every entry. */
  clear(): void {
    this.#entries = []
    this.#start = 0
  }
}
