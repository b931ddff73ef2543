/**
 * The types of the storage contract of one partition replica (`abstract-partition-replica.ts` is
 * the contract itself): what a read returns, what a backend declares it can do, and the log entry
 * union (`@causeway/core`'s `log-entry.ts`) re-exported for the storage layer.
 */
import type { Hlc } from '@causeway/core'
import type { SiblingSet } from './sibling-set.js'

export type {
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
   * Reads at a past point of the log (a snapshot), as transactions will need. No backend has
   * them yet.
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
