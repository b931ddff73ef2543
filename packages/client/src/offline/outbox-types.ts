/**
 * The public shapes of offline-first: what `db.pending()`, `db.failed()` and `db.sync()` return,
 * what a queued write resolves to, and the store `connect({ persist })` takes. Types only, so
 * the default entry pays nothing for them.
 */
import type { CausewayError, Durability, Hlc, WriteLevel } from '@causeway/core'

/** The kinds of queued operation, as `POST /v1/ops` names them. */
export type OpKind = 'put' | 'delete' | 'set-add' | 'set-remove'

/** A set element as a queued add or remove carries it. */
export type QueuedElement = string | { element: string; ctx?: string }

/** A write queued in the outbox, as `db.pending()` lists it. */
export interface PendingOp {
  /** The operation id (`<client>.<seq>`): the gateway applies it at most once. */
  opId: string
  kind: OpKind
  /** The key (`put`, `delete`) or the set's name (`set-add`, `set-remove`). */
  key: string
  /** The value of a `put`. */
  value?: unknown
  /** The elements of a set write. */
  elements?: QueuedElement[]
  /** When it was queued (ms since the epoch, this device's clock). */
  queuedAt: number
  /** Id of the region whose leader takes it. */
  region: number
}

/** A queued write the gateway refused for good, as `db.failed()` lists it. */
export interface FailedOp extends PendingOp {
  /** Why: the gateway's error (`INVALID_VALUE`, `UNAUTHORIZED`, `OUT_OF_SCOPE`, ...). */
  error: CausewayError
  /** When it was refused (ms since the epoch). */
  failedAt: number
}

/**
 * What a write resolves to when it could not reach the gateway (offline, or the gateway did not
 * answer in time) and waits in the outbox: it will be applied, exactly once, by a later sync.
 */
export interface PendingWrite {
  pending: true
  /** Its operation id, as `db.pending()` lists it. */
  opId: string
}

/** What a replay did (`db.sync()`, the `synced` event). */
export interface SyncResult {
  /** Operations applied (or found already applied) by this replay. */
  applied: number
  /** Operations refused for good and moved to `db.failed()`. */
  failed: number
  /** Operations still queued after it. */
  pending: number
  /**
   * Why the replay stopped before the outbox was empty: a transient failure (the network, a
   * gateway that is down or draining, a rate limit). Undefined when it emptied the outbox.
   */
  error?: CausewayError
  /** False in a tab that does not own the outbox: the owner replays; this is what it reported. */
  owner: boolean
}

/**
 * The part of an `abstract-level` database (classic-level, memory-level, browser-level, ...) the
 * SDK uses: sublevels with JSON values and atomic batches across them. Any abstract-level 1.x to
 * 3.x store fits.
 */
export interface PersistStore {
  readonly status: string
  /** The store's manifest (abstract-level): `getSync` where reads can be synchronous. */
  readonly supports?: { readonly getSync?: boolean }
  open(): Promise<void>
  close(): Promise<void>
  sublevel(name: string, options: { keyEncoding: 'utf8'; valueEncoding: 'json' }): PersistSublevel
  batch(operations: PersistBatchOp[]): Promise<void>
}

/** A sublevel of a {@link PersistStore}. */
export interface PersistSublevel {
  /** `'open'` once it can be read (a sublevel opens a few ticks after its database). */
  readonly status?: string
  get(key: string): Promise<unknown>
  /** Where the manifest says `getSync` (abstract-level 3: classic-level, memory-level). */
  getSync?(key: string): unknown
  getMany(keys: string[]): Promise<unknown[]>
  iterator(options?: {
    gt?: string
    gte?: string
    lt?: string
    limit?: number
    reverse?: boolean
  }): AsyncIterable<[string, unknown]> & { close(): Promise<void> }
}

/** One operation of an atomic batch over sublevels. */
export type PersistBatchOp =
  | { type: 'put'; key: string; value: unknown; sublevel: PersistSublevel }
  | { type: 'del'; key: string; sublevel: PersistSublevel }

/** A queued op as it is stored (the outbox's value). @internal */
export interface StoredOp extends PendingOp {
  partition: number
  /** Siblings namespaces: the causal context the write supersedes. */
  context?: string
  /**
   * Siblings namespaces: the write was made over an earlier queued write of the same key; it
   * supersedes what that one wrote (its reply's context, filled in when it is applied).
   */
  afterOp?: string
  level: WriteLevel
  /** The session's dependency time when it was queued (writes-follow-reads, monotonic writes). */
  dt: Hlc
  durability: Durability
}
