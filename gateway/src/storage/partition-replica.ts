/**
 * The storage interface of one partition replica: what every backend (LevelDB now, Redis next)
 * implements, and what the compliance suite in `gateway/test/storage/` checks on each of them.
 *
 * A replica holds, for one partition in one region: the winning version of each key (highest
 * `(ts, dc)`), the partition log as one FIFO stream per origin region keyed by origin idx, the
 * stable vector `sv` (`sv[d]` = highest origin idx of region `d` applied here) and, at the leader,
 * the HLC and the local counter (`counter == sv[region]`). Every mutation is one atomic batch, so
 * `sv`, log and data always agree, also after a crash.
 *
 * A stored value that does not decode quarantines its key at that replica, never the partition:
 * see `quarantine.ts`.
 */
import type { CausalContext, Hlc } from '@causeway/core'
import type { OpCheck, OpOutcome, OpRef, ReplicaWrite } from './op-records.js'
import type { ReplicaSets } from './set-replica.js'
import type { SiblingSet } from './sibling-set.js'

/** A stored version of a key. `value` is the JSON text of the value; absent for a tombstone. */
export interface Version {
  value?: string
  ts: Hlc
  dc: number
}

/** One entry of a partition log. */
export interface LogEntry {
  /** Region where the write was accepted. */
  origin: number
  /** Position in the origin's FIFO stream: 1, 2, 3, ... with no gaps. */
  idx: number
  key: string
  /** JSON text of the value; absent for a delete (tombstone) and for a sibling write. */
  value?: string
  ts: Hlc
  /** Wall-clock ms at which the origin leader appended it (for lag metrics and injected lag). */
  at: number
  /**
   * A write in a siblings namespace: the origin leader's sibling set of `key` after the write, in
   * its text form (`encodeSiblingSet`). The written value (or tombstone) is in it, as the newest
   * sibling of region `origin`, stamped `ts`. Applying the entry merges this set into the key's.
   */
  siblings?: string
  /**
   * A set write (Bigsets, `set-replica.ts`): `key` is the set name and this the delta the origin
   * leader planned, as `JSON.stringify(deltaToJSON(delta))`. Applying the entry applies the delta.
   */
  setDelta?: string
}

/** A read: the winning version and the `sv` it was read at, taken atomically. */
export interface ReplicaRead {
  version: Version | undefined
  sv: number[]
}

/** A read of a siblings key: its set (empty when never written) and the `sv` it was read at. */
export interface SiblingRead {
  siblings: SiblingSet
  sv: number[]
}

/** Fires when a replica's `sv` advances. */
export type AdvanceListener = (sv: readonly number[]) => void

/** One partition replica on one storage backend. */
export interface PartitionReplica {
  readonly region: number
  readonly partition: number
  /** Index of this replica in its region; replica 0 starts as leader. */
  readonly replica: number
  /** A short description of the backend, e.g. `level:memory` or `redis://127.0.0.1:6380`. */
  readonly backend: string
  /** The sets (Bigsets) stored in this partition, written through its log. */
  readonly sets?: ReplicaSets

  /** Opens (or reopens) the store and loads `sv`, counter, HLC and epoch from it. */
  open(): Promise<void>
  /** Closes the store; pending waiters resolve as not covered. */
  close(): Promise<void>

  /** The stable vector, length D. A copy. */
  sv(): number[]
  /** The partition epoch this replica belongs to (starts at 1). */
  epoch(): number

  /**
   * Leader only. Stamps `ts = HLC.update(dt)`, appends a local entry with `idx = ++counter`,
   * stores the version and advances `sv[region]`: atomically, and durably before resolving.
   * `value` undefined writes a tombstone.
   */
  write(key: string, value: string | undefined, dt: Hlc): Promise<LogEntry>

  /**
   * Leader only, for a key of a siblings namespace. Like {@link write} (same HLC, idx and `sv`
   * bookkeeping), but the value (or, `undefined`, a tombstone) becomes a new sibling of the key:
   * it supersedes the siblings `context` covers (the causal context the writer read; `[]` for a
   * blind write) and leaves the others. The entry carries the resulting set.
   * @throws `INVALID_CONTEXT` for a context naming a region the cluster does not have.
   */
  writeSibling(
    key: string,
    value: string | undefined,
    dt: Hlc,
    context: CausalContext,
  ): Promise<LogEntry>

  /**
   * Leader only: entries shipped from region `origin`, in idx order. Entries with
   * `idx <= sv[origin]` are skipped (idempotent); an entry with `idx > sv[origin] + 1` is a gap
   * and stops the batch there. Advances the HLC past each applied entry's `ts`. Resolves to the
   * new `sv[origin]` (the shipper's checkpoint).
   */
  receive(origin: number, entries: readonly LogEntry[]): Promise<number>

  /**
   * Follower only: entries of the leader's log, any origins, each origin in idx order.
   * Same idempotence and gap rules as `receive`, per origin.
   */
  apply(entries: readonly LogEntry[]): Promise<void>

  /**
   * The winning version of `key` and the `sv` it was read at.
   * @throws `VALUE_QUARANTINED` when the stored version does not decode (see `quarantine.ts`).
   */
  read(key: string): Promise<ReplicaRead>

  /**
   * The sibling set of a siblings-namespace `key` and the `sv` it was read at, atomically.
   * @throws `VALUE_QUARANTINED` when the stored set does not decode (see `quarantine.ts`).
   */
  readSiblings(key: string): Promise<SiblingRead>

  /**
   * Rebuilds the stored value of `key` from this replica's log when it does not decode (see
   * `quarantine.ts`); leaves a value that decodes alone. Resolves `true` when it rebuilt one.
   * A replica that cannot write its own store (a Redis follower: its leader's repair reaches it
   * by replication) resolves `false`. Concurrent calls for one key share one repair.
   */
  repair(key: string): Promise<boolean>

  /** Up to `limit` log entries of `origin` with `idx > afterIdx`, in idx order. */
  readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]>

  /**
   * Resolves `true` as soon as `sv` covers `need` (at once if it already does), or `false` when
   * `deadline` (epoch ms) passes or the replica closes. Driven by `sv` changes, never by polling.
   */
  waitFor(need: readonly number[], deadline: number): Promise<boolean>

  /** Subscribes to `sv` advances; returns the unsubscribe function. */
  onAdvance(listener: AdvanceListener): () => void

  /**
   * Leader only: `write` (a key, a siblings key or a set write, as {@link write},
   * {@link writeSibling} and `sets.write` do it) remembered under operation id `op`, in the same
   * atomic step as the write (`op-records.ts`). When `op` was already applied (and is within the
   * retention window) nothing is written and its record is the outcome; a record made by another
   * request is `OP_ID_REUSED`. Concurrent calls with one `op` apply it once. `check` runs once the
   * op is known to be new, before it is applied (for checks a replay must not repeat).
   */
  writeOnce(op: OpRef, write: ReplicaWrite, dt: Hlc, check?: OpCheck): Promise<OpOutcome>
}
