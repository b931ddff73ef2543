/**
 * The types of the storage contract of one partition replica (`abstract-partition-replica.ts` is
 * the contract itself): what a read returns, what a backend declares it can do, and the log entry
 * union (`@causeway/core`'s `log-entry.ts`) re-exported for the storage layer.
 */
import type { CommitRelay, Hlc, TxWrite } from '@causeway/core'
import type { SiblingSet } from './sibling-set.js'

export type {
  CommitEntry,
  DeleteEntry,
  KeyEntry,
  LogEntry,
  LogEntryHead,
  LogEntryKind,
  PutEntry,
  SetOpEntry,
  ShipEnvelope,
  SiblingsEntry,
} from '@causeway/core'

/** A stored version of a key. `value` is the JSON text of the value; absent for a tombstone. */
export interface Version {
  value?: string
  ts: Hlc
  dc: number
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

/**
 * A leader's heartbeat (causal shipping, Eunomia Algorithm 2): every local entry with an idx up to
 * `idx` has a timestamp below `ts`, and every later one will have a timestamp above it.
 */
export interface Heartbeat {
  ts: Hlc
  idx: number
}

/** Fires when a replica's `sv` advances. */
export type AdvanceListener = (sv: readonly number[]) => void

/**
 * What a backend can do, declared once (as abstract-level's manifest): callers read it instead of
 * probing for methods, and the compliance suite runs the cases of what a backend declares.
 */
export interface ReplicaManifest {
  /** Keys of siblings namespaces: `writeSibling`, `readSiblings`, `siblings` log entries. */
  readonly siblings: boolean
  /** Sets (Bigsets): `sets`, `set-op` log entries. */
  readonly sets: boolean
  /**
   * Transactions (Nami): `commit` (a partition's share of a transaction, leader only), versions of
   * transactional keys kept by tid and read at a snapshot (`readAsOf`), collected behind a floor
   * (`collectGarbage`), and `commit` log entries.
   */
  readonly multiVersionReads: boolean
  /**
   * The store is shared with other processes that write it (several stateless gateways over one
   * Redis leader): this process's view of `sv` may be behind, and `refresh()` re-reads it from the
   * store. Without it, `refresh()` is the view itself.
   */
  readonly refresh: boolean
  /** Operation ids remembered with their writes: `writeOnce` (`op-records.ts`). */
  readonly opRecords: boolean
}

/** Where a replica sits: its region, partition and index, in a cluster of `regions` regions. */
export interface ReplicaPlace {
  region: number
  partition: number
  /** Index of the replica in its region; replica 0 starts as leader. */
  replica: number
  /** Number of regions D: the length of `sv`. */
  regions: number
}

/**
 * A partition's share of a transaction the region's applier decided to apply, as the partition
 * leader takes it (`AbstractPartitionReplica.commit`).
 */
export interface TxCommit {
  /** The transaction's position in this region's transaction log. */
  tid: number
  /** The transaction's timestamp: one for all its writes, in every partition and region. */
  ts: Hlc
  /** This partition's writes, in key order (`sortWrites`), at least one. */
  writes: readonly TxWrite[]
  /** Another region's transaction this commit makes visible here (see `CommitEntry.relay`). */
  relay?: CommitRelay
}

/** A version of a transactional key: the tid that made it the winner, its `(ts, dc)`, its value. */
export interface TxVersion {
  tid: number
  ts: Hlc
  dc: number
  /** JSON text; absent for a tombstone, and when the read asked for no values. */
  value?: string
  /** True for a tombstone (a delete). */
  deleted: boolean
}

/** A read at a snapshot: the version of each key (undefined: none at that tid) and `sv`. */
export interface AsOfRead {
  versions: (TxVersion | undefined)[]
  sv: number[]
}
