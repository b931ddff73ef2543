/**
 * {@link AbstractPartitionReplica} over abstract-level: `classic-level` on disk (a directory per
 * replica) or `memory-level`. See `level-layout.ts` for the keys.
 *
 * Every mutation (leader write, shipped entries, follower apply) goes through one queue. A write
 * is stamped (HLC, idx) synchronously when called; the queue then commits everything that
 * accumulated (see `#drain`), or arrived while the previous batch was being written, as one
 * atomic batch written with `{ sync }` (group commit), and only then advances `sv` in memory and
 * resolves. A failed batch fails the
 * replica: memory is never ahead of disk and no idx is ever skipped. A sibling write the commit
 * refuses (a context that claims writes this region never made, a counter at its bound) gives its
 * idx back: the local writes after it in the batch and the queue move down by one before anything
 * is stored or acknowledged, so the log stays gapless and the refused write leaves no trace.
 *
 * A stored value that does not decode quarantines its key (`quarantine.ts`): reads of it fail with
 * `VALUE_QUARANTINED` and ask for a repair; a commit that touches the key (an entry for it, or
 * the repair) first rebuilds it from the log, so the partition never stops on it.
 */
import {
  CausewayError,
  type CommitEntry,
  type CommitRelay,
  DvvSet,
  HybridClock,
  type Hlc,
  type LogEntry,
  type SetOpEntry,
  checkLogEntry,
  commitEntry,
  encodeCommitWrites,
  HLC_ZERO,
  keyEntry,
  setOpEntry,
  siblingsEntry,
  siblingActor,
} from '@causeway/core'
import type { AbstractBatchOptions, AbstractLevel } from 'abstract-level'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { processLogger } from '../../log.js'
import { AbstractPartitionReplica } from '../abstract-partition-replica.js'
import { CoverageWaiters } from '../coverage-waiters.js'
import type {
  AdvanceListener,
  AsOfRead,
  Heartbeat,
  ReplicaManifest,
  ReplicaRead,
  SiblingRead,
  TxCommit,
  Version,
} from '../partition-replica.js'
import {
  IGNORE_QUARANTINE,
  type QuarantineKind,
  type QuarantineSink,
  quarantinedError,
} from '../quarantine.js'
import {
  NO_SIBLINGS,
  type SiblingSet,
  decodeLoggedSiblings,
  decodeSiblingSet,
  encodeSiblingSet,
  mergeSiblings,
  writeSibling,
} from '../sibling-set.js'
import {
  DEFAULT_OP_RETENTION_MS,
  type OpCheck,
  type OpOutcome,
  type OpRef,
  type ReplicaWrite,
  keyOfWrite,
} from '../op-records.js'
import { LevelOpRecords, type OpStamp } from './level-op-records.js'
import type { StoreOp } from './level-set-kv.js'
import { LevelSetReplica } from './level-set-replica.js'
import { LevelSets } from './level-sets.js'
import { LevelTxVersions } from './level-tx-versions.js'
import type { SetHeadCacheOptions } from './set-head-cache.js'
import { LogTail } from './log-tail.js'
import {
  LAYOUT_FORMAT,
  META_KEY,
  type ReplicaMeta,
  dataKey,
  decodeEntry,
  decodeStoredVersion,
  encodeEntry,
  encodeMeta,
  encodeVersion,
  isStoredVersion,
  logKey,
  parseLogKey,
  siblingsKey,
  storedVersionOrderKey,
  versionOrderKey,
} from './level-layout.js'

/** A LevelDB-like store with string keys and values. */
export type StringLevel = AbstractLevel<string | Buffer | Uint8Array, string, string>

/** Options of a {@link LevelPartitionReplica}. */
export interface LevelReplicaOptions {
  region: number
  partition: number
  /** Index of the replica in its region; replica 0 starts as leader. */
  replica: number
  /** Number of regions (the length of `sv`). */
  regions: number
  /**
   * Directory of a `classic-level` store. Omit it for a `memory-level` store.
   * @default undefined (memory)
   */
  location?: string
  /**
   * An existing store to use instead of `location` (tests reopen a `memory-level` store this way).
   * The replica opens and closes it.
   */
  db?: StringLevel
  /**
   * The wall clock of the replica's HLC, in ms. Injected so tests can skew or step it back.
   * @default Date.now
   */
  now?: () => number
  /**
   * `fsync` every batch before acknowledging it. Turning it off trades durability for speed.
   * @default true
   */
  sync?: boolean
  /**
   * Called once when a batch fails to commit and the replica stops accepting anything.
   * @default logs the error (`log.ts`'s process logger)
   */
  onFailure?: (error: CausewayError) => void
  /**
   * How long a client of operation ids (`writeOnce`) may be idle before its records are dropped
   * (its mark stays: see `op-records.ts`), in ms.
   * @default 24 hours
   */
  opRetentionMs?: number
  /** How many operation records are kept per client above its mark. @default OP_WINDOW (1024) */
  opWindow?: number
  /**
   * Where keys whose stored value does not decode, and entries whose sibling set does not, are
   * reported (`quarantine.ts`).
   * @default ignores them
   */
  quarantine?: QuarantineSink
  /**
   * Bounds of the sets' head cache (`set-head-cache.ts`); `{ maxSets: 0 }` turns it off (as the
   * micro-benchmark that measures what it buys does).
   * @default 4096 sets, 100,000 cloud dots
   */
  setCache?: SetHeadCacheOptions
}

/**
 * A leader's local write between the moment it is stamped and its commit: mutable, because the
 * commit makes its body (a sibling write's set, a set write's delta, both planned against what the
 * batch's earlier entries left) and, when an earlier sibling write of the batch is refused, moves
 * its idx down. The commit then makes its frozen log entry. Also what `LevelSets` plans a local
 * set write through (its `SetCommitEntry`).
 */
interface PendingWrite {
  readonly origin: number
  idx: number
  readonly key: string
  readonly ts: Hlc
  readonly at: number
  readonly write: ReplicaWrite | CommitWrite
  /** A sibling write: the key's set after it, made by the commit. */
  siblings?: string
  /** A set write: its delta, planned by the commit (`LevelSets`). */
  setDelta?: string
}

/** A partition's share of a transaction, as a leader's local write (`commit`). */
interface CommitWrite {
  readonly kind: 'commit'
  readonly tid: number
  /** `encodeCommitWrites` of its writes. */
  readonly writes: string
  readonly relay: CommitRelay | undefined
}

/** What a commit stores, and what it refused, made or repaired on the way. */
interface CommitPlan {
  ops: StoreOp[]
  /** Local sibling writes refused, with why; they gave their idx back. */
  refused: Map<PendingWrite, CausewayError>
  /** The log entry of each local write the commit stores. */
  made: Map<PendingWrite, LogEntry>
  /** Keys rebuilt from the log. */
  repaired: Set<string>
}

/** A local write or an entry taken from a feed or a link, in the order a commit applies them. */
type Accepted = PendingWrite | LogEntry

function isPending(item: Accepted): item is PendingWrite {
  return 'write' in item
}

type Mutation =
  | { kind: 'write'; pending: PendingWrite; op?: OpStamp; settle: Settle<LogEntry> }
  | { kind: 'receive'; origin: number; entries: readonly LogEntry[]; settle: Settle<number> }
  | { kind: 'apply'; entries: readonly LogEntry[]; settle: Settle<void> }
  // No entry: a commit for the sets' pending compaction (see level-sets.ts).
  | { kind: 'sets'; settle: Settle<void> }
  // No entry: rebuild a key whose stored value does not decode (see quarantine.ts).
  | { kind: 'repair'; key: string; settle: Settle<boolean> }
  // No entry: raise the floor of transactional versions and collect below it.
  | { kind: 'collect'; floor: number; settle: Settle<void> }
  // No entry: a heartbeat's clock tick made durable; resolves to the local idx after the commit.
  | { kind: 'heartbeat'; settle: Settle<number> }

interface Settle<T> {
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

// Bounds one group commit, so a burst of writes is acknowledged in several batches rather than
// one unbounded one.
const MAX_MUTATIONS_PER_BATCH = 1024

const MANIFEST: ReplicaManifest = Object.freeze({
  siblings: true,
  sets: true,
  multiVersionReads: true,
  refresh: false,
  opRecords: true,
})

/** A partition replica stored in LevelDB (`classic-level`) or in memory (`memory-level`). */
export class LevelPartitionReplica extends AbstractPartitionReplica {
  readonly backend: string
  readonly supports = MANIFEST
  readonly #db: StringLevel
  readonly #now: () => number
  // classic-level reads `sync`; abstract-level's option types do not declare it.
  readonly #durable: AbstractBatchOptions<string, string> & { sync: boolean }
  readonly #onFailure: (error: CausewayError) => void
  readonly #quarantine: QuarantineSink

  /** Set when a batch failed to commit: the replica refuses everything until reopened. */
  #failure: CausewayError | undefined
  #sv: number[]
  #epoch = 1
  #clock: HybridClock
  /** Last idx handed to a local write; ahead of `sv[region]` while writes are being committed. */
  #counter = 0
  /** Highest tid of a commit stamped (committed or queued). */
  #queuedTid = 0
  #queue: Mutation[] = []
  #draining: Promise<void> | undefined
  readonly #waiters = new CoverageWaiters()
  readonly #listeners = new Set<AdvanceListener>()
  /** `#tails[origin]`: the newest committed entries, which followers and shippers read next. */
  #tails: LogTail[] = []
  readonly #sets: LevelSets
  /** The sets of this partition (`level-sets.ts`), as the contract has them. */
  protected readonly _sets: LevelSetReplica
  readonly #ops: LevelOpRecords
  /** Versions of transactional keys (`level-tx-versions.ts`). */
  readonly #tx: LevelTxVersions

  constructor(options: LevelReplicaOptions) {
    super(options)
    this.#now = options.now ?? Date.now
    this.#durable = { sync: options.sync ?? true }
    this.#onFailure =
      options.onFailure ?? ((error) => processLogger().error({ err: error }, error.message))
    this.#quarantine = options.quarantine ?? IGNORE_QUARANTINE
    if (options.db) {
      this.#db = options.db
      this.backend = `level:${options.db.constructor.name}`
    } else if (options.location !== undefined) {
      this.#db = new ClassicLevel<string, string>(options.location)
      this.backend = `level:${options.location}`
    } else {
      this.#db = new MemoryLevel<string, string>({ storeEncoding: 'utf8' })
      this.backend = 'level:memory'
    }
    this.#sv = new Array<number>(this.regions).fill(0)
    this.#clock = new HybridClock({ now: this.#now })
    this.#sets = new LevelSets({
      db: this.#db,
      region: this.region,
      regions: this.regions,
      epoch: () => this.#epoch,
      requestCommit: () => this.#commitSets(),
      ...(options.setCache === undefined ? {} : { cache: options.setCache }),
    })
    this._sets = new LevelSetReplica(
      {
        checkOpen: () => this.checkOpen(),
        checkNotFailed: () => {
          if (this.#failure) throw this.#failure
        },
        write: (name, write, dt) =>
          this.#write({ kind: 'set', name, write }, dt) as Promise<SetOpEntry>,
      },
      this.#sets,
    )
    this.#tx = new LevelTxVersions({
      db: this.#db,
      region: this.region,
      regions: this.regions,
      tails: () => this.#tails,
    })
    this.#ops = new LevelOpRecords({
      db: this.#db,
      now: this.#now,
      retentionMs: options.opRetentionMs ?? DEFAULT_OP_RETENTION_MS,
      ...(options.opWindow === undefined ? {} : { window: options.opWindow }),
      isOpen: () => this.state === 'open' && this.#failure === undefined,
      region: this.region,
      epoch: () => this.#epoch,
    })
  }

  protected async _open(): Promise<void> {
    try {
      if (this.#db.status !== 'open') await this.#db.open()
      const meta = await this.#loadMeta()
      this.#sv = [...meta.sv]
      this.#epoch = meta.epoch
      this.#counter = meta.sv[this.region]!
      this.#clock = new HybridClock({ now: this.#now, last: meta.hlc })
      this.#tails = Array.from({ length: this.regions }, () => new LogTail())
      await this.#tx.open(meta.tx, meta.sv)
      this.#queuedTid = this.#tx.committedTid
      this.#failure = undefined
    } catch (error) {
      if (this.#db.status === 'open') await this.#db.close()
      throw error
    }
    // Background work; it waits a moment, by which time the replica is open.
    void this.#sets.opened() // compacts sets a previous run left covered keys in
    this.#ops.start()
  }

  protected async _close(): Promise<void> {
    this.#sets.close()
    // Graceful: what was already accepted is committed (and acknowledged) before the store closes.
    await this.#draining
    await this.#ops.stop()
    this.#waiters.closeAll()
    await this.#db.close()
  }

  sv(): number[] {
    return [...this.#sv]
  }

  epoch(): number {
    return this.#epoch
  }

  protected _write(write: ReplicaWrite, dt: Hlc): Promise<LogEntry> {
    return this.#write(write, dt)
  }

  protected _writeOnce(
    op: OpRef,
    write: ReplicaWrite,
    dt: Hlc,
    check: OpCheck | undefined,
  ): Promise<OpOutcome> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#ops.writeOnce(op, (stamp) => this.#write(write, dt, stamp), check)
  }

  override committedTid(): number {
    return this.#tx.committedTid
  }

  override txFloor(): number {
    return this.#tx.floor
  }

  override visibleAt(need: readonly number[]): Promise<number | undefined> {
    return Promise.resolve(this.#tx.visibleAt(need))
  }

  /**
   * Commits already committed (or queued) are looked up; the others are stamped now, in order,
   * like any local write (their ts is the transaction's; the clock observes it), and committed
   * with the writes queued around them.
   */
  protected override async _commit(commits: readonly TxCommit[]): Promise<CommitEntry[]> {
    const refused = this.#refusal()
    if (refused) throw refused
    const fresh: Promise<LogEntry>[] = []
    const known: number[] = []
    for (const commit of commits) {
      if (commit.tid <= this.#queuedTid) {
        known.push(commit.tid)
        continue
      }
      this.#queuedTid = commit.tid
      this.#clock.observe(commit.ts)
      const write: CommitWrite = {
        kind: 'commit',
        tid: commit.tid,
        writes: encodeCommitWrites(commit.writes),
        relay: commit.relay,
      }
      const pending: PendingWrite = {
        origin: this.region,
        idx: ++this.#counter,
        key: commit.writes[0]![0],
        ts: commit.ts,
        at: this.#now(),
        write,
      }
      fresh.push(this.#enqueue<LogEntry>((settle) => ({ kind: 'write', pending, settle })))
    }
    const made = (await Promise.all(fresh)) as CommitEntry[]
    if (known.length === 0) return made
    await this.#draining
    const found = await Promise.all(known.map((tid) => this.#committedEntry(tid)))
    return [...found, ...made]
  }

  // The commit entry of `tid`, committed here before.
  async #committedEntry(tid: number): Promise<CommitEntry> {
    const idx = await this.#tx.commitIdx(tid)
    const [entry] = idx === undefined ? [] : await this._readLog(this.region, idx - 1, 1)
    if (entry?.kind !== 'commit' || entry.tid !== tid)
      throw new CausewayError(
        'INTERNAL',
        `${this.#name()} has committed tid ${tid} but no longer finds its entry`,
      )
    return entry
  }

  protected override _readAsOf(
    tid: number,
    keys: readonly string[],
    values: boolean,
  ): Promise<AsOfRead> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#tx.read(tid, keys, values, META_KEY)
  }

  protected override _collectGarbage(floor: number): Promise<void> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#enqueue<void>((settle) => ({ kind: 'collect', floor, settle }))
  }

  /** How many operation records this replica holds of the client of `op` (for tests). */
  opRecordCount(op: Pick<OpRef, 'id' | 'tenant'>): Promise<number> {
    return this.#ops.recordCount(op)
  }

  // Stamps a checked write (HLC, idx) now; its commit makes its body and its entry.
  #write(write: ReplicaWrite, dt: Hlc, op?: OpStamp): Promise<LogEntry> {
    // Checked again: `writeOnce` may get here after its check awaited, and the replica closed.
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    let ts: Hlc
    try {
      ts = this.#clock.update(dt)
    } catch (error) {
      return Promise.reject(error) // an exhausted clock; no idx was taken
    }
    const pending: PendingWrite = {
      origin: this.region,
      idx: ++this.#counter,
      key: keyOfWrite(write),
      ts,
      at: this.#now(),
      write,
    }
    // Planned when the batch commits, against the set's clocks at that point.
    if (write.kind === 'set') this.#sets.stage(pending, write.write)
    return this.#enqueue<LogEntry>((settle) => ({ kind: 'write', pending, op, settle }))
  }

  protected _applyShipped(origin: number, entries: readonly LogEntry[]): Promise<number> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#enqueue<number>((settle) => ({ kind: 'receive', origin, entries, settle }))
  }

  protected _applyReplicated(entries: readonly LogEntry[]): Promise<void> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#enqueue<void>((settle) => ({ kind: 'apply', entries, settle }))
  }

  // Parsed once, and kept for the commit that applies the entry (level-sets.ts).
  protected override _checkSetOp(entry: SetOpEntry): void {
    this.#sets.check(entry)
  }

  protected async _read(key: string): Promise<ReplicaRead> {
    const refused = this.#refusal()
    if (refused) throw refused
    // One getMany reads both from one snapshot, so the version and `sv` agree.
    const [meta, stored] = await this.#db.getMany([META_KEY, dataKey(key)])
    if (meta === undefined) throw new Error(`${this.#name()} lost its meta record`)
    const { sv } = JSON.parse(meta) as ReplicaMeta
    if (stored === undefined) return { version: undefined, sv }
    try {
      return { version: decodeStoredVersion(stored, this.regions), sv }
    } catch (error) {
      throw this.#quarantined(key, 'version', error)
    }
  }

  protected async _readSiblings(key: string): Promise<SiblingRead> {
    const refused = this.#refusal()
    if (refused) throw refused
    const [meta, stored] = await this.#db.getMany([META_KEY, siblingsKey(key)])
    if (meta === undefined) throw new Error(`${this.#name()} lost its meta record`)
    const { sv } = JSON.parse(meta) as ReplicaMeta
    if (stored === undefined) return { siblings: NO_SIBLINGS, sv }
    try {
      return { siblings: decodeSiblingSet(stored, this.regions), sv }
    } catch (error) {
      throw this.#quarantined(key, 'siblings', error)
    }
  }

  // Ticked now, so every write stamped before has a smaller ts and every later one a larger; its
  // mutation commits after theirs (the queue is in stamp order), and the commit's meta keeps the
  // tick, so a restart never issues it again.
  protected _heartbeat(): Promise<Heartbeat> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    let ts: Hlc
    try {
      ts = this.#clock.tick()
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#enqueue<number>((settle) => ({ kind: 'heartbeat', settle })).then((idx) => ({
      ts,
      idx,
    }))
  }

  protected _repair(key: string): Promise<boolean> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#enqueue<boolean>((settle) => ({ kind: 'repair', key, settle }))
  }

  // Reports a key whose stored value does not decode, asks for its repair, and returns the error
  // the read fails with.
  #quarantined(key: string, kind: QuarantineKind, cause: unknown): CausewayError {
    this.#reportQuarantined(key, kind, cause)
    this.repair(key).catch(() => {}) // a closing or failed replica: the next read asks again
    return quarantinedError({
      region: this.region,
      partition: this.partition,
      replica: this.replica,
      key,
      kind,
      reason: '',
    })
  }

  protected async _readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]> {
    const refused = this.#refusal()
    if (refused) throw refused
    const tail = this.#tails[origin]?.read(afterIdx, limit)
    if (tail !== undefined) return tail
    const rows = await this.#db
      .iterator({
        gt: logKey(origin, afterIdx),
        lte: logKey(origin, Number.MAX_SAFE_INTEGER),
        limit,
      })
      .all()
    return rows.map(([key, value]) => {
      const { idx } = parseLogKey(key)
      return decodeEntry(origin, idx, value)
    })
  }

  protected _waitCovered(need: readonly number[], deadline: number): Promise<boolean> {
    if (this.#failure) return Promise.resolve(false)
    return this.#waiters.wait(this.#sv, need, deadline)
  }

  onAdvance(listener: AdvanceListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** A full compaction pass over set `name` (removes are otherwise compacted in the background). */
  compactSet(name: string): Promise<{ deleted: number }> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    return this.#sets.compact(name)
  }

  // A commit with no entry, for pending set compaction; nothing when the replica is not open.
  #commitSets(): Promise<void> {
    if (this.#refusal()) return Promise.resolve()
    return this.#enqueue<void>((settle) => ({ kind: 'sets', settle }))
  }

  // Why an operation is refused now, if it is: a failed replica, or one that is not open.
  #refusal(): CausewayError | undefined {
    if (this.#failure) return this.#failure
    if (this.state === 'open') return undefined
    try {
      this.checkOpen()
    } catch (error) {
      return error as CausewayError
    }
    return undefined
  }

  #enqueue<T>(make: (settle: Settle<T>) => Mutation): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const mutation = make({ resolve, reject })
      this.#queue.push(mutation)
      this.#draining ??= this.#drain(mutation.kind === 'write')
    })
  }

  /**
   * Commits the queue. Group commit: a local write waits for the end of this turn of the event
   * loop, so that every request read from the sockets in it joins the first batch. Entries from a
   * feed or a link wait only for the current tick: they come in runs already, and a follower
   * applies its leader's commit before the writer hears back.
   */
  async #drain(local: boolean): Promise<void> {
    if (local) await new Promise<void>((resolve) => setImmediate(resolve))
    else await Promise.resolve()
    while (this.#queue.length > 0 && this.#failure === undefined) {
      const batch = this.#queue.splice(0, MAX_MUTATIONS_PER_BATCH)
      try {
        await this.#commit(batch)
      } catch (error) {
        this.#fail(error, batch)
      }
    }
    this.#draining = undefined
  }

  async #commit(mutations: Mutation[]): Promise<void> {
    const sv = [...this.#sv]
    const accepted: Accepted[] = []
    const repairs = new Set<string>()
    const opWrites = new Map<PendingWrite, OpStamp>()
    let collect = 0
    for (const m of mutations) {
      if (m.kind === 'write') {
        // Stamped in call order and committed in queue order, so this always holds.
        if (m.pending.idx !== sv[this.region]! + 1) {
          throw new Error(
            `local write idx ${m.pending.idx} does not follow sv[${this.region}] = ${sv[this.region]}`,
          )
        }
        sv[this.region] = m.pending.idx
        accepted.push(m.pending)
        if (m.op) opWrites.set(m.pending, m.op)
      } else if (m.kind === 'receive') {
        for (const entry of m.entries) {
          if (entry.idx <= sv[m.origin]!) continue
          if (entry.idx > sv[m.origin]! + 1) break // a gap: the shipper resends from the checkpoint
          sv[m.origin] = entry.idx
          accepted.push(entry)
          this.#clock.observe(entry.ts)
        }
      } else if (m.kind === 'apply') {
        const gapped = new Set<number>()
        for (const entry of m.entries) {
          if (gapped.has(entry.origin) || entry.idx <= sv[entry.origin]!) continue
          if (entry.idx > sv[entry.origin]! + 1) {
            gapped.add(entry.origin)
            continue
          }
          sv[entry.origin] = entry.idx
          accepted.push(entry)
          this.#clock.observe(entry.ts)
        }
      } else if (m.kind === 'repair') repairs.add(m.key)
      else if (m.kind === 'collect') collect = Math.max(collect, m.floor)
    }

    // A local write's ts came from this clock: only other replicas' entries move it.
    const compact = mutations.some((m) => m.kind === 'sets')
    const tick = mutations.some((m) => m.kind === 'heartbeat')
    let plan: CommitPlan = { ops: [], refused: new Map(), made: new Map(), repaired: new Set() }
    if (accepted.length > 0 || compact || repairs.size > 0 || collect > 0 || tick) {
      plan = await this.#operations({ accepted, sv, compact, repairs, collect })
      // Operation records go in the batch of their writes (a sibling write's set is made by now);
      // a refused write leaves none.
      for (const [pending, op] of opWrites) {
        const entry = plan.made.get(pending)
        if (entry !== undefined) plan.ops.push(...this.#ops.recordOps(op, entry))
      }
      await this.#store(plan.ops)
      this.#sets.committed() // before anything is acknowledged: `has` reads its cache
      this.#tx.committed()
    }
    const { refused, made, repaired } = plan
    // Refused writes gave their idx back (see #operations): so do the writes queued after them.
    if (refused.size > 0) {
      for (const m of this.#queue) if (m.kind === 'write') m.pending.idx -= refused.size
      this.#counter -= refused.size
    }

    const advanced = sv.some((idx, d) => idx !== this.#sv[d])
    for (const item of accepted) {
      const entry = isPending(item) ? made.get(item) : item
      if (entry !== undefined) this.#tails[entry.origin]!.append(entry)
    }
    this.#sv = sv
    // A follower that applied its own region's entries must not reuse their idx if promoted.
    if (sv[this.region]! > this.#counter) this.#counter = sv[this.region]!
    if (advanced) this.#notify()
    for (const key of repaired)
      this.#quarantine.repaired({
        region: this.region,
        partition: this.partition,
        replica: this.replica,
        key,
      })
    for (const m of mutations) {
      if (m.kind === 'write') {
        const error = refused.get(m.pending)
        if (error) m.settle.reject(error)
        else m.settle.resolve(made.get(m.pending)!)
      } else if (m.kind === 'receive')
        m.settle.resolve(sv[m.origin]!) // the shipper's checkpoint
      else if (m.kind === 'repair') m.settle.resolve(repaired.has(m.key))
      else if (m.kind === 'heartbeat') m.settle.resolve(sv[this.region]!)
      else m.settle.resolve()
    }
  }

  /**
   * Writes `ops` as one atomic batch, durably when the replica syncs. A chained batch takes the
   * options once for the whole batch: an array batch copies them into every operation, which
   * costs more per operation than the store's own insert.
   */
  async #store(ops: readonly StoreOp[]): Promise<void> {
    const batch = this.#db.batch()
    try {
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value)
        else batch.del(op.key)
      }
    } catch (error) {
      await batch.close()
      throw error
    }
    await batch.write(this.#durable)
  }

  /**
   * The batch that stores `accepted` entries: log rows, changed winners and sibling sets, and the
   * new meta. A leader's sibling write gets its set here, from the key's set as the entries
   * before it in the batch left it; a sibling write `writeSibling` refuses is left out and gives
   * its idx back (the local writes after it move down, `sv` too, before anything below reads an
   * idx). Each local write's frozen entry is made once its body is. A stored value that does not
   * decode is rebuilt from the log first (`quarantine.ts`), as are the keys of `repairs`. The
   * sets plan only when the commit has set entries or was asked for by their compaction
   * (`compact`): a commit of keys alone leaves them be.
   */
  async #operations(batch: {
    accepted: readonly Accepted[]
    sv: number[]
    compact: boolean
    repairs: ReadonlySet<string>
    /** Raise the floor of transactional versions to this (0: no). */
    collect: number
  }): Promise<CommitPlan> {
    const { accepted, sv, compact, repairs, collect } = batch
    const kvKeys = new Set<string>()
    const siblingKeys = new Set<string>()
    for (const item of accepted) {
      const kind = isPending(item) ? item.write.kind : item.kind
      if (kind === 'sibling' || kind === 'siblings') siblingKeys.add(item.key)
      else if (kind === 'kv' || kind === 'put' || kind === 'delete') kvKeys.add(item.key)
    }
    for (const key of repairs) {
      kvKeys.add(key)
      siblingKeys.add(key)
    }
    const reads: string[] = []
    for (const key of kvKeys) reads.push(dataKey(key))
    for (const key of siblingKeys) reads.push(siblingsKey(key))
    const stored =
      reads.length === 0
        ? []
        : reads.length === 1
          ? [await this.#db.get(reads[0]!)]
          : await this.#db.getMany(reads)
    // Each key's winner as its version order key: compared without decoding the stored version.
    const winners = new Map<string, string | undefined>()
    const sets = new Map<string, SiblingSet>()
    const changed = new Map<string, Version | undefined>()
    const changedSets = new Set<string>()
    const repaired = new Set<string>()
    let i = 0
    for (const key of kvKeys) {
      const text = stored[i++]
      if (text === undefined || isStoredVersion(text, this.regions)) {
        winners.set(key, text === undefined ? undefined : storedVersionOrderKey(text))
        continue
      }
      this.#reportQuarantined(key, 'version', whyNotVersion(text, this.regions))
      const winner = (await this.#rebuild(key)).version
      winners.set(key, winner && versionOrderKey(winner.ts, winner.dc))
      changed.set(key, winner)
      repaired.add(key)
    }
    for (const key of siblingKeys) {
      const text = stored[i++]
      try {
        sets.set(key, text === undefined ? NO_SIBLINGS : decodeSiblingSet(text, this.regions))
      } catch (error) {
        this.#reportQuarantined(key, 'siblings', error)
        sets.set(key, (await this.#rebuild(key)).siblings)
        changedSets.add(key)
        repaired.add(key)
      }
    }

    // Sibling sets, in batch order; refused writes drop out and give their idx back.
    const refused = new Map<PendingWrite, CausewayError>()
    for (const item of accepted) {
      if (isPending(item)) {
        if (refused.size > 0) item.idx -= refused.size
        const { write } = item
        if (write.kind !== 'sibling') continue
        const sibling =
          write.value === undefined ? { ts: item.ts } : { ts: item.ts, value: write.value }
        let next: SiblingSet
        try {
          next = writeSibling(
            sets.get(item.key)!,
            write.context,
            sibling,
            siblingActor(this.region, this.#epoch),
          )
        } catch (error) {
          if (!(error instanceof CausewayError)) throw error
          refused.set(item, error)
          continue
        }
        item.siblings = encodeSiblingSet(next)
        sets.set(item.key, next)
        changedSets.add(item.key)
      } else if (item.kind === 'siblings') {
        let logged: SiblingSet
        try {
          logged = decodeLoggedSiblings(item, this.regions)
        } catch (error) {
          // Logged as it came, not merged: see quarantine.ts.
          this.#quarantine.skipped({
            region: this.region,
            partition: this.partition,
            replica: this.replica,
            key: item.key,
            origin: item.origin,
            idx: item.idx,
            reason: error instanceof Error ? error.message : String(error),
          })
          continue
        }
        sets.set(item.key, mergeSiblings(sets.get(item.key)!, logged))
        changedSets.add(item.key)
      }
    }
    sv[this.region]! -= refused.size

    // Set writes plan first among the rest: a local one's delta (its log row) is made here.
    const setWrites = accepted.filter((item) =>
      isPending(item) ? item.write.kind === 'set' : item.kind === 'set-op',
    )
    const ops: StoreOp[] =
      setWrites.length > 0 || compact ? await this.#sets.commitOps(setWrites) : []
    const made = new Map<PendingWrite, LogEntry>()
    for (const item of accepted) {
      if (isPending(item) && refused.has(item)) continue
      const entry = isPending(item) ? entryOf(item) : item
      if (isPending(item)) made.set(item, entry)
      if (entry.kind === 'put' || entry.kind === 'delete') {
        // `supersedes` on order keys: (ts, dc) strictly after the current winner's.
        const order = versionOrderKey(entry.ts, entry.origin)
        const current = winners.get(entry.key)
        if (current === undefined || order > current) {
          const winner: Version = { ts: entry.ts, dc: entry.origin }
          if (entry.kind === 'put') winner.value = entry.value
          winners.set(entry.key, order)
          changed.set(entry.key, winner)
        }
      }
      ops.push({ type: 'put', key: logKey(entry.origin, entry.idx), value: encodeEntry(entry) })
    }
    for (const [key, winner] of changed) {
      if (winner === undefined) ops.push({ type: 'del', key: dataKey(key) })
      else ops.push({ type: 'put', key: dataKey(key), value: encodeVersion(winner) })
    }
    for (const key of changedSets) {
      const set = sets.get(key)!
      if (set.entries.length === 0) ops.push({ type: 'del', key: siblingsKey(key) })
      else ops.push({ type: 'put', key: siblingsKey(key), value: encodeSiblingSet(set) })
    }
    // Transactional versions last: they read the keys' newest versions, which nothing above writes.
    const received = accepted.filter((item): item is LogEntry => !isPending(item))
    const commits = [...made.values(), ...received].filter(
      (e): e is CommitEntry => e.kind === 'commit',
    )
    commits.sort((a, b) => a.origin - b.origin || a.idx - b.idx)
    if (commits.length > 0) ops.push(...(await this.#tx.commitOps(commits)))
    if (collect > 0) ops.push(...(await this.#tx.collectOps(collect)))
    ops.push({ type: 'put', key: META_KEY, value: encodeMeta(this.#meta(sv)) })
    return { ops, refused, made, repaired }
  }

  #reportQuarantined(key: string, kind: QuarantineKind, cause: unknown): void {
    this.#quarantine.quarantined({
      region: this.region,
      partition: this.partition,
      replica: this.replica,
      key,
      kind,
      reason: cause instanceof Error ? cause.message : String(cause),
    })
  }

  /**
   * `key` as this replica's log says it is (`quarantine.ts`): the `sync` of every decodable
   * sibling set logged for it, and the logged version with the highest `(ts, dc)`. Reads the
   * whole log: only a key whose stored value does not decode comes here.
   */
  async #rebuild(key: string): Promise<{ siblings: SiblingSet; version: Version | undefined }> {
    // An entry's text starts with its header, `[key, ts, at, body]` as JSON (level-layout.ts).
    const head = `[${JSON.stringify(key)},`
    const logged: SiblingSet[] = []
    let version: Version | undefined
    let order = ''
    for await (const [row, text] of this.#db.iterator({ gt: 'l/', lt: 'l0' })) {
      if (!text.startsWith(head)) continue
      let entry: LogEntry
      try {
        const { origin, idx } = parseLogKey(row)
        entry = checkLogEntry(decodeEntry(origin, idx, text), this.regions)
      } catch {
        continue // a damaged row: it can give nothing back
      }
      if (entry.kind === 'set-op') continue
      if (entry.kind === 'siblings') {
        try {
          logged.push(decodeLoggedSiblings(entry, this.regions))
        } catch {
          // refused when it was written, or damaged since: left out
        }
        continue
      }
      const candidate = versionOrderKey(entry.ts, entry.origin)
      if (candidate > order) {
        order = candidate
        version = { ts: entry.ts, dc: entry.origin }
        if (entry.kind === 'put') version.value = entry.value
      }
    }
    return { siblings: DvvSet.sync(logged), version }
  }

  #meta(sv: number[]): ReplicaMeta {
    const tx = this.#tx.meta()
    return {
      format: LAYOUT_FORMAT,
      region: this.region,
      partition: this.partition,
      regions: this.regions,
      sv,
      epoch: this.#epoch,
      hlc: this.#clock.peek(),
      ...(tx === undefined ? {} : { tx }),
    }
  }

  async #loadMeta(): Promise<ReplicaMeta> {
    const text = await this.#db.get(META_KEY)
    if (text === undefined) {
      const meta = this.#meta(new Array<number>(this.regions).fill(0))
      meta.hlc = HLC_ZERO
      await this.#db.batch(
        [{ type: 'put', key: META_KEY, value: JSON.stringify(meta) }],
        this.#durable,
      )
      return meta
    }
    const meta = JSON.parse(text) as ReplicaMeta
    if (meta.format !== LAYOUT_FORMAT) {
      throw new Error(
        `${this.#name()}: unsupported store format ${meta.format} (expected ${LAYOUT_FORMAT})`,
      )
    }
    if (
      meta.region !== this.region ||
      meta.partition !== this.partition ||
      meta.regions !== this.regions
    ) {
      throw new Error(
        `${this.#name()}: the store belongs to region ${meta.region}, partition ${meta.partition} ` +
          `of a ${meta.regions}-region cluster`,
      )
    }
    return meta
  }

  #notify(): void {
    this.#waiters.advance(this.#sv)
    const sv = Object.freeze(this.sv()) // one copy for every listener
    for (const listener of this.#listeners) {
      try {
        listener(sv)
      } catch (error) {
        // A listener's bug must not undo a committed batch; surface it instead of swallowing it.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }

  #fail(cause: unknown, batch: Mutation[]): void {
    this.#failure = new CausewayError(
      'BACKEND_UNAVAILABLE',
      `${this.#name()} failed to commit a batch and accepts nothing more until reopened`,
      { region: this.region, partition: this.partition, replica: this.replica },
      { cause },
    )
    this.#tx.abandoned()
    for (const m of [...batch, ...this.#queue.splice(0)]) m.settle.reject(this.#failure)
    this.#waiters.closeAll()
    this.#onFailure(this.#failure)
  }

  #name(): string {
    return `replica ${this.replica} of partition ${this.partition} in region ${this.region}`
  }
}

// The frozen log entry of a local write whose commit made its body.
function entryOf(pending: PendingWrite): LogEntry {
  const { write } = pending
  if (write.kind === 'commit') return commitEntry(pending, write.tid, write.writes, write.relay)
  if (write.kind === 'kv') return keyEntry(pending, write.value)
  if (write.kind === 'sibling') return siblingsEntry(pending, pending.siblings!)
  return setOpEntry(pending, pending.setDelta!)
}

// Why `text` is not a stored version (what decodeStoredVersion says).
function whyNotVersion(text: string, regions: number): unknown {
  try {
    decodeStoredVersion(text, regions)
    return 'unknown'
  } catch (error) {
    return error
  }
}
