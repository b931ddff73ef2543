/**
 * The newest committed entries of one origin's log, kept in memory so that the followers and
 * shippers tailing a replica (`readLog`, right after each commit) get them without a store
 * iterator and a decode per entry. Only an optimisation: a read it cannot answer whole goes to
 * the store.
 *
 * The tail is always a run of consecutive idx ending at the newest entry appended (the replica's
 * `sv[origin]`), or empty. Entries are frozen (as every log entry is): every reader gets the same objects.
 */
import { entryBody } from '@causeway/core'
import type { LogEntry } from '../partition-replica.js'

/** Bounds of a {@link LogTail}. */
export interface LogTailLimits {
  /** Most entries kept. */
  entries: number
  /** Most characters of keys and bodies kept (an entry larger than this is not kept at all). */
  chars: number
}

/** Room a tail takes by default: what followers and shippers read between two commits, and more. */
export const DEFAULT_LOG_TAIL: LogTailLimits = { entries: 1024, chars: 1 << 20 }

// Bytes of an entry beyond its key and body, roughly (origin, idx, ts, at and the object).
const ENTRY_OVERHEAD = 64

function sizeOf(entry: LogEntry): number {
  return entry.key.length + entryBody(entry).length + ENTRY_OVERHEAD
}

/** The newest committed entries of one origin. */
export class LogTail {
  readonly #limits: LogTailLimits
  #entries: LogEntry[] = []
  /** Index in `#entries` of the oldest entry kept (the ones before it are dropped). */
  #head = 0
  #chars = 0

  constructor(limits: LogTailLimits = DEFAULT_LOG_TAIL) {
    this.#limits = limits
  }

  /** Entries kept. */
  get size(): number {
    return this.#entries.length - this.#head
  }

  /** Appends a committed entry; one that does not follow the newest starts the tail again. */
  append(entry: LogEntry): void {
    const newest = this.#entries.at(-1)
    if (newest !== undefined && this.size > 0 && entry.idx !== newest.idx + 1) this.clear()
    this.#entries.push(entry)
    this.#chars += sizeOf(entry)
    while (this.size > 0 && (this.size > this.#limits.entries || this.#chars > this.#limits.chars))
      this.#chars -= sizeOf(this.#entries[this.#head++]!)
    // Drop the array's dead front now and then, not on every append.
    if (this.#head > 64 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head)
      this.#head = 0
    }
  }

  /**
   * Up to `limit` entries with `idx > afterIdx`, in idx order, or `undefined` when the tail does not
   * reach back to `afterIdx + 1` (the store has them). Empty when nothing follows `afterIdx`.
   */
  read(afterIdx: number, limit: number): LogEntry[] | undefined {
    if (this.size === 0) return undefined
    const oldest = this.#entries[this.#head]!.idx
    if (afterIdx + 1 < oldest) return undefined
    const start = this.#head + (afterIdx + 1 - oldest)
    return this.#entries.slice(start, start + Math.max(0, limit))
  }

  /** Forgets every entry. */
  clear(): void {
    this.#entries = []
    this.#head = 0
    this.#chars = 0
  }
}
