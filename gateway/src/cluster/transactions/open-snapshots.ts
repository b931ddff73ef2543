/**
 * The snapshots open transactions read at, so versions are collected only behind the oldest one.
 * A transaction never says it is done (a client may simply stop), so a snapshot counts as open
 * for `idleMs` after its last read, and at most `maxAgeMs` after its first: a transaction older
 * than that may find its snapshot collected (`SNAPSHOT_TOO_OLD`) and starts again. That is the
 * limit on how much history a region keeps.
 */

/** Options of {@link OpenSnapshots}. */
export interface OpenSnapshotsOptions {
  /**
   * How long a snapshot stays open after a read at it, in ms.
   * @default 30000
   */
  idleMs?: number
  /**
   * How long a snapshot stays open at most after its first read, in ms.
   * @default 300000
   */
  maxAgeMs?: number
  /** The wall clock. @default Date.now */
  now?: () => number
}

/** See the module comment. */
export class OpenSnapshots {
  readonly idleMs: number
  readonly maxAgeMs: number
  readonly #now: () => number
  /** By snapshot: first and last read. */
  readonly #open = new Map<number, { first: number; last: number }>()

  constructor(options: OpenSnapshotsOptions = {}) {
    this.idleMs = options.idleMs ?? 30_000
    this.maxAgeMs = options.maxAgeMs ?? 300_000
    this.#now = options.now ?? Date.now
    if (!(this.idleMs > 0) || !(this.maxAgeMs >= this.idleMs))
      throw new RangeError('idleMs must be positive and maxAgeMs at least idleMs')
  }

  /** Notes a read at `snapshot`. */
  touch(snapshot: number): void {
    const now = this.#now()
    const known = this.#open.get(snapshot)
    if (known) known.last = now
    else this.#open.set(snapshot, { first: now, last: now })
  }

  /**
   * The oldest snapshot still open, or `undefined` when none is; forgets the ones that closed.
   */
  oldest(): number | undefined {
    const now = this.#now()
    let oldest: number | undefined
    for (const [snapshot, { first, last }] of this.#open) {
      if (now - last > this.idleMs || now - first > this.maxAgeMs) {
        this.#open.delete(snapshot)
        continue
      }
      if (oldest === undefined || snapshot < oldest) oldest = snapshot
    }
    return oldest
  }
}
