/**
 * A region's transaction log on a replicated Redis ({@link AbstractTxLog}): a stream whose ids are
 * the tids, appended by a Lua script that stamps the tid and the ts together (`tx-log-scripts.ts`
 * has the layout), made durable with `WAIT` at the configured durability (`'majority'`: a majority
 * of the log's servers, its replicas being Redis replicas of the first). Every gateway process of
 * the region appends to it; the applier (one at a time, by lease) reads it and records the
 * outcomes in a second stream, which every process tails (`XREAD BLOCK`) to learn the outcomes of
 * its commits and the watermark.
 *
 * `lastTid()` counts only appends known to be durable (a `WAIT` at the durability succeeded after
 * they reached the leader): the applier must not apply a record the log could still lose, since a
 * promoted replica would give its tid to another transaction while the partitions kept the first.
 * The process that tails the appends (the applier's) `WAIT`s for what it sees too, so another
 * process's appends become applicable without waiting for that process.
 *
 * Connections: one for appends and outcomes, one for reads, one blocked on the outcomes, one (for
 * the applier only) blocked on the appends, one for `WAIT`. None queues commands while the server
 * is away: calls fail at once with `BACKEND_UNAVAILABLE` and the connections reconnect by
 * themselves.
 */
import {
  CausewayError,
  type Hlc,
  type TxRead,
  type TxWrite,
  decodeCommitWrites,
  encodeCommitWrites,
} from '@causeway/core'
import { Redis } from 'ioredis'
import {
  DEFAULT_OP_RETENTION_MS,
  OP_WINDOW,
  type OpRef,
  checkOpWindow,
  decodeOpRecord,
  opClientOf,
  opExpired,
  replayOf,
} from '../op-records.js'
import {
  AbstractTxLog,
  type ForeignTx,
  type TxAppend,
  type TxAppended,
  type TxOutcomeRecord,
  type TxRecord,
} from '../tx-log.js'
import { backendError } from './backend-error.js'
import { encodeKeyPart } from './key-layout.js'
import {
  APPEND_FOREIGN_SCRIPT,
  APPEND_OP_SCRIPT,
  APPEND_SCRIPT,
  RECORD_SCRIPT,
  TX_EXPIRED,
  TX_REPLAY,
} from './tx-log-scripts.js'

/** Options of a {@link RedisTxLog}. */
export interface RedisTxLogOptions {
  /** The log's server (its leader): `redis://host:port[/db]`. */
  url: string
  /** The cluster's namespace (part of every key). */
  namespace: string
  region: number
  regions: number
  /**
   * How many Redis replicas the log's server has: `'majority'` waits for a majority of the
   * servers (replicas + 1) to have an append before it is acknowledged.
   * @default 0
   */
  replicas?: number
  /**
   * `'majority'`: an append returns once a majority of the log's servers have it (`WAIT`);
   * `'leader'`: once the leader has it.
   * @default 'majority'
   */
  durability?: 'leader' | 'majority'
  /** How long a `WAIT` may take before the append fails (it may still be applied), ms. @default 5000 */
  waitTimeoutMs?: number
  /**
   * How long a client of commit operation ids may be idle before its records are dropped (its
   * mark stays: `op-records.ts`), ms. @default 24 hours
   */
  opRetentionMs?: number
  /** How many operation records are kept per client above its mark. @default OP_WINDOW (1024) */
  opWindow?: number
  /** @default 5000 */
  commandTimeoutMs?: number
  /** @default 2000 */
  connectTimeoutMs?: number
  /** The HLC's physical clock, ms. @default the server's `TIME` */
  now?: () => number
}

interface Connections {
  writer: Redis
  reader: Redis
  outcomes: Redis
  appends?: Redis
  waiter?: Redis
}

const RECENT = 4096
// How long a blocked XREAD waits before it looks again (and notices a close), ms.
const BLOCK_MS = 1000
const noop = () => {}

/** The keys of a region's transaction log. */
export function txLogKeys(namespace: string, region: number) {
  const prefix = `cw:{${encodeKeyPart(namespace)}:tx:r${region}}:`
  return {
    prefix,
    meta: prefix + 'meta',
    log: prefix + 'log',
    out: prefix + 'out',
    snap: prefix + 'snap',
    lease: prefix + 'lease',
    wait: prefix + 'wait',
    /** An op-id client's mark, records and seqs (`op-scripts.ts`). */
    opClient: (tenant: string, client: string): [string, string, string] => {
      const id = `${encodeKeyPart(tenant)}:${encodeKeyPart(client)}`
      return [`${prefix}om:${id}`, `${prefix}or:${id}`, `${prefix}oz:${id}`]
    },
  }
}

/** See the module comment. */
export class RedisTxLog extends AbstractTxLog {
  readonly backend: string
  readonly keys: ReturnType<typeof txLogKeys>
  readonly #options: Required<Omit<RedisTxLogOptions, 'now'>>
  readonly #now: (() => number) | undefined
  #connections: Connections | undefined
  /** The highest tid known durable (see the module comment). */
  #last = 0
  /** The highest tid known to be in the leader's stream. */
  #seen = 0
  #applied = 0
  readonly #records = new Map<number, TxRecord>()
  readonly #outcomes = new Map<number, TxOutcomeRecord>()
  readonly #appendListeners = new Set<(last: number) => void>()
  readonly #outcomeListeners = new Set<(outcomes: readonly TxOutcomeRecord[]) => void>()
  #tails: Promise<void>[] = []
  #closing = false
  /** Appends waiting for the next `WAIT`. */
  #waitQueue: { resolve: () => void; reject: (e: unknown) => void }[] = []
  #waiting = false

  constructor(options: RedisTxLogOptions) {
    super(options)
    this.#options = {
      replicas: 0,
      durability: 'majority',
      waitTimeoutMs: 5000,
      opRetentionMs: DEFAULT_OP_RETENTION_MS,
      opWindow: OP_WINDOW,
      commandTimeoutMs: 5000,
      connectTimeoutMs: 2000,
      ...options,
    }
    checkOpWindow(this.#options.opWindow)
    this.#now = options.now
    const url = new URL(options.url)
    this.backend = `${url.protocol}//${url.host}${url.pathname.length > 1 ? url.pathname : ''}`
    this.keys = txLogKeys(options.namespace, options.region)
  }

  /** Replicas a `WAIT` needs: a majority of the servers, less the leader. */
  get #needed(): number {
    if (this.#options.durability === 'leader') return 0
    return Math.floor((this.#options.replicas + 1) / 2)
  }

  protected async _open(): Promise<void> {
    this.#closing = false
    const c: Connections = {
      writer: this.#connect('writer'),
      reader: this.#connect('reader'),
      outcomes: this.#connect('outcomes'),
    }
    try {
      await Promise.all([c.writer.connect(), c.reader.connect(), c.outcomes.connect()])
      const [last, applied] = await c.reader.hmget(this.keys.meta, 'last', 'applied')
      this.#applied = Number(applied ?? 0)
      // What has outcomes was durable before it was applied; the rest awaits a WAIT.
      this.#last = this.#applied
      this.#seen = Math.max(this.#applied, Number(last ?? 0))
    } catch (error) {
      for (const r of [c.writer, c.reader, c.outcomes]) r.disconnect()
      throw backendError(error, this.backend, 'open')
    }
    this.#connections = c
    this.#records.clear()
    this.#outcomes.clear()
    this.#tails = [this.#tailOutcomes(c.outcomes)]
  }

  protected async _close(): Promise<void> {
    this.#closing = true
    const c = this.#connections
    this.#connections = undefined
    if (!c) return
    for (const r of [c.outcomes, c.appends, c.waiter]) r?.disconnect()
    await Promise.allSettled(this.#tails)
    await Promise.allSettled([c.writer.quit(), c.reader.quit()])
    c.writer.disconnect()
    c.reader.disconnect()
  }

  lastTid(): number {
    return this.#last
  }

  appliedTid(): number {
    return this.#applied
  }

  override async refresh(): Promise<number> {
    const { reader } = this.#live()
    const [last, applied] = await this.#run(reader, 'refresh', (r) =>
      r.hmget(this.keys.meta, 'last', 'applied'),
    )
    this.#seen = Math.max(this.#seen, Number(last ?? 0))
    const watermark = Number(applied ?? 0)
    if (watermark > this.#applied) {
      // The tail will bring the outcomes themselves; the watermark moves now.
      this.#applied = watermark
      this.#advance(watermark)
    }
    if (this.#seen > this.#last) await this.#durable()
    return this.#last
  }

  onAppend(listener: (last: number) => void): () => void {
    this.#appendListeners.add(listener)
    const c = this.#connections
    if (c && c.appends === undefined) {
      c.appends = this.#connect('appends')
      this.#tails.push(
        c.appends
          .connect()
          .then(() => this.#tailAppends(c.appends!))
          .catch(noop),
      )
    }
    return () => this.#appendListeners.delete(listener)
  }

  onOutcomes(listener: (outcomes: readonly TxOutcomeRecord[]) => void): () => void {
    this.#outcomeListeners.add(listener)
    return () => this.#outcomeListeners.delete(listener)
  }

  protected async _append(tx: TxAppend, op: OpRef | undefined): Promise<TxAppended> {
    const { writer } = this.#live()
    const keys = [this.keys.meta, this.keys.log]
    const args = [
      tx.dt,
      this.#now ? String(Math.floor(this.#now())) : '',
      String(tx.snapshot),
      JSON.stringify(tx.reads),
      encodeCommitWrites(tx.writes),
    ]
    if (op !== undefined) {
      const { tenant, client, seq } = opClientOf(op)
      keys.push(...this.keys.opClient(tenant, client))
      args.push(
        op.fingerprint,
        String(seq),
        String(this.#options.opRetentionMs),
        String(this.#options.opWindow),
      )
    }
    const script = op === undefined ? APPEND_SCRIPT : APPEND_OP_SCRIPT
    const reply = (await this.#run(writer, 'append', (r) => script.run(r, keys, args))) as
      string[] | unknown[]
    if (String(reply[0]) === TX_EXPIRED) throw opExpired(op!, Number(reply[1]))
    if (String(reply[0]) === TX_REPLAY) {
      const record = decodeOpRecord(String(reply[1]))
      if (record === undefined)
        throw new CausewayError('INTERNAL', 'a stored commit operation record does not decode')
      return replayOf(op!, record)
    }
    const tid = Number(reply[0])
    const ts = String(reply[1]) as Hlc
    const at = Number(reply[2])
    if (tid > this.#seen) this.#seen = tid
    this.#remember(this.#records, tid, {
      tid,
      ts,
      at,
      snapshot: tx.snapshot,
      reads: tx.reads,
      writes: tx.writes,
    })
    await this.#durable()
    return { tid, ts }
  }

  protected async _appendForeign(unit: ForeignTx): Promise<number> {
    const { writer } = this.#live()
    const reply = (await this.#run(writer, 'append', (r) =>
      APPEND_FOREIGN_SCRIPT.run(
        r,
        [this.keys.meta, this.keys.log],
        [
          String(unit.region),
          String(unit.tid),
          unit.ts,
          JSON.stringify([unit.region, unit.tid, unit.parts]),
          encodeCommitWrites(unit.writes),
          this.#now ? String(Math.floor(this.#now())) : '',
        ],
      ),
    )) as string[]
    if (reply[1] !== '' && reply[1] !== undefined) {
      const tid = Number(reply[1])
      if (tid > this.#seen) this.#seen = tid
    }
    await this.#durable()
    return Number(reply[0])
  }

  protected async _foreignCheckpoint(region: number): Promise<number> {
    const { reader } = this.#live()
    const value = await this.#run(reader, 'checkpoint', (r) =>
      r.hget(this.keys.meta, `f:${region}`),
    )
    return Number(value ?? 0)
  }

  protected async _read(afterTid: number, limit: number): Promise<TxRecord[]> {
    // Only durable records (lastTid): the applier must not see one the log could lose.
    const out: TxRecord[] = []
    const last = this.#last
    let tid = afterTid + 1
    while (out.length < limit && tid <= last) {
      const known = this.#records.get(tid)
      if (known === undefined) break
      out.push(known)
      tid++
    }
    if (out.length === limit || tid > last) return out
    const { reader } = this.#live()
    const rows = await this.#run(reader, 'read', (r) =>
      r.xrange(this.keys.log, `${tid}-0`, `${last}-0`, 'COUNT', limit - out.length),
    )
    for (const [id, fields] of rows) out.push(decodeRecord(id, fields))
    return out
  }

  protected async _recordOutcomes(outcomes: readonly TxOutcomeRecord[]): Promise<void> {
    const { writer } = this.#live()
    const args = [String(outcomes.length)]
    for (const o of outcomes)
      args.push(String(o.tid), o.outcome === 'applied' ? 'a' : 'c', o.ts, JSON.stringify(o.parts))
    await this.#run(writer, 'record', (r) =>
      RECORD_SCRIPT.run(r, [this.keys.meta, this.keys.out], args),
    )
    // The tail brings them to every process; this one learns them now.
    this.#learn(outcomes)
  }

  protected async _readOutcomes(afterTid: number, limit: number): Promise<TxOutcomeRecord[]> {
    const out: TxOutcomeRecord[] = []
    let tid = afterTid + 1
    while (out.length < limit) {
      const known = this.#outcomes.get(tid)
      if (known === undefined) break
      out.push(known)
      tid++
    }
    if (out.length === limit) return out
    const { reader } = this.#live()
    const rows = await this.#run(reader, 'read', (r) =>
      r.xrange(this.keys.out, `${tid}-0`, '+', 'COUNT', limit - out.length),
    )
    for (const [id, fields] of rows) out.push(decodeOutcome(id, fields))
    return out
  }

  override async publishOpenSnapshot(token: string, oldest: number | undefined): Promise<void> {
    const { writer } = this.#live()
    await this.#run(writer, 'snap', (r) =>
      oldest === undefined
        ? r.hdel(this.keys.snap, token)
        : r.hset(this.keys.snap, token, `${oldest}:${Date.now()}`),
    )
  }

  override async oldestOpenSnapshot(freshMs: number): Promise<number | undefined> {
    const { writer } = this.#live()
    const all = await this.#run(writer, 'snap', (r) => r.hgetall(this.keys.snap))
    let oldest: number | undefined
    const stale: string[] = []
    for (const [token, text] of Object.entries(all)) {
      const [snapshot, at] = text.split(':').map(Number)
      if (!(Date.now() - at! <= freshMs)) {
        stale.push(token)
        continue
      }
      if (oldest === undefined || snapshot! < oldest) oldest = snapshot
    }
    if (stale.length > 0) await this.#run(writer, 'snap', (r) => r.hdel(this.keys.snap, ...stale))
    return oldest
  }

  // Learns outcomes (from this process's recording or the tail), in order, once each.
  #learn(outcomes: readonly TxOutcomeRecord[]): void {
    const fresh = outcomes.filter((o) => !this.#outcomes.has(o.tid))
    for (const o of fresh) this.#remember(this.#outcomes, o.tid, o)
    const last = outcomes.at(-1)?.tid ?? 0
    if (last > this.#applied) this.#applied = last
    // Applied records were durable.
    if (last > this.#seen) this.#seen = last
    this.#advance(last)
    if (fresh.length > 0) for (const listener of this.#outcomeListeners) listener(fresh)
  }

  async #tailOutcomes(redis: Redis): Promise<void> {
    let after = `${this.#applied}-0`
    while (!this.#closing) {
      try {
        const reply = (await redis.xread(
          'COUNT',
          1024,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          this.keys.out,
          after,
        )) as [string, [string, string[]][]][] | null
        if (reply === null) continue
        const rows = reply[0]![1]
        if (rows.length === 0) continue
        after = rows.at(-1)![0]
        this.#learn(rows.map(([id, fields]) => decodeOutcome(id, fields)))
      } catch {
        if (this.#closing) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }

  async #tailAppends(redis: Redis): Promise<void> {
    let after = `${this.#applied}-0`
    while (!this.#closing) {
      try {
        const reply = (await redis.xread(
          'COUNT',
          512,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          this.keys.log,
          after,
        )) as [string, [string, string[]][]][] | null
        if (reply === null) continue
        const rows = reply[0]![1]
        if (rows.length === 0) continue
        after = rows.at(-1)![0]
        for (const [id, fields] of rows) {
          const record = decodeRecord(id, fields)
          this.#remember(this.#records, record.tid, record)
          if (record.tid > this.#seen) this.#seen = record.tid
        }
        // Listeners hear of them once durable (the appender's WAIT may be in another process).
        if (this.#seen > this.#last) this.#durable().catch(noop)
      } catch {
        if (this.#closing) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }

  // Moves lastTid to `tid` (known durable) and tells the append listeners.
  #advance(tid: number): void {
    if (tid <= this.#last) return
    this.#last = tid
    for (const listener of this.#appendListeners) listener(tid)
  }

  // Resolves once the appends made so far have reached the durability's servers: one `WAIT`
  // for every append that finished before it started.
  #durable(): Promise<void> {
    if (this.#needed === 0) {
      this.#advance(this.#seen)
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      this.#waitQueue.push({ resolve, reject })
      if (!this.#waiting) void this.#pumpWaits()
    })
  }

  async #pumpWaits(): Promise<void> {
    this.#waiting = true
    try {
      while (this.#waitQueue.length > 0) {
        const batch = this.#waitQueue.splice(0)
        // Everything this process knows to be in the leader precedes the INCR below in its
        // replication stream, so a WAIT that covers the INCR covers all of it.
        const covers = this.#seen
        try {
          const c = this.#live()
          if (c.waiter === undefined) {
            c.waiter = this.#connect('waiter')
            await c.waiter.connect()
          }
          const waiter = c.waiter
          const timeout = this.#options.waitTimeoutMs
          const acked = await this.#run(
            waiter,
            'wait',
            async (r) => {
              await r.incr(this.keys.wait)
              return r.wait(this.#needed, timeout)
            },
            timeout + this.#options.commandTimeoutMs,
          )
          if (Number(acked) < this.#needed)
            throw new CausewayError(
              'BACKEND_UNAVAILABLE',
              `the transaction log of region ${this.region} reached ${Number(acked) + 1} of its servers within ${timeout} ms; ${this.#needed + 1} are needed`,
              { region: this.region, acked: Number(acked) + 1, needed: this.#needed + 1 },
            )
          this.#advance(covers)
          for (const p of batch) p.resolve()
        } catch (error) {
          for (const p of batch) p.reject(error)
        }
      }
    } finally {
      this.#waiting = false
    }
  }

  #remember<T>(map: Map<number, T>, tid: number, value: T): void {
    map.set(tid, value)
    if (map.size > RECENT) map.delete(map.keys().next().value!)
  }

  #live(): Connections {
    if (!this.#connections)
      throw new CausewayError(
        'BACKEND_UNAVAILABLE',
        `the transaction log on ${this.backend} is closed`,
      )
    return this.#connections
  }

  #connect(role: string): Redis {
    const redis = new Redis(this.#options.url, {
      lazyConnect: true,
      connectionName: `causeway:tx-${role}:r${this.region}`,
      connectTimeout: this.#options.connectTimeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
    })
    redis.on('error', noop)
    return redis
  }

  async #run<T>(
    client: Redis,
    operation: string,
    call: (client: Redis) => Promise<T>,
    timeoutMs = this.#options.commandTimeoutMs,
  ): Promise<T> {
    if (client.status !== 'ready')
      throw backendError(new Error(`connection is ${client.status}`), this.backend, operation)
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no reply in ${timeoutMs} ms`)), timeoutMs)
    })
    try {
      return await Promise.race([call(client), timeout])
    } catch (error) {
      if (error instanceof CausewayError) throw error
      throw backendError(error, this.backend, operation)
    } finally {
      clearTimeout(timer)
    }
  }
}

function fieldsOf(list: readonly string[]): Map<string, string> {
  const f = new Map<string, string>()
  for (let i = 0; i + 1 < list.length; i += 2) f.set(list[i]!, list[i + 1]!)
  return f
}

function decodeRecord(id: string, list: readonly string[]): TxRecord {
  const f = fieldsOf(list)
  const w = f.get('w') ?? '[]'
  const writes: readonly TxWrite[] = w === '[]' ? [] : decodeCommitWrites(w)
  const record: TxRecord = {
    tid: parseInt(id, 10),
    ts: (f.get('ts') ?? '') as Hlc,
    at: Number(f.get('at') ?? 0),
    snapshot: Number(f.get('s') ?? 0),
    reads: JSON.parse(f.get('r') ?? '[]') as TxRead[],
    writes,
  }
  const foreign = f.get('f')
  if (foreign !== undefined) {
    const [region, tid, parts] = JSON.parse(foreign) as [number, number, [number, number][]]
    record.foreign = { region, tid, parts }
  }
  return record
}

function decodeOutcome(id: string, list: readonly string[]): TxOutcomeRecord {
  const f = fieldsOf(list)
  return {
    tid: parseInt(id, 10),
    outcome: f.get('o') === 'a' ? 'applied' : 'conflict',
    ts: (f.get('ts') ?? '') as Hlc,
    parts: JSON.parse(f.get('p') ?? '[]') as [number, number][],
  }
}
