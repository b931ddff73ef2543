/**
 * Operation records of a LevelDB store (a replica, a transaction log; the rule is in
 * `../op-records.ts`): where they live in its keyspace, and how a write with an operation id is
 * applied at most once.
 *
 * - `oc/<tenant>/<client>`: the client's mark (`encodeOpMark`).
 * - `or/<tenant>/<client>/<seq:16>`: the record of one of its ids (`encodeOpRecord`); the order
 *   of the keys is the order of the seqs, so the lowest is the first of the client's range.
 *
 * The tenant is URI-encoded (never `/`), a client is `[A-Za-z0-9_-]`. A write's record, its mark
 * and the records it pushes out of the window go in the batch of the write (the store's commit
 * calls {@link LevelOpRecords.recordOps}). This process is the only writer of its store, so the
 * mark and the seqs of a client's records are kept in memory once read (bounded: clients with
 * nothing in flight are dropped first) and changed when a batch is planned; a batch that fails
 * stops the store, and reopening starts from what is stored. Calls for one id run one after the
 * other (a lock per id): a duplicate that arrives while the first is being applied waits, then
 * finds the first's record.
 */
import type { LogEntry } from '../partition-replica.js'
import {
  NO_MARK,
  OP_WINDOW,
  type OpCheck,
  type OpMark,
  type OpOutcome,
  type OpRecord,
  type OpRef,
  checkOpWindow,
  checkRetention,
  decodeOpMark,
  decodeOpRecord,
  encodeOpMark,
  encodeOpRecord,
  isIdle,
  markAt,
  opClientOf,
  opExpired,
  recordOf,
  replayOf,
} from '../op-records.js'
import type { StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'

/** What a write carries into the store's commit so its record is stored with it. */
export interface OpStamp {
  /** The client's state (shared by its writes in flight). */
  client: ClientState
  seq: number
  fingerprint: string
}

/** What the records need of their store. */
export interface LevelOpRecordsHost {
  db: StringLevel
  now: () => number
  retentionMs: number
  /** Records kept per client above its mark. @default OP_WINDOW */
  window?: number
  /** Whether the store is open. */
  isOpen: () => boolean
  region: number
  epoch: () => number
}

/** A client's mark and the seqs it has records of, ascending. */
export interface ClientState {
  prefix: string
  mark: OpMark
  seqs: number[]
}

/** A client's state as loaded, and how many calls use it now. */
interface HeldClient {
  state: Promise<ClientState>
  users: number
}

const MARK_PREFIX = 'oc/'
const RECORD_PREFIX = 'or/'
const SEQ_DIGITS = 16
// Clients kept in memory beyond those with writes in flight.
const CACHED_CLIENTS = 4096

function seqKey(prefix: string, seq: number): string {
  return `${RECORD_PREFIX}${prefix}/${String(seq).padStart(SEQ_DIGITS, '0')}`
}

/** The operation records of one LevelDB store. */
export class LevelOpRecords {
  readonly #host: LevelOpRecordsHost
  readonly #window: number
  readonly #locks = new Map<string, Promise<unknown>>()
  readonly #clients = new Map<string, HeldClient>()

  constructor(host: LevelOpRecordsHost) {
    checkRetention(host.retentionMs)
    this.#window = checkOpWindow(host.window ?? OP_WINDOW)
    this.#host = host
  }

  /**
   * Applies a write under `op` at most once: the record's replay when `op` is remembered,
   * `OP_EXPIRED` when it is at or below its client's mark, else `check`, then `apply` (which
   * stores the record through {@link recordOps}).
   */
  writeOnce(
    op: OpRef,
    apply: (stamp: OpStamp) => Promise<LogEntry>,
    check: OpCheck | undefined,
  ): Promise<OpOutcome> {
    const { tenant, client, seq } = opClientOf(op)
    const prefix = `${encodeURIComponent(tenant)}/${client}`
    return this.#locked(seqKey(prefix, seq), async (): Promise<OpOutcome> => {
      const held = this.#acquire(prefix)
      try {
        const state = await held.state
        const now = this.#host.now()
        const mark = markAt(state.mark, now, this.#host.retentionMs)
        if (seq > mark.low) {
          const text = await this.#host.db.get(seqKey(prefix, seq))
          const found = text === undefined ? undefined : decodeOpRecord(text)
          if (found !== undefined) return replayOf(op, found)
        }
        if (seq <= mark.low) throw opExpired(op, mark.low)
        await check?.()
        const entry = await apply({ client: state, seq, fingerprint: op.fingerprint })
        return { entry, record: this.#recordOf(entry, op.fingerprint) }
      } finally {
        held.users--
        this.#evict()
      }
    })
  }

  /**
   * The store operations that keep the record of `entry`, written under `stamp`, its client's
   * mark, and the removal of what falls out of the window (or of everything, for a client that
   * was idle).
   */
  recordOps(stamp: OpStamp, entry: LogEntry): StoreOp[] {
    const state = stamp.client
    const ops: StoreOp[] = []
    const now = this.#host.now()
    if (isIdle(state.mark, now, this.#host.retentionMs)) {
      for (const seq of state.seqs) ops.push({ type: 'del', key: seqKey(state.prefix, seq) })
      state.seqs = []
      state.mark = markAt(state.mark, now, this.#host.retentionMs)
    }
    const record = this.#recordOf(entry, stamp.fingerprint)
    ops.push({ type: 'put', key: seqKey(state.prefix, stamp.seq), value: encodeOpRecord(record) })
    const at = sortedIndex(state.seqs, stamp.seq)
    if (state.seqs[at] !== stamp.seq) state.seqs.splice(at, 0, stamp.seq)
    let { low } = state.mark
    while (state.seqs.length > this.#window) {
      const dropped = state.seqs.shift()!
      low = Math.max(low, dropped)
      ops.push({ type: 'del', key: seqKey(state.prefix, dropped) })
    }
    state.mark = { low, high: Math.max(state.mark.high, stamp.seq), seen: now }
    ops.push({ type: 'put', key: MARK_PREFIX + state.prefix, value: encodeOpMark(state.mark) })
    return ops
  }

  /** Starts (nothing runs in the background: idle clients are compacted at their next write). */
  start(): void {
    this.#clients.clear()
  }

  /** Waits for the calls in flight. */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.#locks.values()])
    this.#clients.clear()
  }

  /** How many records the store holds of the client of `op` (for tests). */
  async recordCount(op: Pick<OpRef, 'id' | 'tenant'>): Promise<number> {
    const { tenant, client } = opClientOf({ ...op, namespace: '', fingerprint: 'x' })
    const prefix = `${RECORD_PREFIX}${encodeURIComponent(tenant)}/${client}/`
    const keys = await this.#host.db.keys({ gte: prefix, lt: prefix + '\uffff' }).all()
    return keys.length
  }

  // The state of a client, read once and shared; held (not evicted) while `users` > 0.
  #acquire(prefix: string): HeldClient {
    let held = this.#clients.get(prefix)
    if (held === undefined) {
      held = { state: this.#load(prefix), users: 0 }
      const loading = held
      held.state.catch(() => {
        if (this.#clients.get(prefix) === loading) this.#clients.delete(prefix)
      })
    } else this.#clients.delete(prefix) // most recently used last
    this.#clients.set(prefix, held)
    held.users++
    return held
  }

  async #load(prefix: string): Promise<ClientState> {
    const { db } = this.#host
    const text = await db.get(MARK_PREFIX + prefix)
    const mark = (text === undefined ? undefined : decodeOpMark(text)) ?? NO_MARK
    const from = `${RECORD_PREFIX}${prefix}/`
    const keys = await db.keys({ gte: from, lt: from + '\uffff' }).all()
    const seqs = keys.map((k) => Number(k.slice(from.length))).sort((a, b) => a - b)
    return { prefix, mark, seqs }
  }

  // Drops the least recently used clients nobody holds beyond the cache's size.
  #evict(): void {
    if (this.#clients.size <= CACHED_CLIENTS) return
    for (const [prefix, held] of this.#clients) {
      if (this.#clients.size <= CACHED_CLIENTS) return
      if (held.users === 0) this.#clients.delete(prefix)
    }
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

// Where `seq` goes in the ascending `seqs`.
function sortedIndex(seqs: readonly number[], seq: number): number {
  let lo = 0
  let hi = seqs.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (seqs[mid]! < seq) lo = mid + 1
    else hi = mid
  }
  return lo
}
