/**
 * The storage contract of one partition replica: what every backend (LevelDB, Redis, a third one)
 * implements and all that the cluster, routing and HTTP layers may use. Shaped like
 * abstract-level: each public method checks and normalises its input once (`replica-input.ts`,
 * `@causeway/core`'s entry and envelope checks), refuses calls while the replica is not open, and
 * only then calls the protected `_method` a backend implements, which always receives exactly the
 * documented arguments. What a backend can do is declared in {@link supports}, never probed. The
 * compliance suite in `gateway/test/storage/` runs against every backend through this class.
 *
 * A replica holds, for one partition in one region: the winning version of each key (highest
 * `(ts, dc)`), the partition log as one FIFO stream per origin region keyed by origin idx, the
 * stable vector `sv` (`sv[d]` = highest origin idx of region `d` applied here) and, at the leader,
 * the HLC and the local counter (`counter == sv[region]`). Every mutation is one atomic step, so
 * `sv`, log and data always agree, also after a crash.
 *
 * A stored value that does not decode quarantines its key at that replica, never the partition:
 * see `quarantine.ts`.
 */
import {
  type CausalContext,
  type CommitEntry,
  CausewayError,
  type EpochHistory,
  type Hlc,
  INITIAL_HISTORY,
  type KeyEntry,
  type LogEntry,
  type SetOpEntry,
  type ShipEnvelope,
  type SiblingsEntry,
  checkLogEntry,
  checkShipEnvelope,
  covers,
} from '@causeway/core'
import type { AbstractSetReplica } from './abstract-set-replica.js'
import {
  type OpCheck,
  type OpOutcome,
  type OpRef,
  type ReplicaWrite,
  checkOpWrite,
} from './op-records.js'
import type {
  AdvanceListener,
  AsOfRead,
  Heartbeat,
  ReplicaManifest,
  ReplicaPlace,
  ReplicaRead,
  SiblingRead,
  TxCommit,
} from './partition-replica.js'
import {
  checkDeadline,
  checkDependencyTime,
  checkLogRead,
  checkNeedVector,
  checkReplicaWrite,
  checkStoredKey,
  checkStoredKeys,
  checkTid,
  checkTxCommits,
} from './replica-input.js'
import { type LifecycleState, OpenLifecycle } from './open-lifecycle.js'
import { parseSetDelta } from './set-writes.js'

/** Where a replica is in its life: calls other than `open` are refused unless it is `open`. */
export type ReplicaState = LifecycleState

/** Most regions a cluster may have (region ids fit in one byte). */
const MAX_REGIONS = 255

/** One partition replica on one storage backend. See the module comment. */
export abstract class AbstractPartitionReplica {
  readonly region: number
  readonly partition: number
  /** Index of this replica in its region; replica 0 starts as leader. */
  readonly replica: number
  /** Number of regions D: the length of `sv`. */
  readonly regions: number
  /** A short description of the backend, e.g. `level:memory` or `redis://127.0.0.1:6380`. */
  abstract readonly backend: string
  /** What this backend can do. */
  abstract readonly supports: ReplicaManifest
  /** The sets of this partition, when {@link supports}`.sets` (else undefined). */
  protected abstract readonly _sets: AbstractSetReplica | undefined

  readonly #life = new OpenLifecycle(() => this.#name())
  /** Repairs asked for and not yet done, by key: concurrent asks share one. */
  readonly #repairs = new Map<string, Promise<boolean>>()

  constructor(place: ReplicaPlace) {
    for (const name of ['region', 'partition', 'replica'] as const)
      if (!Number.isSafeInteger(place[name]) || place[name] < 0)
        throw new TypeError(`${name} must be a non-negative integer`)
    if (!Number.isInteger(place.regions) || place.regions < 1 || place.regions > MAX_REGIONS)
      throw new TypeError(`regions must be an integer in 1..${MAX_REGIONS}`)
    if (place.region >= place.regions) throw new TypeError('region must be below regions')
    this.region = place.region
    this.partition = place.partition
    this.replica = place.replica
    this.regions = place.regions
  }

  /** Where the replica is in its life. */
  get state(): ReplicaState {
    return this.#life.state
  }

  /**
   * Whether the backend can serve now (its server is reachable). Reads go to available replicas
   * only. A backend in this process is always available.
   */
  get available(): boolean {
    return true
  }

  /** The sets (Bigsets) stored in this partition, written through its log. */
  get sets(): AbstractSetReplica {
    const sets = this._sets
    if (!this.supports.sets || sets === undefined)
      throw new CausewayError('INTERNAL', `the ${this.backend} backend has no sets`)
    return sets
  }

  /** Opens (or reopens) the store and loads `sv`, counter, HLC and epoch from it. */
  open(): Promise<void> {
    return this.#life.open(() => this._open())
  }

  /**
   * Closes the store once what it accepted is done (acknowledged writes stay acknowledged);
   * calls made from here on are refused, pending waiters resolve as not covered.
   */
  close(): Promise<void> {
    return this.#life.close(() => this._close())
  }

  /** Throws the error calls are refused with now (`SHUTTING_DOWN`, `BACKEND_UNAVAILABLE`), if any. */
  checkOpen(): void {
    if (this.#life.state === 'open') return
    if (this.#life.state === 'closing')
      throw new CausewayError('SHUTTING_DOWN', `${this.#name()} is closing`)
    throw new CausewayError('BACKEND_UNAVAILABLE', `${this.#name()} is not open`, {
      region: this.region,
      partition: this.partition,
      replica: this.replica,
    })
  }

  /** The stable vector, length D. A copy. */
  abstract sv(): number[]

  /** The partition epoch this replica belongs to (starts at 1): its region's current epoch. */
  abstract epoch(): number

  /**
   * Origin region `origin`'s epoch history of this partition as this replica knows it
   * (`@causeway/core`'s `epoch-history.ts`): which positions `(epoch, idx)` of that region exist.
   * A backend whose leader never changes keeps the initial history (epoch 1 from index 1).
   */
  epochHistory(origin: number): EpochHistory {
    void origin
    return INITIAL_HISTORY
  }

  /** Subscribes to `sv` advances; returns the unsubscribe function. */
  abstract onAdvance(listener: AdvanceListener): () => void

  /**
   * Leader only. Stamps `ts = HLC.update(dt)`, appends a local entry with `idx = ++counter`,
   * stores the version and advances `sv[region]`: atomically, and durably before resolving.
   * `value` undefined writes a tombstone (a `delete` entry).
   * @throws `INVALID_KEY`, `INVALID_VALUE` (empty or not text), `INVALID_HLC`, before anything.
   */
  write(key: string, value: string | undefined, dt: Hlc): Promise<KeyEntry> {
    try {
      this.checkOpen()
      const write: ReplicaWrite = { kind: 'kv', key, value }
      checkReplicaWrite(write, this.regions)
      checkDependencyTime(dt)
      return this._write(write, dt) as Promise<KeyEntry>
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Leader only, for a key of a siblings namespace. Like {@link write} (same HLC, idx and `sv`
   * bookkeeping), but the value (or, `undefined`, a tombstone) becomes a new sibling of the key:
   * it supersedes the siblings `context` covers (the causal context the writer read; `[]` for a
   * blind write) and leaves the others. The entry carries the resulting set.
   * @throws `INVALID_CONTEXT` for a context naming a region the cluster does not have, or writes
   * of this region the key never had; `COUNTER_EXHAUSTED` when the new dot would pass the bound.
   */
  writeSibling(
    key: string,
    value: string | undefined,
    dt: Hlc,
    context: CausalContext,
  ): Promise<SiblingsEntry> {
    try {
      this.checkOpen()
      this.#need('siblings')
      const write: ReplicaWrite = { kind: 'sibling', key, value, context }
      checkReplicaWrite(write, this.regions)
      checkDependencyTime(dt)
      return this._write(write, dt) as Promise<SiblingsEntry>
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Leader only: `write` (a key, a siblings key or a set write, as {@link write},
   * {@link writeSibling} and `sets.write` do it) remembered under operation id `op`, in the same
   * atomic step as the write (`op-records.ts`). When `op` was already applied nothing is written
   * and its record is the outcome (`OP_EXPIRED` when its client's records no longer reach it:
   * below the window kept, or the client was idle past the retention); a record made by another
   * request is `OP_ID_REUSED`. Concurrent calls with one `op` apply it once. `check` runs once the
   * op is known to be new, before it is applied (for checks a replay must not repeat).
   */
  writeOnce(op: OpRef, write: ReplicaWrite, dt: Hlc, check?: OpCheck): Promise<OpOutcome> {
    try {
      this.checkOpen()
      this.#need('opRecords')
      if (write?.kind === 'sibling') this.#need('siblings')
      if (write?.kind === 'set') this.#need('sets')
      checkOpWrite(op, write)
      checkReplicaWrite(write, this.regions)
      checkDependencyTime(dt)
      return this._writeOnce(op, write, dt, check)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Leader only: a shipping envelope of another region's entries (`@causeway/core`'s
   * `ship-envelope.ts`), checked whole before anything is applied. Entries with
   * `idx <= sv[from]` are skipped (idempotent); an entry with `idx > sv[from] + 1` is a gap and
   * stops the batch there, unless the envelope's epoch history says nothing lies between what
   * this replica holds and it (a new epoch above a lost range). Advances the HLC past each
   * applied entry's `ts`. Resolves to the new `sv[from]` (the shipper's checkpoint).
   * @throws `UNSUPPORTED_LOG_FORMAT` for an envelope version or entry kind this version does not
   * know, `INVALID_REQUEST` for anything else malformed, `SHIPPING_DIVERGED` for an envelope that
   * disagrees with what this replica holds of its origin; in each case nothing is applied.
   */
  receive(envelope: ShipEnvelope): Promise<number> {
    try {
      this.checkOpen()
      const checked = checkShipEnvelope(envelope, this.regions, this.region)
      for (const entry of checked.entries) this.#checkSupported(entry)
      return this._admitShipped(checked).then(() =>
        this._applyShipped(checked.from, checked.entries),
      )
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Follower only: entries of the leader's log, any origins, each origin in idx order, checked
   * whole before anything is applied. Same idempotence and gap rules as {@link receive}, per
   * origin.
   */
  apply(entries: readonly LogEntry[]): Promise<void> {
    try {
      this.checkOpen()
      if (!Array.isArray(entries))
        throw new CausewayError('INVALID_REQUEST', 'entries must be an array')
      const checked = entries.map((raw) => {
        const entry = checkLogEntry(raw, this.regions)
        this.#checkSupported(entry)
        return entry
      })
      return this._applyReplicated(checked)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The winning version of `key` and the `sv` it was read at.
   * @throws `VALUE_QUARANTINED` when the stored version does not decode (see `quarantine.ts`).
   */
  read(key: string): Promise<ReplicaRead> {
    try {
      this.checkOpen()
      checkStoredKey(key)
      return this._read(key)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The sibling set of a siblings-namespace `key` and the `sv` it was read at, atomically.
   * @throws `VALUE_QUARANTINED` when the stored set does not decode (see `quarantine.ts`).
   */
  readSiblings(key: string): Promise<SiblingRead> {
    try {
      this.checkOpen()
      this.#need('siblings')
      checkStoredKey(key)
      return this._readSiblings(key)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Rebuilds the stored value of `key` from this replica's log when it does not decode (see
   * `quarantine.ts`); leaves a value that decodes alone. Resolves `true` when it rebuilt one.
   * A replica that cannot write its own store (a Redis follower: its leader's repair reaches it
   * by replication) resolves `false`. Concurrent calls for one key share one repair.
   */
  repair(key: string): Promise<boolean> {
    try {
      this.checkOpen()
      checkStoredKey(key)
    } catch (error) {
      return Promise.reject(error)
    }
    let repairing = this.#repairs.get(key)
    if (repairing === undefined) {
      repairing = this._repair(key).finally(() => this.#repairs.delete(key))
      this.#repairs.set(key, repairing)
    }
    return repairing
  }

  /** Up to `limit` log entries of `origin` with `idx > afterIdx`, in idx order. */
  readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]> {
    try {
      this.checkOpen()
      checkLogRead(origin, afterIdx, limit, this.regions)
      if (limit === 0) return Promise.resolve([])
      return this._readLog(origin, afterIdx, limit)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Leader only, for causal shipping (Eunomia Algorithm 2, `HEARTBEAT`): moves the HLC past its
   * last timestamp and up to the physical clock, durably, without writing an entry, and resolves
   * to that timestamp and the highest local idx: every local entry up to that idx has a smaller
   * timestamp, every later one will have a larger (so a partition that writes nothing still tells
   * the stabiliser how far its time has gone).
   */
  heartbeat(): Promise<Heartbeat> {
    try {
      this.checkOpen()
    } catch (error) {
      return Promise.reject(error)
    }
    return this._heartbeat()
  }

  /**
   * Resolves `true` as soon as `sv` covers `need` (at once if it already does), or `false` when
   * `deadline` (epoch ms) passes or the replica closes. Driven by `sv` changes, never by polling.
   * @throws `INVALID_VECTOR` unless `need` has one non-negative integer per region.
   */
  waitFor(need: readonly number[], deadline: number): Promise<boolean> {
    try {
      checkNeedVector(need, this.regions)
      checkDeadline(deadline)
    } catch (error) {
      return Promise.reject(error)
    }
    if (this.#life.state !== 'open') return Promise.resolve(false)
    if (covers(this.sv(), need)) return Promise.resolve(true)
    return this._waitCovered(need, deadline)
  }

  /**
   * The stable vector as the store has it now. Where other processes write the same store
   * ({@link supports}`.refresh`) it is re-read from there (a view may be a push behind); elsewhere
   * it is {@link sv}.
   */
  refresh(): Promise<number[]> {
    try {
      this.checkOpen()
    } catch (error) {
      return Promise.reject(error)
    }
    return this.supports.refresh ? this._refresh() : Promise.resolve(this.sv())
  }

  /**
   * Leader only, for `durability: 'majority'`: waits until `needed` of `followers` (this
   * partition's other replicas in the region) have what this leader acknowledged up to its local
   * `idx`, or `timeoutMs` passed; resolves to how many confirmed (at most `needed`).
   */
  awaitReplicated(
    idx: number,
    followers: readonly AbstractPartitionReplica[],
    needed: number,
    timeoutMs: number,
  ): Promise<number> {
    try {
      this.checkOpen()
      if (!Number.isSafeInteger(idx) || idx < 0)
        throw new CausewayError('INVALID_REQUEST', 'idx must be a non-negative integer')
      if (!Number.isSafeInteger(needed) || needed < 0 || needed > followers.length)
        throw new CausewayError(
          'INVALID_OPTION',
          `cannot wait for ${needed} of ${followers.length} followers`,
        )
      if (!(timeoutMs >= 0)) throw new CausewayError('INVALID_OPTION', 'timeoutMs must be >= 0')
    } catch (error) {
      return Promise.reject(error)
    }
    if (needed === 0) return Promise.resolve(0)
    return this._awaitReplicated(idx, followers, needed, timeoutMs)
  }

  /**
   * Leader only, when {@link supports}`.multiVersionReads`: this partition's shares of transactions
   * the region's applier decided to apply, in tid order. Each becomes a local `commit` log entry
   * (`idx = ++counter`, stamped with the transaction's `ts`, which the HLC observes) and, for each
   * write whose `(ts, dc)` beats the key's current version (`dc` is the relayed region for a relay,
   * else this one), a new version of the key visible from snapshot `tid` on; atomically, durably,
   * and in order with every other write. Idempotent: a commit whose tid this replica has already
   * committed ({@link committedTid}) is not applied again; its stored entry is returned.
   * @throws `INVALID_REQUEST` for tids not strictly increasing or a malformed commit, before
   * anything is applied.
   */
  commit(commits: readonly TxCommit[]): Promise<CommitEntry[]> {
    try {
      this.checkOpen()
      this.#need('multiVersionReads')
      checkTxCommits(commits, this.region, this.regions)
      if (commits.length === 0) return Promise.resolve([])
      return this._commit(commits)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The version of each of `keys` at snapshot `tid` (the one made by the highest tid at most
   * `tid`), with the values unless `values: false`, and the `sv` read with them. It does not wait:
   * the caller knows the region has applied through `tid` (a version of a later tid is never
   * returned, so a read too early sees an older snapshot, never a torn one).
   * @throws `SNAPSHOT_TOO_OLD` when `tid` is below {@link txFloor} (its versions may be collected).
   */
  readAsOf(
    tid: number,
    keys: readonly string[],
    options?: { values?: boolean },
  ): Promise<AsOfRead> {
    try {
      this.checkOpen()
      this.#need('multiVersionReads')
      checkTid(tid)
      checkStoredKeys(keys)
      const floor = this.txFloor()
      if (tid < floor)
        throw new CausewayError(
          'SNAPSHOT_TOO_OLD',
          `snapshot ${tid} is older than partition ${this.partition} keeps versions for (from ${floor})`,
          { snapshot: tid, floor, partition: this.partition },
        )
      if (keys.length === 0) return Promise.resolve({ versions: [], sv: this.sv() })
      return this._readAsOf(tid, keys, options?.values ?? true)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Raises the version floor to `floor` (never lowers it): reads at snapshots below it are refused
   * from now on, and the versions only they could see are deleted. The region calls it with the
   * oldest snapshot it still serves.
   */
  collectGarbage(floor: number): Promise<void> {
    try {
      this.checkOpen()
      this.#need('multiVersionReads')
      checkTid(floor)
      if (floor <= this.txFloor()) return Promise.resolve()
      return this._collectGarbage(floor)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** The highest tid of this region's transaction log committed here (0: none). */
  committedTid(): number {
    return 0
  }

  /** The oldest snapshot this replica still reads at (0: every one). */
  txFloor(): number {
    return 0
  }

  /**
   * The oldest snapshot at which every transaction whose commit entry `need` (a vector of this
   * partition's streams) covers is visible here; `undefined` while another region's commit entry
   * it covers has not been made visible by a relay yet (then wait for an `sv` advance: a relay is a
   * local write). A transactional read for a session that has seen `need` reads at a snapshot at
   * least this. 0 where there are no transactions.
   */
  visibleAt(_need: readonly number[]): Promise<number | undefined> {
    return Promise.resolve(0)
  }

  /** Checked commits, at least one (see {@link commit}). */
  protected _commit(_commits: readonly TxCommit[]): Promise<CommitEntry[]> {
    return Promise.reject(new CausewayError('INTERNAL', `${this.backend} has no transactions`))
  }

  /** A checked read at a snapshot not below the floor, of at least one key. */
  protected _readAsOf(_tid: number, _keys: readonly string[], _values: boolean): Promise<AsOfRead> {
    return Promise.reject(new CausewayError('INTERNAL', `${this.backend} has no transactions`))
  }

  /** Raises the floor to `floor`, above the current one, and collects what is below it. */
  protected _collectGarbage(_floor: number): Promise<void> {
    return Promise.reject(new CausewayError('INTERNAL', `${this.backend} has no transactions`))
  }

  /** Opens the store and loads its state. */
  protected abstract _open(): Promise<void>

  /** Closes the store once what was accepted is done; resolves pending waiters as not covered. */
  protected abstract _close(): Promise<void>

  /** A checked leader write (a key, a siblings key or a set write). */
  protected abstract _write(write: ReplicaWrite, dt: Hlc): Promise<LogEntry>

  /** A checked leader write under a checked operation id (see {@link writeOnce}). */
  protected abstract _writeOnce(
    op: OpRef,
    write: ReplicaWrite,
    dt: Hlc,
    check: OpCheck | undefined,
  ): Promise<OpOutcome>

  /**
   * Judges a checked envelope against what this replica holds of its origin before its entries
   * are applied: a backend that keeps epoch histories refuses one that disagrees
   * (`SHIPPING_DIVERGED`) and moves past a lost range the envelope's history declares. By
   * default (a backend whose leaders never change) every envelope is admitted.
   */
  protected _admitShipped(envelope: ShipEnvelope): Promise<void> {
    void envelope
    return Promise.resolve()
  }

  /** Checked entries of region `origin`, consecutive, at a leader; resolves to `sv[origin]`. */
  protected abstract _applyShipped(origin: number, entries: readonly LogEntry[]): Promise<number>

  /** Checked entries of the leader's log at a follower. */
  protected abstract _applyReplicated(entries: readonly LogEntry[]): Promise<void>

  protected abstract _read(key: string): Promise<ReplicaRead>

  protected abstract _readSiblings(key: string): Promise<SiblingRead>

  /** One repair of `key` (concurrent asks already share it). */
  protected abstract _repair(key: string): Promise<boolean>

  /** A heartbeat (see {@link heartbeat}); the replica is open. */
  protected abstract _heartbeat(): Promise<Heartbeat>

  /** `limit` is at least 1 and the arguments are checked. */
  protected abstract _readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]>

  /** Waits for `sv` to cover `need`, which it does not yet; the replica is open. */
  protected abstract _waitCovered(need: readonly number[], deadline: number): Promise<boolean>

  /** Re-reads `sv` from a store other processes write (only when `supports.refresh`). */
  protected _refresh(): Promise<number[]> {
    return Promise.resolve(this.sv())
  }

  /**
   * Waits for `needed` (at least 1) of `followers` to apply this leader's local `idx`: by their
   * own `sv`, which is how a backend whose followers are replicas of this process sees them. A
   * backend whose server replicates by itself asks its server instead.
   */
  protected _awaitReplicated(
    idx: number,
    followers: readonly AbstractPartitionReplica[],
    needed: number,
    timeoutMs: number,
  ): Promise<number> {
    const need = new Array<number>(this.regions).fill(0)
    need[this.region] = idx
    const deadline = Date.now() + timeoutMs
    return new Promise<number>((resolve) => {
      let confirmed = 0
      let answered = 0
      for (const follower of followers) {
        void follower
          .waitFor(need, deadline)
          .catch(() => false)
          .then((applied) => {
            answered++
            if (applied) confirmed++
            if (confirmed >= needed || answered === followers.length)
              resolve(Math.min(confirmed, needed))
          })
      }
    })
  }

  /**
   * Checks the delta of a `set-op` entry before its batch is taken; a backend may keep what it
   * parsed for when it applies the entry.
   * @throws `INVALID_REQUEST` when it is malformed.
   */
  protected _checkSetOp(entry: SetOpEntry): void {
    parseSetDelta(entry.setDelta)
  }

  // An entry of a kind this backend cannot store is refused like a malformed one.
  #checkSupported(entry: LogEntry): void {
    if (entry.kind === 'siblings') this.#need('siblings')
    else if (entry.kind === 'commit') this.#need('multiVersionReads')
    else if (entry.kind === 'set-op') {
      this.#need('sets')
      this._checkSetOp(entry)
    }
  }

  #need(feature: keyof ReplicaManifest): void {
    if (!this.supports[feature])
      throw new CausewayError('INTERNAL', `the ${this.backend} backend does not support ${feature}`)
  }

  #name(): string {
    return `replica ${this.replica} of partition ${this.partition} in region ${this.region}`
  }
}
