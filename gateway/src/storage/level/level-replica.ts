/**
 * {@link PartitionReplica} over abstract-level: `classic-level` on disk (a directory per replica)
 * or `memory-level`. See `level-layout.ts` for the keys.
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
  type CausalContext,
  CausewayError,
  DvvSet,
  HybridClock,
  type Hlc,
  checkLogEntry,
  isHlc,
  HLC_ZERO,
} from '@causeway/core'
import type { AbstractBatchOptions, AbstractLevel } from 'abstract-level'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { CoverageWaiters } from '../coverage-waiters.js'
import type {
  AdvanceListener,
  LogEntry,
  PartitionReplica,
  ReplicaRead,
  SiblingRead,
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
  checkContext,
  decodeLoggedSiblings,
  decodeSiblingSet,
  encodeSiblingSet,
  mergeSiblings,
  writeSibling,
} from '../sibling-set.js'
import type { ReplicaSets, SetLogEntry, SetWrite } from '../set-replica.js'
import { checkSetWrite } from '../set-writes.js'
import {
  DEFAULT_OP_RETENTION_MS,
  type OpCheck,
  type OpOutcome,
  type OpRef,
  type ReplicaWrite,
  checkOpWrite,
} from '../op-records.js'
import { LevelOpRecords, type OpStamp } from './level-op-records.js'
import type { StoreOp } from './level-set-kv.js'
import { LevelSets } from './level-sets.js'
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
   * @default logs the error with `console.error`
   */
  onFailure?: (error: CausewayError) => void
  /**
   * How long an operation id is remembered after its write (`writeOnce`), in ms.
   * @default 24 hours
   */
  opRetentionMs?: number
  /**
   * Where keys whose stored value does not decode, and entries whose sibling set does not, are
   * reported (`quarantine.ts`).
   * @default ignores them
   */
  quarantine?: QuarantineSink
}

/** What a commit stores, and what it refused or repaired on the way. */
interface CommitPlan {
  ops?: StoreOp[]
  /** Local sibling writes refused, with why; they gave their idx back. */
  refused: Map<LogEntry, CausewayError>
  /** Keys rebuilt from the log. */
  repaired: Set<string>
}

/** A leader's sibling write, turned into the entry's set when its batch commits. */
interface SiblingWrite {
  context: CausalContext
  value: string | undefined
}

type Mutation =
  | {
      kind: 'write'
      entry: LogEntry
      sibling?: SiblingWrite
      op?: OpStamp
      settle: Settle<LogEntry>
    }
  | { kind: 'receive'; origin: number; entries: readonly LogEntry[]; settle: Settle<number> }
  | { kind: 'apply'; entries: readonly LogEntry[]; settle: Settle<void> }
  // No entry: a commit for the sets' pending compaction (see level-sets.ts).
  | { kind: 'sets'; settle: Settle<void> }
  // No entry: rebuild a key whose stored value does not decode (see quarantine.ts).
  | { kind: 'repair'; key: string; settle: Settle<boolean> }

interface Settle<T> {
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

type State = 'new' | 'opening' | 'open' | 'closing' | 'closed' | 'failed'

// Bounds one group commit, so a burst of writes is acknowledged in several batches rather than
// one unbounded one.
const MAX_MUTATIONS_PER_BATCH = 1024

/** A partition replica stored in LevelDB (`classic-level`) or in memory (`memory-level`). */
export class LevelPartitionReplica implements PartitionReplica {
  readonly region: number
  readonly partition: number
  readonly replica: number
  readonly backend: string
  readonly #regions: number
  readonly #db: StringLevel
  readonly #now: () => number
  // classic-level reads `sync`; abstract-level's option types do not declare it.
  readonly #durable: AbstractBatchOptions<string, string> & { sync: boolean }
  readonly #onFailure: (error: CausewayError) => void
  readonly #quarantine: QuarantineSink
  /** Repairs asked for and not yet committed, by key: concurrent asks share one. */
  readonly #repairs = new Map<string, Promise<boolean>>()

  #state: State = 'new'
  #failure: CausewayError | undefined
  #sv: number[]
  #epoch = 1
  #clock: HybridClock
  /** Last idx handed to a local write; ahead of `sv[region]` while writes are being committed. */
  #counter = 0
  #queue: Mutation[] = []
  #draining: Promise<void> | undefined
  #closing: Promise<void> | undefined
  readonly #waiters = new CoverageWaiters()
  readonly #listeners = new Set<AdvanceListener>()
  /** `#tails[origin]`: the newest committed entries, which followers and shippers read next. */
  #tails: LogTail[] = []
  readonly #sets: LevelSets
  /** The sets of this partition (`level-sets.ts`). */
  readonly sets: ReplicaSets
  readonly #ops: LevelOpRecords

  constructor(options: LevelReplicaOptions) {
    this.region = options.region
    this.partition = options.partition
    this.replica = options.replica
    this.#regions = options.regions
    this.#now = options.now ?? Date.now
    this.#durable = { sync: options.sync ?? true }
    this.#onFailure = options.onFailure ?? ((error) => console.error(error))
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
    this.#sv = new Array<number>(this.#regions).fill(0)
    this.#clock = new HybridClock({ now: this.#now })
    this.#sets = new LevelSets({
      db: this.#db,
      region: this.region,
      regions: this.#regions,
      epoch: () => this.#epoch,
      requestCommit: () => this.#commitSets(),
    })
    this.sets = this.#setsView()
    this.#ops = new LevelOpRecords({
      db: this.#db,
      now: this.#now,
      retentionMs: options.opRetentionMs ?? DEFAULT_OP_RETENTION_MS,
      isOpen: () => this.#state === 'open',
      region: this.region,
      epoch: () => this.#epoch,
    })
  }

  async open(): Promise<void> {
    if (this.#state === 'open') return
    if (this.#state !== 'new' && this.#state !== 'closed') {
      throw new Error(`${this.#name()} cannot open while ${this.#state}`)
    }
    this.#state = 'opening'
    try {
      if (this.#db.status !== 'open') await this.#db.open()
      const meta = await this.#loadMeta()
      this.#sv = [...meta.sv]
      this.#epoch = meta.epoch
      this.#counter = meta.sv[this.region]!
      this.#clock = new HybridClock({ now: this.#now, last: meta.hlc })
      this.#tails = Array.from({ length: this.#regions }, () => new LogTail())
      this.#failure = undefined
      this.#state = 'open'
      void this.#sets.opened() // background: compacts sets a previous run left covered keys in
      this.#ops.start()
    } catch (error) {
      this.#state = 'closed'
      if (this.#db.status === 'open') await this.#db.close()
      throw error
    }
  }

  close(): Promise<void> {
    if (this.#state === 'new' || this.#state === 'closed') return Promise.resolve()
    this.#closing ??= this.#close().finally(() => {
      this.#closing = undefined
    })
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#state = 'closing'
    this.#sets.close()
    // Graceful: what was already accepted is committed (and acknowledged) before the store closes.
    await this.#draining
    await this.#ops.stop()
    this.#waiters.closeAll()
    await this.#db.close()
    this.#state = 'closed'
  }

  sv(): number[] {
    return [...this.#sv]
  }

  epoch(): number {
    return this.#epoch
  }

  write(key: string, value: string | undefined, dt: Hlc): Promise<LogEntry> {
    return this.#write(key, value, dt, undefined)
  }

  writeSibling(
    key: string,
    value: string | undefined,
    dt: Hlc,
    context: CausalContext,
  ): Promise<LogEntry> {
    try {
      checkContext(context, this.#regions)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#write(key, value, dt, { context, value })
  }

  writeOnce(op: OpRef, write: ReplicaWrite, dt: Hlc, check?: OpCheck): Promise<OpOutcome> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    try {
      checkOpWrite(op, write)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#ops.writeOnce(op, (stamp) => this.#writeOf(write, dt, stamp), check)
  }

  /** Prunes operation records whose window has passed (a bounded run of the periodic sweep). */
  pruneOpRecords(): Promise<number> {
    return this.#ops.sweep()
  }

  // One `writeOnce` write, validated as its own method validates it.
  #writeOf(write: ReplicaWrite, dt: Hlc, op: OpStamp): Promise<LogEntry> {
    try {
      if (write.kind === 'sibling') checkContext(write.context, this.#regions)
      if (write.kind === 'set') checkSetWrite(write.write)
    } catch (error) {
      return Promise.reject(error)
    }
    if (write.kind === 'kv')
      return this.#write(write.key, write.value, dt, undefined, undefined, op)
    if (write.kind === 'sibling') {
      const sibling = { context: write.context, value: write.value }
      return this.#write(write.key, write.value, dt, sibling, undefined, op)
    }
    return this.#write(write.name, undefined, dt, undefined, write.write, op)
  }

  #write(
    key: string,
    value: string | undefined,
    dt: Hlc,
    sibling: SiblingWrite | undefined,
    set?: SetWrite,
    op?: OpStamp,
  ): Promise<LogEntry> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    if (typeof key !== 'string' || key.length === 0) {
      // As the Redis backend says it, so callers below HTTP see one code for one mistake.
      return Promise.reject(new CausewayError('INVALID_KEY', 'key must be a non-empty string'))
    }
    if (!isHlc(dt)) {
      return Promise.reject(
        new CausewayError('INVALID_HLC', `invalid dependency time ${String(dt)}`),
      )
    }
    let ts: Hlc
    try {
      ts = this.#clock.update(dt)
    } catch (error) {
      return Promise.reject(error) // an exhausted clock; no idx was taken
    }
    const entry: LogEntry = { origin: this.region, idx: ++this.#counter, key, ts, at: this.#now() }
    if (set !== undefined) {
      // Planned when the batch commits, against the set's clocks at that point.
      entry.setDelta = ''
      this.#sets.stage(entry, set)
      return this.#enqueue<LogEntry>((settle) => ({ kind: 'write', entry, op, settle }))
    }
    if (sibling !== undefined) {
      // The set is made when the batch commits, from the key's set at that point.
      return this.#enqueue<LogEntry>((settle) => ({ kind: 'write', entry, sibling, op, settle }))
    }
    if (value !== undefined) entry.value = value
    return this.#enqueue<LogEntry>((settle) => ({ kind: 'write', entry, op, settle }))
  }

  receive(origin: number, entries: readonly LogEntry[]): Promise<number> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    if (
      !Number.isInteger(origin) ||
      origin < 0 ||
      origin >= this.#regions ||
      origin === this.region
    ) {
      return Promise.reject(
        invalid(`cannot receive entries of origin ${origin} in region ${this.region}`),
      )
    }
    const bad = entries.find((e) => e.origin !== origin)
    if (bad)
      return Promise.reject(
        invalid(`malformed entry ${bad.origin}:${bad.idx} shipped as origin ${origin}`),
      )
    try {
      for (const e of entries) checkLogEntry(e, this.#regions)
      for (const e of entries) if (e.setDelta !== undefined) this.#sets.check(e)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#enqueue<number>((settle) => ({ kind: 'receive', origin, entries, settle }))
  }

  apply(entries: readonly LogEntry[]): Promise<void> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    try {
      for (const e of entries) checkLogEntry(e, this.#regions)
      for (const e of entries) if (e.setDelta !== undefined) this.#sets.check(e)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#enqueue<void>((settle) => ({ kind: 'apply', entries, settle }))
  }

  async read(key: string): Promise<ReplicaRead> {
    const refused = this.#refusal()
    if (refused) throw refused
    // One getMany reads both from one snapshot, so the version and `sv` agree.
    const [meta, stored] = await this.#db.getMany([META_KEY, dataKey(key)])
    if (meta === undefined) throw new Error(`${this.#name()} lost its meta record`)
    const { sv } = JSON.parse(meta) as ReplicaMeta
    if (stored === undefined) return { version: undefined, sv }
    try {
      return { version: decodeStoredVersion(stored, this.#regions), sv }
    } catch (error) {
      throw this.#quarantined(key, 'version', error)
    }
  }

  async readSiblings(key: string): Promise<SiblingRead> {
    const refused = this.#refusal()
    if (refused) throw refused
    const [meta, stored] = await this.#db.getMany([META_KEY, siblingsKey(key)])
    if (meta === undefined) throw new Error(`${this.#name()} lost its meta record`)
    const { sv } = JSON.parse(meta) as ReplicaMeta
    if (stored === undefined) return { siblings: NO_SIBLINGS, sv }
    try {
      return { siblings: decodeSiblingSet(stored, this.#regions), sv }
    } catch (error) {
      throw this.#quarantined(key, 'siblings', error)
    }
  }

  repair(key: string): Promise<boolean> {
    const refused = this.#refusal()
    if (refused) return Promise.reject(refused)
    let repairing = this.#repairs.get(key)
    if (repairing === undefined) {
      repairing = this.#enqueue<boolean>((settle) => ({ kind: 'repair', key, settle })).finally(
        () => this.#repairs.delete(key),
      )
      this.#repairs.set(key, repairing)
    }
    return repairing
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

  async readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]> {
    const refused = this.#refusal()
    if (refused) throw refused
    if (limit <= 0) return []
    const tail = Number.isSafeInteger(afterIdx)
      ? this.#tails[origin]?.read(afterIdx, limit)
      : undefined
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

  waitFor(need: readonly number[], deadline: number): Promise<boolean> {
    if (this.#state !== 'open') return Promise.resolve(false)
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

  // The sets as `ReplicaSets`: reads refused like the replica's own, writes through #write.
  #setsView(): ReplicaSets {
    const open = () => {
      const refused = this.#refusal()
      if (refused) throw refused
    }
    return {
      write: (name, write, dt) => {
        try {
          checkSetWrite(write)
        } catch (error) {
          return Promise.reject(error)
        }
        return this.#write(name, undefined, dt, undefined, write) as Promise<SetLogEntry>
      },
      has: async (name, element) => (open(), this.#sets.has(name, element)),
      size: async (name) => (open(), this.#sets.size(name)),
      stream: async (name, options) => (open(), this.#sets.stream(name, options)),
      scan: (name, options) => {
        open()
        return this.#sets.scan(name, options)
      },
    }
  }

  // A commit with no entry, for pending set compaction; nothing when the replica is not open.
  #commitSets(): Promise<void> {
    if (this.#refusal()) return Promise.resolve()
    return this.#enqueue<void>((settle) => ({ kind: 'sets', settle }))
  }

  // Why an operation is refused now, if it is.
  #refusal(): CausewayError | undefined {
    if (this.#state === 'open') return undefined
    if (this.#state === 'failed') return this.#failure
    if (this.#state === 'closing')
      return new CausewayError('SHUTTING_DOWN', `${this.#name()} is closing`)
    return new CausewayError('BACKEND_UNAVAILABLE', `${this.#name()} is not open`)
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
    while (this.#queue.length > 0 && this.#state !== 'failed') {
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
    const accepted: LogEntry[] = []
    const siblingWrites = new Map<LogEntry, SiblingWrite>()
    const local = new Set<LogEntry>()
    const repairs = new Set<string>()
    const opWrites = new Map<LogEntry, OpStamp>()
    for (const m of mutations) {
      if (m.kind === 'write') {
        // Stamped in call order and committed in queue order, so this always holds.
        if (m.entry.idx !== sv[this.region]! + 1) {
          throw new Error(
            `local write idx ${m.entry.idx} does not follow sv[${this.region}] = ${sv[this.region]}`,
          )
        }
        sv[this.region] = m.entry.idx
        accepted.push(m.entry)
        local.add(m.entry)
        if (m.sibling) siblingWrites.set(m.entry, m.sibling)
        if (m.op) opWrites.set(m.entry, m.op)
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
    }

    // A local write's ts came from this clock: only other replicas' entries move it.
    const compact = mutations.some((m) => m.kind === 'sets')
    let plan: CommitPlan = { refused: new Map(), repaired: new Set() }
    if (accepted.length > 0 || compact || repairs.size > 0) {
      plan = await this.#operations({ accepted, local, siblingWrites, sv, compact, repairs })
      // Operation records go in the batch of their writes (a sibling write's set is made by now);
      // a refused write leaves none.
      for (const [entry, op] of opWrites)
        if (!plan.refused.has(entry)) plan.ops!.push(...this.#ops.recordOps(op, entry))
      await this.#store(plan.ops!)
      this.#sets.committed() // before anything is acknowledged: `has` reads its cache
    }
    const { refused, repaired } = plan
    // Refused writes gave their idx back (see #operations): so do the writes queued after them.
    if (refused.size > 0) {
      for (const m of this.#queue) if (m.kind === 'write') m.entry.idx -= refused.size
      this.#counter -= refused.size
    }

    const advanced = sv.some((idx, d) => idx !== this.#sv[d])
    for (const entry of accepted) if (!refused.has(entry)) this.#tails[entry.origin]!.append(entry)
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
        const error = refused.get(m.entry)
        if (error) m.settle.reject(error)
        else m.settle.resolve(m.entry)
      } else if (m.kind === 'receive')
        m.settle.resolve(sv[m.origin]!) // the shipper's checkpoint
      else if (m.kind === 'repair') m.settle.resolve(repaired.has(m.key))
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
   * new meta. A leader's sibling write gets its entry's set here, from the key's set as the
   * entries before it in the batch left it; a sibling write `writeSibling` refuses is left out
   * and gives its idx back (the local entries after it move down, `sv` too, before anything
   * below reads an idx). A stored value that does not decode is rebuilt from the log first
   * (`quarantine.ts`), as are the keys of `repairs`. The sets plan only when the commit has set
   * entries or was asked for by their compaction (`compact`): a commit of keys alone leaves them
   * be.
   */
  async #operations(batch: {
    accepted: readonly LogEntry[]
    local: ReadonlySet<LogEntry>
    siblingWrites: ReadonlyMap<LogEntry, SiblingWrite>
    sv: number[]
    compact: boolean
    repairs: ReadonlySet<string>
  }): Promise<CommitPlan> {
    const { accepted, local, siblingWrites, sv, compact, repairs } = batch
    const kvKeys = new Set<string>()
    const siblingKeys = new Set<string>()
    for (const entry of accepted) {
      if (entry.setDelta !== undefined) continue
      if (entry.siblings !== undefined || siblingWrites.has(entry)) siblingKeys.add(entry.key)
      else kvKeys.add(entry.key)
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
      if (text === undefined || isStoredVersion(text, this.#regions)) {
        winners.set(key, text === undefined ? undefined : storedVersionOrderKey(text))
        continue
      }
      this.#reportQuarantined(key, 'version', whyNotVersion(text, this.#regions))
      const winner = (await this.#rebuild(key)).version
      winners.set(key, winner && versionOrderKey(winner.ts, winner.dc))
      changed.set(key, winner)
      repaired.add(key)
    }
    for (const key of siblingKeys) {
      const text = stored[i++]
      try {
        sets.set(key, text === undefined ? NO_SIBLINGS : decodeSiblingSet(text, this.#regions))
      } catch (error) {
        this.#reportQuarantined(key, 'siblings', error)
        sets.set(key, (await this.#rebuild(key)).siblings)
        changedSets.add(key)
        repaired.add(key)
      }
    }

    // Sibling sets, in batch order; refused writes drop out and give their idx back.
    const refused = new Map<LogEntry, CausewayError>()
    for (const entry of accepted) {
      if (refused.size > 0 && local.has(entry)) entry.idx -= refused.size
      if (entry.setDelta !== undefined) continue
      const write = siblingWrites.get(entry)
      if (write !== undefined) {
        const sibling =
          write.value === undefined ? { ts: entry.ts } : { ts: entry.ts, value: write.value }
        let next: SiblingSet
        try {
          next = writeSibling(sets.get(entry.key)!, write.context, sibling, this.region)
        } catch (error) {
          if (!(error instanceof CausewayError)) throw error
          refused.set(entry, error)
          continue
        }
        entry.siblings = encodeSiblingSet(next)
        sets.set(entry.key, next)
        changedSets.add(entry.key)
      } else if (entry.siblings !== undefined) {
        let logged: SiblingSet
        try {
          logged = decodeLoggedSiblings(entry, this.#regions)
        } catch (error) {
          // Logged as it came, not merged: see quarantine.ts.
          this.#quarantine.skipped({
            region: this.region,
            partition: this.partition,
            replica: this.replica,
            key: entry.key,
            origin: entry.origin,
            idx: entry.idx,
            reason: error instanceof Error ? error.message : String(error),
          })
          continue
        }
        sets.set(entry.key, mergeSiblings(sets.get(entry.key)!, logged))
        changedSets.add(entry.key)
      }
    }
    sv[this.region]! -= refused.size

    // Set writes plan first among the rest: a local one's delta (its log row) is made here.
    const setWrites = accepted.filter((e) => e.setDelta !== undefined)
    const ops: StoreOp[] =
      setWrites.length > 0 || compact ? await this.#sets.commitOps(setWrites) : []
    for (const entry of accepted) {
      if (refused.has(entry)) continue
      if (entry.setDelta === undefined && entry.siblings === undefined) {
        // `supersedes` on order keys: (ts, dc) strictly after the current winner's.
        const order = versionOrderKey(entry.ts, entry.origin)
        const current = winners.get(entry.key)
        if (current === undefined || order > current) {
          const winner: Version = { ts: entry.ts, dc: entry.origin }
          if (entry.value !== undefined) winner.value = entry.value
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
    ops.push({ type: 'put', key: META_KEY, value: encodeMeta(this.#meta(sv)) })
    return { ops, refused, repaired }
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
        entry = decodeEntry(origin, idx, text)
        checkLogEntry(entry, this.#regions)
      } catch {
        continue // a damaged row: it can give nothing back
      }
      if (entry.setDelta !== undefined) continue
      if (entry.siblings !== undefined) {
        try {
          logged.push(decodeLoggedSiblings(entry, this.#regions))
        } catch {
          // refused when it was written, or damaged since: left out
        }
        continue
      }
      const candidate = versionOrderKey(entry.ts, entry.origin)
      if (candidate > order) {
        order = candidate
        version = { ts: entry.ts, dc: entry.origin }
        if (entry.value !== undefined) version.value = entry.value
      }
    }
    return { siblings: DvvSet.sync(logged), version }
  }

  #meta(sv: number[]): ReplicaMeta {
    return {
      format: LAYOUT_FORMAT,
      region: this.region,
      partition: this.partition,
      regions: this.#regions,
      sv,
      epoch: this.#epoch,
      hlc: this.#clock.peek(),
    }
  }

  async #loadMeta(): Promise<ReplicaMeta> {
    const text = await this.#db.get(META_KEY)
    if (text === undefined) {
      const meta = this.#meta(new Array<number>(this.#regions).fill(0))
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
      meta.regions !== this.#regions
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
    this.#state = 'failed'
    this.#failure = new CausewayError(
      'BACKEND_UNAVAILABLE',
      `${this.#name()} failed to commit a batch and accepts nothing more until reopened`,
      { region: this.region, partition: this.partition, replica: this.replica },
      { cause },
    )
    for (const m of [...batch, ...this.#queue.splice(0)]) m.settle.reject(this.#failure)
    this.#waiters.closeAll()
    this.#onFailure(this.#failure)
  }

  #name(): string {
    return `replica ${this.replica} of partition ${this.partition} in region ${this.region}`
  }
}

function invalid(message: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', message)
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
