/**
 * Operation records of a LevelDB replica (`../op-records.ts`): where they live in its keyspace,
 * how a write with an operation id is applied at most once, and how records are pruned.
 *
 * - `o/<namespace>:<id>`: the record (`encodeOpRecord`). A namespace never holds `:`, so the key
 *   names one (namespace, id) pair only.
 * - `t/<at:15>/<namespace>:<id>`: an index by the write's wall-clock ms, so pruning walks only the
 *   records whose window has passed.
 *
 * The record and its index row are put in the batch of the write they stand for (the replica's
 * commit calls {@link LevelOpRecords.recordOps}). Calls for one (namespace, id) run one after the
 * other (a lock per key in this process, the only writer of its store): a duplicate that arrives
 * while the first is being applied waits, then finds the first's record. A record past the window
 * counts as absent at once, and a sweep (every quarter window, at most a minute apart; bounded per
 * run) deletes it under the same lock, so a sweep never deletes a record written meanwhile.
 */
import type { LogEntry } from '../partition-replica.js'
import {
  type OpCheck,
  type OpOutcome,
  type OpRecord,
  type OpRef,
  checkRetention,
  decodeOpRecord,
  encodeOpRecord,
  recordOf,
  replayOf,
} from '../op-records.js'
import type { StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'

/** What a write carries into the replica's commit so its record is stored with it. */
export interface OpStamp {
  /** The record's store key. */
  key: string
  fingerprint: string
}

/** What the records need of their replica. */
export interface LevelOpRecordsHost {
  db: StringLevel
  now: () => number
  retentionMs: number
  /** Whether the replica is open (sweeps stop otherwise). */
  isOpen: () => boolean
  region: number
  epoch: () => number
}

const RECORD_PREFIX = 'o/'
const TIME_PREFIX = 't/'
const AT_DIGITS = 15
// Records deleted per sweep run; a full run schedules the next one at once.
const SWEEP_LIMIT = 1000

/** The store key of the record of `op`. */
export function opRecordKey(op: Pick<OpRef, 'namespace' | 'id'>): string {
  return `${RECORD_PREFIX}${op.namespace}:${op.id}`
}

function timeKey(at: number, recordKey: string): string {
  const ms = String(Math.max(0, Math.floor(at))).padStart(AT_DIGITS, '0')
  return `${TIME_PREFIX}${ms}/${recordKey.slice(RECORD_PREFIX.length)}`
}

function recordKeyOfTimeKey(key: string): string {
  return RECORD_PREFIX + key.slice(TIME_PREFIX.length + AT_DIGITS + 1)
}

/** The operation records of one LevelDB replica. */
export class LevelOpRecords {
  readonly #host: LevelOpRecordsHost
  readonly #locks = new Map<string, Promise<unknown>>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #sweeping: Promise<void> | undefined

  constructor(host: LevelOpRecordsHost) {
    checkRetention(host.retentionMs)
    this.#host = host
  }

  /**
   * Applies a write under `op` at most once: the record's replay when `op` was applied within the
   * window, else `check`, then `apply` (which stores the record through {@link recordOps}).
   */
  writeOnce(
    op: OpRef,
    apply: (stamp: OpStamp) => Promise<LogEntry>,
    check: OpCheck | undefined,
  ): Promise<OpOutcome> {
    const key = opRecordKey(op)
    return this.#locked(key, async (): Promise<OpOutcome> => {
      const found = await this.#read(key)
      if (found !== undefined) return replayOf(op, found)
      await check?.()
      const entry = await apply({ key, fingerprint: op.fingerprint })
      return { entry, record: this.#recordOf(entry, op.fingerprint) }
    })
  }

  /** The store operations that keep the record of `entry`, written under `stamp`. */
  recordOps(stamp: OpStamp, entry: LogEntry): StoreOp[] {
    const record = this.#recordOf(entry, stamp.fingerprint)
    return [
      { type: 'put', key: stamp.key, value: encodeOpRecord(record) },
      { type: 'put', key: timeKey(record.at, stamp.key), value: '' },
    ]
  }

  /** Starts the periodic sweep. */
  start(): void {
    this.#schedule(this.#period())
  }

  /** Stops sweeping, once a sweep in progress has finished. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#sweeping
    await Promise.allSettled([...this.#locks.values()])
  }

  /**
   * Deletes up to {@link SWEEP_LIMIT} records whose window has passed; resolves to how many
   * index rows it looked at (for tests).
   */
  sweep(): Promise<number> {
    const run = this.#sweep()
    this.#sweeping = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  async #sweep(): Promise<number> {
    const { db } = this.#host
    if (!this.#host.isOpen()) return 0
    const olderThan = this.#host.now() - this.#host.retentionMs
    const rows = await db
      .keys({ gte: TIME_PREFIX, lt: timeKey(olderThan + 1, RECORD_PREFIX), limit: SWEEP_LIMIT })
      .all()
    for (const row of rows) {
      if (!this.#host.isOpen()) break
      const key = recordKeyOfTimeKey(row)
      await this.#locked(key, async () => {
        if (!this.#host.isOpen()) return
        const text = await db.get(key)
        const record = text === undefined ? undefined : decodeOpRecord(text)
        const ops: StoreOp[] = [{ type: 'del', key: row }]
        // A record written again since (a new window) keeps its own, newer index row.
        if (record === undefined || record.at <= olderThan) ops.push({ type: 'del', key })
        // Not synced: a prune lost in a crash is redone by the next sweep.
        await db.batch(ops)
      })
    }
    return rows.length
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      if (!this.#host.isOpen()) return
      void this.sweep().then(
        (looked) => {
          if (this.#host.isOpen()) this.#schedule(looked >= SWEEP_LIMIT ? 0 : this.#period())
        },
        () => {
          if (this.#host.isOpen()) this.#schedule(this.#period())
        },
      )
    }, ms)
    this.#timer.unref()
  }

  #period(): number {
    return Math.max(10, Math.min(this.#host.retentionMs / 4, 60_000))
  }

  async #read(key: string): Promise<OpRecord | undefined> {
    const text = await this.#host.db.get(key)
    const record = text === undefined ? undefined : decodeOpRecord(text)
    if (record === undefined) return undefined
    // Past the window: forgotten, whether or not a sweep has deleted it yet.
    return this.#host.now() - record.at < this.#host.retentionMs ? record : undefined
  }

  #recordOf(entry: LogEntry, fingerprint: string): OpRecord {
    return recordOf(entry, fingerprint, this.#host.epoch(), this.#host.region)
  }

  // Runs `task` after every earlier task of `key` has settled.
  #locked<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(key) ?? Promise.resolve()
    const run = previous.then(task, task)
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    this.#locks.set(key, tail)
    void tail.then(() => {
      if (this.#locks.get(key) === tail) this.#locks.delete(key)
    })
    return run
  }
}
