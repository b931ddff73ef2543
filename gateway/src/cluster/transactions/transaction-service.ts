/**
 * What the HTTP layer calls for transactions (Nami): reads at a snapshot of the region's
 * transaction log, commits, and the plain reads of transactional keys. It knows nothing of HTTP;
 * `region-transactions.ts` implements it over the region's replicas and transaction log.
 */
import type { Durability, Hlc, ReadNeed, TxOutcome, TxRead, TxWrite } from '@causeway/core'
import type { TxVersion } from '../../storage/partition-replica.js'
import type { ReadRequest, ReadResult, WriteOp } from '../cluster-service.js'

/** A transactional read, validated. */
export interface TxReadRequest {
  /** The keys, each of a transactional namespace. */
  keys: readonly string[]
  /** Read at this snapshot (a transaction's later reads); absent: pick one. */
  snapshot?: number
  /** When picking: at least this tid (the session's). */
  minTid?: number
  /** When picking: the session's read vector of each partition it touched. */
  after?: ReadonlyMap<number, ReadNeed>
  /** How long the region may wait for the snapshot and the vectors, in ms. */
  timeoutMs: number
}

/** One key of a transactional read. */
export interface TxReadItem {
  key: string
  p: number
  /** The version at the snapshot; undefined when the key had none. */
  version: TxVersion | undefined
  /** The serving leader's `sv[version.dc]`. */
  idx?: number
  epoch: number
}

/** What a transactional read returns. */
export interface TxReadResult {
  snapshot: number
  items: TxReadItem[]
}

/** A commit, validated. */
export interface TxCommitRequest {
  snapshot: number
  /** The read set, sorted by key. */
  reads: readonly TxRead[]
  /** The writes, sorted by key. */
  writes: readonly TxWrite[]
  /** The HLC dependency (the session's, as a write's). */
  dt: Hlc
  durability: Durability
  /** How long to wait for the outcome, in ms. */
  timeoutMs: number
  /** The transaction's operation id and request fingerprint: committed at most once. */
  op?: WriteOp
}

/** Where an applied transaction wrote in one partition. */
export interface TxCommitPartResult {
  p: number
  idx: number
  epoch: number
}

/** What a commit returns. */
export interface TxCommitResult {
  tid: number
  outcome: TxOutcome
  ts: Hlc
  parts: TxCommitPartResult[]
  /** The operation id had been committed before: this is its outcome. */
  replayed?: boolean
}

/** The transactions of one region. */
export interface TransactionService {
  /**
   * Reads `keys` at a snapshot: the one given, once the region has applied through it, or one the
   * region picks, at least `minTid` and covering what `after` says the session has seen.
   * @throws `NOT_TRANSACTIONAL`, `TID_UNREACHABLE`, `SNAPSHOT_TOO_OLD`, `SESSION_NOT_AVAILABLE`.
   */
  read(request: TxReadRequest): Promise<TxReadResult>
  /**
   * Appends a commit to the log and resolves once its outcome is known.
   * @throws `NOT_TRANSACTIONAL`, `TID_UNREACHABLE`, `OP_ID_REUSED`, `CLOCK_SKEW_EXCEEDED`,
   * `BACKEND_UNAVAILABLE` (with `details.tid` when it is in the log but undecided in time).
   */
  commit(request: TxCommitRequest): Promise<TxCommitResult>
  /** A plain read of a transactional key: at the newest snapshot that covers the session. */
  readLatest(request: ReadRequest): Promise<ReadResult>
}
