/**
 * The storage contract of a region's transaction log (Nami): the one order of the region's
 * transactions. A commit is appended without deciding anything; its position is its `tid`. The
 * region's applier (`cluster/transactions/tx-applier.ts`) reads the log in tid order, decides each
 * transaction, and records the outcomes here, which is how every gateway of the region learns them.
 *
 * Shaped like `AbstractPartitionReplica`: the public methods check their input once and refuse
 * calls while the log is not open, then call the protected `_method` a backend implements
 * (`level/level-tx-log.ts`: a LevelDB of its own; `redis/redis-tx-log.ts`: a stream on a
 * replicated Redis). An append is durable before it resolves (fsync; `WAIT` on Redis).
 *
 * Besides the region's own transactions, the log takes other regions' applied transactions as
 * units (`appendForeign`), in each origin's tid order, idempotently (a per-origin checkpoint): the
 * region applies them in its own order like its own, so a snapshot holds all of one or none.
 */
import {
  CausewayError,
  type Hlc,
  type TxOutcome,
  type TxRead,
  type TxWrite,
  isHlc,
  isRegionId,
  isSafeCounter,
} from '@causeway/core'
import { OpenLifecycle } from './open-lifecycle.js'
import type { OpRecord, OpRef } from './op-records.js'
import { checkOpRef } from './op-records.js'
import { checkTid } from './replica-input.js'

/** Another region's applied transaction, as a unit. */
export interface ForeignTx {
  /** The region that applied it. */
  region: number
  /** Its tid there. */
  tid: number
  /** Its timestamp (one for all its writes). */
  ts: Hlc
  /** Its writes, sorted by key. */
  writes: readonly TxWrite[]
  /** Where its commit entries are in that region's partition logs: `[partition, idx]`. */
  parts: readonly (readonly [number, number])[]
}

/** A transaction as the log holds it. */
export interface TxRecord {
  tid: number
  /** Stamped by the log's clock when appended (past the commit's dependency), or the foreign ts. */
  ts: Hlc
  /** Wall-clock ms of the append. */
  at: number
  /** The snapshot its reads were made at (0 for a foreign one). */
  snapshot: number
  /** What it read, sorted by key. */
  reads: readonly TxRead[]
  /** What it writes, sorted by key (at least one for a foreign one). */
  writes: readonly TxWrite[]
  /** Set for another region's transaction. */
  foreign?: Omit<ForeignTx, 'ts' | 'writes'>
}

/** What a commit appends. */
export interface TxAppend {
  snapshot: number
  reads: readonly TxRead[]
  writes: readonly TxWrite[]
  /** The commit's HLC dependency: its ts is stamped past it. */
  dt: Hlc
}

/** What an append came to: a new tid, or (with an operation id) the tid it had before. */
export type TxAppended = { tid: number; ts: Hlc } | { replayed: OpRecord }

/** How a transaction was decided, and where its writes went. */
export interface TxOutcomeRecord {
  tid: number
  outcome: TxOutcome
  ts: Hlc
  /** Applied: the commit entry of each partition written, `[partition, idx]`. */
  parts: readonly (readonly [number, number])[]
}

/** The place of a log: its region in a cluster of `regions`. */
export interface TxLogPlace {
  region: number
  regions: number
}

/** A region's transaction log on one backend. See the module comment. */
export abstract class AbstractTxLog {
  readonly region: number
  readonly regions: number
  /** A short description of the backend. */
  abstract readonly backend: string
  readonly #life = new OpenLifecycle(() => `the transaction log of region ${this.region}`)

  constructor(place: TxLogPlace) {
    if (!Number.isInteger(place.regions) || place.regions < 1 || place.regions > 255)
      throw new TypeError('regions must be an integer in 1..255')
    if (!isRegionId(place.region, place.regions))
      throw new TypeError('region must be below regions')
    this.region = place.region
    this.regions = place.regions
  }

  /** Whether the backend can serve now. */
  get available(): boolean {
    return this.#life.state === 'open'
  }

  /** Opens the log and loads its state. */
  open(): Promise<void> {
    return this.#life.open(() => this._open())
  }

  /** Closes the log once what it accepted is durable. */
  close(): Promise<void> {
    return this.#life.close(() => this._close())
  }

  /** Throws `SHUTTING_DOWN` or `BACKEND_UNAVAILABLE` unless the log is open. */
  checkOpen(): void {
    if (this.#life.state === 'open') return
    if (this.#life.state === 'closing')
      throw new CausewayError(
        'SHUTTING_DOWN',
        `the transaction log of region ${this.region} is closing`,
      )
    throw new CausewayError(
      'BACKEND_UNAVAILABLE',
      `the transaction log of region ${this.region} is not open`,
      { region: this.region },
    )
  }

  /**
   * Appends a commit: the next tid, a ts from the log's clock past `tx.dt`, durably. With `op`, at
   * most once: a repeat answers the first tid (`replayed`), and a record made by another request is
   * `OP_ID_REUSED`.
   */
  append(tx: TxAppend, op?: OpRef): Promise<TxAppended> {
    try {
      this.checkOpen()
      if (!Number.isSafeInteger(tx.snapshot) || tx.snapshot < 0)
        throw new CausewayError('INVALID_REQUEST', 'snapshot must be a tid')
      if (!isHlc(tx.dt)) throw new CausewayError('INVALID_HLC', 'dt must be an HLC')
      if (op !== undefined) checkOpRef(op)
      return this._append(tx, op)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Appends another region's applied transaction unless the log already has it (its tid is at most
   * the checkpoint of its region); resolves to that region's checkpoint after it.
   */
  appendForeign(unit: ForeignTx): Promise<number> {
    try {
      this.checkOpen()
      if (!isRegionId(unit.region, this.regions) || unit.region === this.region)
        throw new CausewayError(
          'INVALID_REQUEST',
          'a foreign transaction comes from another region',
        )
      if (!isSafeCounter(unit.tid)) throw new CausewayError('INVALID_REQUEST', 'bad foreign tid')
      if (!isHlc(unit.ts)) throw new CausewayError('INVALID_HLC', 'bad foreign ts')
      if (!Array.isArray(unit.writes) || unit.writes.length === 0)
        throw new CausewayError('INVALID_REQUEST', 'a foreign transaction writes something')
      return this._appendForeign(unit)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The highest tid of region `region` this log has taken (0: none). */
  foreignCheckpoint(region: number): Promise<number> {
    try {
      this.checkOpen()
      if (!isRegionId(region, this.regions))
        throw new CausewayError('INVALID_REQUEST', `no region ${region}`)
      return this._foreignCheckpoint(region)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Up to `limit` records with `afterTid < tid <= lastTid()`, in tid order. */
  read(afterTid: number, limit: number): Promise<TxRecord[]> {
    try {
      this.checkOpen()
      checkTid(afterTid)
      if (!Number.isSafeInteger(limit) || limit < 1)
        throw new CausewayError('INVALID_REQUEST', 'limit must be a positive integer')
      return this._read(afterTid, limit)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Records outcomes, in tid order, each the one after the last recorded; advances the watermark. */
  recordOutcomes(outcomes: readonly TxOutcomeRecord[]): Promise<void> {
    try {
      this.checkOpen()
      let tid = this.appliedTid()
      for (const o of outcomes) {
        if (o.tid !== tid + 1) throw new RangeError(`outcome ${o.tid} does not follow ${tid}`)
        tid = o.tid
      }
      if (outcomes.length === 0) return Promise.resolve()
      return this._recordOutcomes(outcomes)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Up to `limit` outcomes with `tid > afterTid`, in tid order (as far as recorded). */
  readOutcomes(afterTid: number, limit: number): Promise<TxOutcomeRecord[]> {
    try {
      this.checkOpen()
      checkTid(afterTid)
      if (!Number.isSafeInteger(limit) || limit < 1)
        throw new CausewayError('INVALID_REQUEST', 'limit must be a positive integer')
      return this._readOutcomes(afterTid, limit)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The highest tid appended and durable at the log's durability, as this process knows it: what
   * an applier may apply through (`read` returns no record above it; a record the log could still
   * lose, applied, would leave the partitions with a tid a recovered log gives to another).
   */
  abstract lastTid(): number

  /** The highest tid whose outcome is recorded: the region's snapshot watermark. */
  abstract appliedTid(): number

  /** Re-reads `lastTid` and `appliedTid` where other processes write the log; resolves to lastTid. */
  refresh(): Promise<number> {
    return Promise.resolve(this.lastTid())
  }

  /**
   * Publishes the oldest snapshot the transactions of process `token` still read at (`undefined`:
   * none), for the one that collects versions behind every process's oldest. A log shared by
   * several processes keeps it where they all see it; here, in memory.
   */
  publishOpenSnapshot(token: string, oldest: number | undefined): Promise<void> {
    if (oldest === undefined) this.#snapshots.delete(token)
    else this.#snapshots.set(token, { oldest, at: Date.now() })
    return Promise.resolve()
  }

  /** The oldest snapshot any process published within the last `freshMs`. */
  oldestOpenSnapshot(freshMs: number): Promise<number | undefined> {
    let oldest: number | undefined
    for (const [token, { oldest: snapshot, at }] of this.#snapshots) {
      if (Date.now() - at > freshMs) this.#snapshots.delete(token)
      else if (oldest === undefined || snapshot < oldest) oldest = snapshot
    }
    return Promise.resolve(oldest)
  }

  readonly #snapshots = new Map<string, { oldest: number; at: number }>()

  /** Told the new last tid once appends are durable. */
  abstract onAppend(listener: (last: number) => void): () => void

  /** Told each run of outcomes recorded (by any process, for a shared log), in tid order. */
  abstract onOutcomes(listener: (outcomes: readonly TxOutcomeRecord[]) => void): () => void

  protected abstract _open(): Promise<void>
  protected abstract _close(): Promise<void>
  protected abstract _append(tx: TxAppend, op: OpRef | undefined): Promise<TxAppended>
  protected abstract _appendForeign(unit: ForeignTx): Promise<number>
  protected abstract _foreignCheckpoint(region: number): Promise<number>
  protected abstract _read(afterTid: number, limit: number): Promise<TxRecord[]>
  protected abstract _recordOutcomes(outcomes: readonly TxOutcomeRecord[]): Promise<void>
  protected abstract _readOutcomes(afterTid: number, limit: number): Promise<TxOutcomeRecord[]>
}
