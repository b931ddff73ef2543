/**
 * A region's transaction log in a LevelDB of its own (`classic-level` on disk, `memory-level` in
 * tests): {@link AbstractTxLog} for the embedded cluster.
 *
 * - `m`: meta (JSON): the last tid appended, the clock, each other region's checkpoint.
 * - `w`: the applied watermark (the highest tid whose outcome is recorded).
 * - `r/<tid:16>`: a record: a JSON header line (`ts`, `at`, snapshot, reads, foreign), then its
 *   writes (`encodeCommitWrites`), so a value is never escaped twice.
 * - `q/<tid:16>`: an outcome: `[outcome, ts, parts]`.
 * - `oc/...`, `or/...`: operation records of commits with an id (`level-op-records.ts`).
 *
 * Appends are group-committed like a replica's writes: each is stamped (tid, ts) when called, and
 * everything stamped in one turn of the event loop is written as one batch with `{ sync }`, then
 * acknowledged. Outcomes are written without `sync`: they are decided again, the same way, after a
 * crash that lost them.
 */
import {
  CausewayError,
  HLC_ZERO,
  type Hlc,
  HybridClock,
  type LogEntry,
  type TxRead,
  type TxWrite,
  decodeCommitWrites,
  encodeCommitWrites,
  putEntry,
} from '@causeway/core'
import type { AbstractBatchOptions } from 'abstract-level'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { DEFAULT_OP_RETENTION_MS, type OpRef } from '../op-records.js'
import {
  AbstractTxLog,
  type ForeignTx,
  type TxAppend,
  type TxAppended,
  type TxOutcomeRecord,
  type TxRecord,
} from '../tx-log.js'
import { LevelOpRecords, type OpStamp } from './level-op-records.js'
import type { StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'

/** Options of a {@link LevelTxLog}. */
export interface LevelTxLogOptions {
  region: number
  regions: number
  /** Directory of a `classic-level` store; omit it for memory. @default undefined (memory) */
  location?: string
  /** An existing store to use (tests reopen a memory store this way); the log opens and closes it. */
  db?: StringLevel
  /** `fsync` every append batch before acknowledging it. @default true */
  sync?: boolean
  /** The wall clock of the log's HLC, in ms. @default Date.now */
  now?: () => number
  /**
   * How long a client of commit operation ids may be idle before its records are dropped (its
   * mark stays: see `op-records.ts`), in ms. @default 24 hours
   */
  opRetentionMs?: number
  /** How many operation records are kept per client above its mark. @default OP_WINDOW (1024) */
  opWindow?: number
  /** Told once when a batch fails to be written (the log then refuses everything). */
  onFailure?: (error: CausewayError) => void
}

const FORMAT = 1
const META = 'm'
const APPLIED = 'w'
const TID_DIGITS = 16
// Records and outcomes kept in memory after they are written (the applier and shippers read them next).
const RECENT = 4096

interface Meta {
  format: number
  region: number
  regions: number
  last: number
  hlc: Hlc
  foreign: number[]
}

interface Pending {
  record: TxRecord
  op?: OpStamp
  resolve: (entry: LogEntry) => void
  reject: (error: unknown) => void
}

function tidKey(prefix: string, tid: number): string {
  return `${prefix}${String(tid).padStart(TID_DIGITS, '0')}`
}

/** A region's transaction log in LevelDB. */
export class LevelTxLog extends AbstractTxLog {
  readonly backend: string
  readonly #db: StringLevel
  readonly #durable: AbstractBatchOptions<string, string> & { sync: boolean }
  readonly #now: () => number
  readonly #ops: LevelOpRecords
  readonly #onFailure: (error: CausewayError) => void
  #clock: HybridClock
  /** Last tid stamped (ahead of {@link lastTid} while a batch is being written). */
  #stamped = 0
  #last = 0
  #applied = 0
  #foreign: number[]
  /** Checkpoints including what is queued. */
  #foreignStamped: number[]
  #queue: Pending[] = []
  #draining: Promise<void> | undefined
  #failure: CausewayError | undefined
  readonly #records = new Map<number, TxRecord>()
  readonly #outcomes = new Map<number, TxOutcomeRecord>()
  readonly #appendListeners = new Set<(last: number) => void>()
  readonly #outcomeListeners = new Set<(outcomes: readonly TxOutcomeRecord[]) => void>()
  #outcomeWrites: Promise<void> = Promise.resolve()

  constructor(options: LevelTxLogOptions) {
    super(options)
    this.#now = options.now ?? Date.now
    this.#durable = { sync: options.sync ?? true }
    this.#onFailure = options.onFailure ?? (() => {})
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
    this.#clock = new HybridClock({ now: this.#now })
    this.#foreign = new Array<number>(this.regions).fill(0)
    this.#foreignStamped = [...this.#foreign]
    this.#ops = new LevelOpRecords({
      db: this.#db,
      now: this.#now,
      retentionMs: options.opRetentionMs ?? DEFAULT_OP_RETENTION_MS,
      ...(options.opWindow === undefined ? {} : { window: options.opWindow }),
      isOpen: () => this.available && this.#failure === undefined,
      region: this.region,
      epoch: () => 1,
    })
  }

  protected async _open(): Promise<void> {
    if (this.#db.status !== 'open') await this.#db.open()
    const [metaText, appliedText] = await this.#db.getMany([META, APPLIED])
    let meta: Meta
    if (metaText === undefined) {
      meta = {
        format: FORMAT,
        region: this.region,
        regions: this.regions,
        last: 0,
        hlc: HLC_ZERO,
        foreign: new Array<number>(this.regions).fill(0),
      }
      await this.#db.put(META, JSON.stringify(meta), this.#durable)
    } else {
      meta = JSON.parse(metaText) as Meta
      if (meta.format !== FORMAT || meta.region !== this.region || meta.regions !== this.regions) {
        await this.#db.close()
        throw new Error(
          `the transaction log store is of region ${meta.region} of ${meta.regions} (format ${meta.format})`,
        )
      }
    }
    this.#last = this.#stamped = meta.last
    this.#applied = appliedText === undefined ? 0 : Number(appliedText)
    this.#clock = new HybridClock({ now: this.#now, last: meta.hlc })
    this.#foreign = [...meta.foreign]
    this.#foreignStamped = [...meta.foreign]
    this.#failure = undefined
    this.#records.clear()
    this.#outcomes.clear()
    this.#ops.start()
  }

  protected async _close(): Promise<void> {
    await this.#draining
    await this.#outcomeWrites
    await this.#ops.stop()
    await this.#db.close()
  }

  lastTid(): number {
    return this.#last
  }

  appliedTid(): number {
    return this.#applied
  }

  onAppend(listener: (last: number) => void): () => void {
    this.#appendListeners.add(listener)
    return () => this.#appendListeners.delete(listener)
  }

  onOutcomes(listener: (outcomes: readonly TxOutcomeRecord[]) => void): () => void {
    this.#outcomeListeners.add(listener)
    return () => this.#outcomeListeners.delete(listener)
  }

  protected async _append(tx: TxAppend, op: OpRef | undefined): Promise<TxAppended> {
    if (op === undefined) {
      const entry = await this.#stamp(tx, undefined)
      return { tid: entry.idx, ts: entry.ts }
    }
    const outcome = await this.#ops.writeOnce(op, (stamp) => this.#stamp(tx, stamp), undefined)
    if ('replayed' in outcome) return { replayed: outcome.replayed }
    return { tid: outcome.entry.idx, ts: outcome.entry.ts }
  }

  protected _appendForeign(unit: ForeignTx): Promise<number> {
    if (this.#failure) return Promise.reject(this.#failure)
    if (unit.tid <= this.#foreignStamped[unit.region]!)
      return this.#draining
        ? this.#draining.then(() => this.#foreign[unit.region]!)
        : Promise.resolve(this.#foreign[unit.region]!)
    this.#foreignStamped[unit.region] = unit.tid
    const { region, tid, parts } = unit
    const record: TxRecord = {
      tid: ++this.#stamped,
      ts: unit.ts,
      at: this.#now(),
      snapshot: 0,
      reads: [],
      writes: unit.writes,
      foreign: { region, tid, parts },
    }
    this.#clock.observe(unit.ts)
    return this.#enqueue(record, undefined).then(() => this.#foreign[unit.region]!)
  }

  protected async _foreignCheckpoint(region: number): Promise<number> {
    return this.#foreign[region]!
  }

  protected async _read(afterTid: number, limit: number): Promise<TxRecord[]> {
    const out: TxRecord[] = []
    let tid = afterTid + 1
    while (out.length < limit && tid <= this.#last) {
      const known = this.#records.get(tid)
      if (known === undefined) break
      out.push(known)
      tid++
    }
    if (out.length === limit || tid > this.#last) return out
    const rows = await this.#db
      .iterator({
        gt: tidKey('r/', tid - 1),
        lte: tidKey('r/', this.#last),
        limit: limit - out.length,
      })
      .all()
    for (const [key, text] of rows) out.push(decodeRecord(Number(key.slice(2)), text))
    return out
  }

  protected async _recordOutcomes(outcomes: readonly TxOutcomeRecord[]): Promise<void> {
    const last = outcomes.at(-1)!.tid
    const ops: StoreOp[] = outcomes.map((o) => ({
      type: 'put',
      key: tidKey('q/', o.tid),
      value: JSON.stringify([o.outcome, o.ts, o.parts]),
    }))
    ops.push({ type: 'put', key: APPLIED, value: String(last) })
    // One after the other, so the watermark stored never goes back.
    const write = this.#outcomeWrites.then(() => this.#db.batch(ops))
    this.#outcomeWrites = write.catch(() => {})
    await write
    for (const o of outcomes) this.#remember(this.#outcomes, o.tid, o)
    this.#applied = Math.max(this.#applied, last)
    for (const listener of this.#outcomeListeners) listener(outcomes)
  }

  protected async _readOutcomes(afterTid: number, limit: number): Promise<TxOutcomeRecord[]> {
    const out: TxOutcomeRecord[] = []
    let tid = afterTid + 1
    while (out.length < limit && tid <= this.#applied) {
      const known = this.#outcomes.get(tid)
      if (known === undefined) break
      out.push(known)
      tid++
    }
    if (out.length === limit || tid > this.#applied) return out
    const rows = await this.#db
      .iterator({
        gt: tidKey('q/', tid - 1),
        lte: tidKey('q/', this.#applied),
        limit: limit - out.length,
      })
      .all()
    for (const [key, text] of rows) {
      const [outcome, ts, parts] = JSON.parse(text) as [
        TxOutcomeRecord['outcome'],
        Hlc,
        [number, number][],
      ]
      out.push({ tid: Number(key.slice(2)), outcome, ts, parts })
    }
    return out
  }

  // Stamps a commit's tid and ts now; resolves once its batch is durable, to an entry-shaped
  // stand-in the operation records take (idx = tid).
  #stamp(tx: TxAppend, op: OpStamp | undefined): Promise<LogEntry> {
    if (this.#failure) return Promise.reject(this.#failure)
    try {
      this.checkOpen()
    } catch (error) {
      return Promise.reject(error)
    }
    const record: TxRecord = {
      tid: ++this.#stamped,
      ts: this.#clock.update(tx.dt),
      at: this.#now(),
      snapshot: tx.snapshot,
      reads: tx.reads,
      writes: tx.writes,
    }
    return this.#enqueue(record, op)
  }

  #enqueue(record: TxRecord, op: OpStamp | undefined): Promise<LogEntry> {
    return new Promise<LogEntry>((resolve, reject) => {
      this.#queue.push({ record, ...(op ? { op } : {}), resolve, reject })
      this.#draining ??= this.#drain()
    })
  }

  async #drain(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve))
    while (this.#queue.length > 0 && this.#failure === undefined) {
      const batch = this.#queue.splice(0)
      try {
        await this.#write(batch)
      } catch (error) {
        this.#failure = new CausewayError(
          'BACKEND_UNAVAILABLE',
          `the transaction log of region ${this.region} failed to write and accepts nothing more until reopened`,
          { region: this.region },
          { cause: error },
        )
        for (const p of [...batch, ...this.#queue.splice(0)]) p.reject(this.#failure)
        this.#onFailure(this.#failure)
      }
    }
    this.#draining = undefined
  }

  async #write(batch: Pending[]): Promise<void> {
    const ops: StoreOp[] = []
    const foreign = [...this.#foreign]
    const entries = batch.map((p) => {
      const { record } = p
      ops.push({ type: 'put', key: tidKey('r/', record.tid), value: encodeRecord(record) })
      if (record.foreign) foreign[record.foreign.region] = record.foreign.tid
      const entry = putEntry(
        { origin: this.region, idx: record.tid, key: 'tx', ts: record.ts, at: record.at },
        '1',
      )
      if (p.op) ops.push(...this.#ops.recordOps(p.op, entry))
      return entry
    })
    const last = batch.at(-1)!.record.tid
    const meta: Meta = {
      format: FORMAT,
      region: this.region,
      regions: this.regions,
      last,
      hlc: this.#clock.peek(),
      foreign,
    }
    ops.push({ type: 'put', key: META, value: JSON.stringify(meta) })
    await this.#db.batch(ops, this.#durable)
    this.#last = last
    this.#foreign = foreign
    for (const p of batch) this.#remember(this.#records, p.record.tid, p.record)
    batch.forEach((p, i) => p.resolve(entries[i]!))
    for (const listener of this.#appendListeners) listener(last)
  }

  #remember<T>(map: Map<number, T>, tid: number, value: T): void {
    map.set(tid, value)
    if (map.size > RECENT) map.delete(map.keys().next().value!)
  }
}

interface RecordHead {
  ts: Hlc
  at: number
  s: number
  r: [string, number][]
  f?: [number, number, [number, number][]]
}

function encodeRecord(record: TxRecord): string {
  const head: RecordHead = {
    ts: record.ts,
    at: record.at,
    s: record.snapshot,
    r: record.reads as never,
  }
  if (record.foreign) {
    const { region, tid, parts } = record.foreign
    head.f = [region, tid, parts as [number, number][]]
  }
  return JSON.stringify(head) + '\n' + encodeCommitWrites(record.writes)
}

function decodeRecord(tid: number, text: string): TxRecord {
  const newline = text.indexOf('\n')
  const head = JSON.parse(text.slice(0, newline)) as RecordHead
  const body = text.slice(newline + 1)
  const writes: readonly TxWrite[] = body === '[]' ? [] : decodeCommitWrites(body)
  const record: TxRecord = {
    tid,
    ts: head.ts,
    at: head.at,
    snapshot: head.s,
    reads: head.r as TxRead[],
    writes,
  }
  if (head.f) record.foreign = { region: head.f[0], tid: head.f[1], parts: head.f[2] }
  return record
}
