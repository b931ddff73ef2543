/**
 * The sets of a {@link LevelPartitionReplica} (see `../set-replica.ts`): Bigsets stored under
 * core's keys (`BigsetKeys`, namespace `b/`, `level-set-kv.ts`) in the replica's own LevelDB
 * keyspace, written by the replica's commit queue so a set write, its log entry and `sv` land in
 * one atomic batch. Per set: the set-clock, the set-tombstone, one empty-valued key per
 * (element, dot), the exact element count and the stamp.
 *
 * The parts, one job each:
 * - `set-commit.ts` plans a commit's set entries with core's planners (a leader's write runs
 *   Algorithm 1, a received entry Algorithm 2 on its delta) and the compaction that waits;
 * - `set-compaction.ts` decides which covered keys a commit deletes, and asks for that commit;
 * - `set-reads.ts` answers `has`, `size`, `scan` and `stream` (`has` seeks in iterators kept
 *   open, `element-seeker.ts`);
 * - `set-head.ts` reads a set's head (clocks, count, stamp) and `set-head-cache.ts` keeps the
 *   heads of the sets used last, for commits and reads (the one cache, measured in docs/sets.md).
 */
import { deltaToJSON, type BigsetDelta } from '@causeway/core'
import {
  setActor,
  type SetMembership,
  type SetReplicaStream,
  type SetScan,
  type SetScanOptions,
  type SetSize,
  type SetWrite,
} from '../set-replica.js'
import { parseSetDelta } from '../set-writes.js'
import { levelSetKeys, type StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import { SetCommit, type SetChange } from './set-commit.js'
import { SetCompaction } from './set-compaction.js'
import { SetHeadCache, type SetHeadCacheOptions } from './set-head-cache.js'
import type { SetHead } from './set-head.js'
import { SetReads } from './set-reads.js'

export { levelSetKeys }

/** Options of {@link LevelSets}. */
export interface LevelSetsOptions {
  db: StringLevel
  region: number
  regions: number
  /** The replica's current epoch (dots are minted under `setActor(region, epoch)`). */
  epoch: () => number
  /** Asks the replica to run a commit soon, so pending compaction is written. */
  requestCommit: () => Promise<void>
  /**
   * How long after a remove its covered keys are compacted, in ms (removes within that time share
   * one compaction batch).
   * @default 50
   */
  compactDelayMs?: number
  /** Told about failed background compactions (they are retried by the next one). */
  onError?: (error: unknown) => void
  /** Bounds of the head cache (`set-head-cache.ts`); `{ maxSets: 0 }` turns it off. */
  cache?: SetHeadCacheOptions
}

/** The entries of a commit that are set writes: `key` (the set name) and `setDelta`. */
export interface SetCommitEntry {
  origin: number
  idx: number
  key: string
  ts: string
  /** Empty for a local write until its commit plans it. */
  setDelta?: string
}

/** The sets of one LevelDB replica: planning inside commits, reads, compaction. */
export class LevelSets {
  readonly #db: StringLevel
  readonly #region: number
  readonly #regions: number
  readonly #epoch: () => number
  readonly #cache: SetHeadCache
  readonly #compaction: SetCompaction
  readonly #reads: SetReads
  /** Local writes accepted by the leader and not yet planned. */
  readonly #staged = new WeakMap<SetCommitEntry, SetWrite>()
  /** Received entries' deltas, parsed by `check` for their commit. */
  readonly #parsed = new WeakMap<SetCommitEntry, BigsetDelta>()
  /** The heads the commit being written leaves, for the cache once it is. */
  #written: Map<string, SetHead> | undefined

  constructor(options: LevelSetsOptions) {
    this.#db = options.db
    this.#region = options.region
    this.#regions = options.regions
    this.#epoch = options.epoch
    this.#cache = new SetHeadCache(options.cache)
    this.#compaction = new SetCompaction({
      db: options.db,
      requestCommit: options.requestCommit,
      delayMs: options.compactDelayMs,
      onError: options.onError,
    })
    this.#reads = new SetReads({
      db: options.db,
      regions: options.regions,
      cache: this.#cache,
      onCovered: (name, keys, key) => this.#compaction.covered(name, keys, key),
    })
  }

  /** Registers a local write for its commit (the leader validated it with `checkSetWrite`). */
  stage(entry: SetCommitEntry, write: SetWrite): void {
    this.#staged.set(entry, write)
  }

  /** Validates a received entry's delta and keeps it for its commit; throws `INVALID_REQUEST`. */
  check(entry: SetCommitEntry): void {
    if (this.#staged.has(entry)) return
    this.#parsed.set(entry, parseSetDelta(entry.setDelta ?? ''))
  }

  /** The replica opened: compacts, in the background, what a previous run left covered. */
  opened(): Promise<void> {
    // Commits drained after `close` may have cached heads of a store that changed since.
    this.#cache.clear()
    return this.#compaction.opened()
  }

  /** The replica is closing: background compaction stops (covered keys stay hidden). */
  close(): void {
    this.#compaction.close()
    this.#reads.close()
    this.#cache.clear()
    this.#written = undefined
  }

  /**
   * Plans the set entries of one commit, in order, plus any pending compaction, and returns the
   * store operations. Fills in `setDelta` of local writes. Must run inside the replica's commit:
   * no other write may reach the store until these operations are written, and the replica
   * calls {@link committed} once they are (before acknowledging anything of the commit).
   */
  async commitOps(entries: readonly SetCommitEntry[]): Promise<StoreOp[]> {
    if (entries.length === 0 && !this.#compaction.waiting) return []
    // Taken before planning: this commit's own removes are compacted by a later one, so a remove
    // stays a write of clocks only.
    const pending = this.#compaction.take()
    const commit = new SetCommit(this.#db, this.#regions, this.#cache)
    try {
      for (const entry of entries) {
        const staged = this.#staged.get(entry)
        const change = this.#change(entry, staged)
        const { delta, keys, tombstone } = await commit.entry(entry.key, entry, change)
        if (staged !== undefined) entry.setDelta = JSON.stringify(deltaToJSON(delta))
        this.#compaction.removed(entry.key, keys, delta, tombstone)
      }
      for (const [name, targets] of pending)
        await commit.compact(name, [...targets.covered.values()], targets.passStart)
      const { ops, heads } = commit.finish()
      this.#cache.starting(heads.keys())
      this.#written = heads
      return ops
    } finally {
      commit.close()
    }
  }

  /** The operations of the last {@link commitOps} are written (and about to be acknowledged). */
  committed(): void {
    if (this.#written !== undefined) this.#cache.committed(this.#written)
    this.#written = undefined
    this.#reads.committed()
  }

  /** See `ReplicaSets.has`. */
  has(name: string, element: string): Promise<SetMembership> {
    return this.#reads.has(name, element)
  }

  /** See `ReplicaSets.size`. */
  size(name: string): Promise<SetSize> {
    return this.#reads.size(name)
  }

  /** See `ReplicaSets.scan`. */
  scan(name: string, options: SetScanOptions = {}): SetScan {
    return this.#reads.scan(name, options)
  }

  /** See `ReplicaSets.stream`. */
  stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'> = {},
  ): Promise<SetReplicaStream> {
    return this.#reads.stream(name, options)
  }

  /** A full compaction pass over one set (see `SetCompaction.pass`). */
  compact(name: string): Promise<{ deleted: number }> {
    return this.#compaction.pass(name)
  }

  // What an entry changes: a staged local write, or the delta of a received one.
  #change(entry: SetCommitEntry, staged: SetWrite | undefined): SetChange {
    if (staged !== undefined) {
      this.#staged.delete(entry)
      return { write: staged, actor: setActor(this.#region, this.#epoch()) }
    }
    const delta = this.#parsed.get(entry) ?? parseSetDelta(entry.setDelta ?? '')
    this.#parsed.delete(entry)
    return { delta }
  }
}
