/**
 * The offline engine of one client (`connect({ persist })`): it queues writes in the local
 * store's outbox, answers reads from the read cache when the gateway cannot be reached, and
 * replays the outbox in order through `POST /v1/ops` when it can.
 *
 * Writes. Every write is first appended to the outbox (one atomic batch with its op id), then
 * sent: alone and at once when nothing is queued before it (the online fast path), otherwise
 * behind what is queued, by the replay. Whichever way, the gateway applies it at most once (its
 * op id), and it leaves the outbox in the same batch that records its result in the read cache
 * and the session. A write that cannot reach the gateway stays queued and resolves
 * `{ pending: true, opId }`; one refused for good (a 4xx) is thrown at its caller when it was
 * sent at once, and moved to `failed()` (with the `error` event) when the replay met it.
 *
 * Order (monotonic writes, writes-follow-reads). A new write never overtakes a queued one: while
 * anything is queued, writes queue behind it. Each op carries the dependency time its level
 * picked when it was made; the replay sends the larger of that and the session's, and the
 * gateway makes op n+1 of a batch depend on op n's stamp, and batches go one after the other, so
 * op n+1 is never applied before op n.
 *
 * Tabs. Clients sharing a store elect one owner (`outbox-lock.ts`); only it replays, so no op is
 * replayed by two. The others send their own writes at once when nothing is queued (without
 * writing them ahead: the owner would replay them), queue them otherwise, and learn their
 * outcome from the owner over the store's channel (`tab-channel.ts`).
 */
import {
  CausewayError,
  HLC_ZERO,
  MAX_BATCH_OPS,
  OfflineError,
  hlcMax,
  type Session,
  type ConflictMode,
  type ErrorBody,
  type ReadReply,
  type Topology,
} from '@causeway/core'
import { writeScope, type ClientParts } from '../client-access.js'
import type { WriteOptions } from '../options.js'
import type { SetElement, SetWriteOptions } from '../set.js'
import { scanView, setView, withObservedContexts } from './set-local.js'
import type { ReadResult, Sibling, WriteResult } from '../client.js'
import { sendWithRateLimitBackoff } from '../rate-limit-backoff.js'
import { CallDeadline } from '../call-deadline.js'
import { checkWriteReply } from '../replies.js'
import { Connectivity } from './connectivity.js'
import { randomId } from './ids.js'
import type { EventHub } from './events.js'
import { LocalStore, type StoreChange } from './local-store.js'
import { outboxLock, type OutboxLock } from './outbox-lock.js'
import type {
  FailedOp,
  PendingOp,
  PendingWrite,
  PersistStore,
  StoredOp,
  SyncResult,
} from './outbox-types.js'
import { isTransient, isUnreachable, type WriteResultBody } from './outcome.js'
import {
  type KeyEntry,
  type SetEntry,
  isAtLeastAsNew,
  keyEntryId,
  setEntryId,
  setFromScan,
  setWithAdds,
  setWithHas,
  setWithRemoves,
} from './read-cache.js'
import { openTabChannel, type OpOutcome, type TabChannel, type TabMessage } from './tab-channel.js'

/** What the engine needs of its client. */
export interface EngineHost {
  readonly parts: ClientParts
  readonly events: EventHub
  readonly topology: Topology
  conflictMode(key: string): ConflictMode
  /** Reads `key` from the gateway (which records it in the cache and reports a conflict). */
  refresh(key: string): Promise<unknown>
}

/** The local store, opened, with what it holds. */
export interface OpenedStore {
  local: LocalStore
  /** The device id (persisted). */
  device: string
  topology: unknown
  url: string | undefined
  session: unknown
  /** Whether `close()` closes the database (the SDK opened it from a name or path). */
  ownsStore: boolean
  /** The name tabs coordinate under. */
  name: string
}

// Names of stores without a location of their own (memory-level): one per store object, so two
// clients given the same object share its outbox, as two tabs share one IndexedDB database.
const anonymousNames = new WeakMap<object, string>()

function storeName(db: PersistStore): string {
  const location = (db as { location?: unknown }).location
  if (typeof location === 'string' && location !== '') return location
  let name = anonymousNames.get(db)
  if (name === undefined) anonymousNames.set(db, (name = `memory-${randomId(12)}`))
  return name
}

/** Opens the local store and reads what it holds. */
export async function openStore(db: PersistStore, ownsStore: boolean): Promise<OpenedStore> {
  const local = new LocalStore(db)
  await local.open()
  const state = await local.loadState()
  let device = state.device
  if (device === undefined) {
    device = randomId(12)
    await local.commit([{ type: 'put', in: 'meta', key: 'device', value: device }])
  }
  return {
    local,
    device,
    topology: state.topology,
    url: state.url,
    session: state.session,
    ownsStore,
    name: storeName(db),
  }
}

/** Saves the topology the client connected with (so the next connect needs no network). */
export function saveTopology(opened: OpenedStore, topology: Topology, url: string): Promise<void> {
  return opened.local.commit([
    { type: 'put', in: 'meta', key: 'topology', value: topology },
    { type: 'put', in: 'meta', key: 'url', value: url },
  ])
}

/** A caller waiting for the outcome of its queued write. */
interface Waiter {
  resolve(result: WriteResult | PendingWrite): void
  reject(error: unknown): void
  timer: ReturnType<typeof setTimeout> | undefined
}

// Bytes of JSON one batch may carry: the gateway takes 8 single-write bodies; leave room.
const BATCH_VALUE_FACTOR = 4
// Siblings keys read again after a replay to show their conflicts: at most this many per sync.
const MAX_REFRESH = 100

/** The offline engine of one client (see the module comment). */
export class OfflineEngine {
  /** This client's part of its op ids: the device id and a tag of this connection. */
  readonly clientId: string
  readonly connectivity: Connectivity
  readonly #host: EngineHost
  readonly #store: LocalStore
  readonly #opened: OpenedStore
  readonly #lock: OutboxLock
  readonly #channel: TabChannel
  readonly #session: Session
  #seq = 0
  #stamp = 0
  /** Ops this client sent alone and is waiting for (they are in the outbox meanwhile). */
  readonly #inflight = new Map<string, Promise<unknown>>()
  /** Ops in the outbox, as last counted. */
  #count = 0
  /**
   * Changes of the outbox this client made that are not reflected in both the store and
   * `#count` yet (a commit asked, its count not adjusted). A recount from the store (what other
   * tabs did) runs only when there are none, and is dropped when one ran during its read:
   * otherwise it would count a write twice or not at all.
   */
  #mutations = 0
  #countEpoch = 0
  readonly #idle: (() => void)[] = []
  /** Ops applied whose removal from the outbox is being written: no longer pending. */
  readonly #removing = new Set<string>()
  readonly #waiters = new Map<string, Waiter>()
  readonly #syncWaiters: ((result: SyncResult) => void)[] = []
  #syncing: Promise<SyncResult> | undefined
  #closed = false
  #sessionSave: ReturnType<typeof setTimeout> | undefined
  #changedPost: ReturnType<typeof setTimeout> | undefined
  readonly #keyChains = new Map<string, Promise<void>>()
  /** Result contexts of ops applied lately, for a write made over one of them. */
  readonly #appliedContexts = new Map<string, string | undefined>()
  #maxBatch = MAX_BATCH_OPS

  private constructor(host: EngineHost, opened: OpenedStore) {
    this.#host = host
    this.#opened = opened
    this.#store = opened.local
    this.#session = host.parts.session
    this.clientId = `${opened.device}-${randomId(6)}`
    this.connectivity = new Connectivity(host.events, () => this.#kick())
    this.connectivity.setProbe(() => this.#probe())
    const channelName = `causeway-outbox:${opened.name}`
    this.#channel = openTabChannel(channelName, (m) => this.#onMessage(m))
    this.#lock = outboxLock(channelName, this.clientId, this.#channel.raw)
  }

  /** Starts the engine of a client over an opened store. */
  static async start(host: EngineHost, opened: OpenedStore): Promise<OfflineEngine> {
    const engine = new OfflineEngine(host, opened)
    const last = await opened.local.entries('outbox', { limit: 1, reverse: true })
    const lastStamp = last[0] ? parseInt(last[0][0].slice(0, 14), 16) : 0
    engine.#stamp = Number.isFinite(lastStamp) ? lastStamp : 0
    engine.#count = (await opened.local.entries('outbox')).length
    await engine.#lock.start(() => engine.#becameOwner())
    return engine
  }

  /** Whether this client replays the outbox (it owns it among the clients of the store). */
  get owner(): boolean {
    return this.#lock.owner
  }

  /** Ops in the outbox, as last counted. */
  get pendingCount(): number {
    return this.#count
  }

  // ---- op ids and outbox keys ----

  /** The next op id of this client. */
  nextOpId(): string {
    return `${this.clientId}.${++this.#seq}`
  }

  /** The outbox key of a new op: increasing in this client, close to time order across them. */
  #outboxKey(opId: string): string {
    this.#stamp = Math.max(this.#stamp + 1, Date.now() * 1000)
    return this.#stamp.toString(16).padStart(14, '0') + '.' + opId
  }

  // ---- writes ----

  /**
   * Queues `op` and sends it (see the module comment). `send` sends it alone, with its op id.
   * Resolves with the result when it was applied within `timeoutMs`, `{ pending: true, opId }`
   * otherwise; rejects with `STORAGE_FULL` when it could not be queued, and with the gateway's
   * error when it was sent at once and refused for good.
   */
  async write(
    op: StoredOp,
    send: (op: StoredOp) => Promise<WriteResult>,
    timeoutMs: number,
  ): Promise<WriteResult | PendingWrite> {
    this.#throwIfClosed()
    if (op.afterOp !== undefined) {
      // Made over a queued write that has been applied meanwhile: its context is known now.
      const known = this.contextOfLocal('~' + op.afterOp)
      if (known.afterOp === undefined) {
        delete op.afterOp
        if (known.context !== undefined) op.context = known.context
      }
    }
    const key = this.#outboxKey(op.opId)
    const online = this.connectivity.online
    if (
      online &&
      op.afterOp === undefined &&
      this.#syncing === undefined &&
      this.#queuedBehind() === 0
    ) {
      if (this.owner) return this.#sendAhead(key, op, send)
      if (this.#count === 0 && (await this.#store.entries('outbox', { limit: 1 })).length === 0)
        return this.#sendUnqueued(key, op, send)
    }
    await this.#queue(key, op)
    if (!online) return { pending: true, opId: op.opId }
    const outcome = this.#waitFor(op.opId, timeoutMs)
    this.#kick()
    return outcome
  }

  /** Ops queued that this client is not sending itself right now. */
  #queuedBehind(): number {
    return this.#count - this.#inflight.size
  }

  /**
   * The owner's fast path: queued and sent at once, side by side (the reply waits for the
   * queueing only when the write fails), and removed with its result in the background, in the
   * batch that queues the next write. A crash before the removal leaves it queued: the replay
   * finds it applied (its op id). The session records the result before the call returns.
   */
  async #sendAhead(
    key: string,
    op: StoredOp,
    send: (op: StoredOp) => Promise<WriteResult>,
  ): Promise<WriteResult | PendingWrite> {
    // Counted from now (silently: an online write that succeeds never shows as pending).
    this.#begin()
    this.#count++
    const queued = this.#store.commit([{ type: 'put', in: 'outbox', key, value: op }]).then(
      () => this.#end(),
      (error: unknown) => {
        this.#count--
        this.#end()
        throw error
      },
    )
    queued.catch(() => {})
    let settle!: () => void
    this.#inflight.set(op.opId, new Promise<void>((resolve) => (settle = resolve)))
    const release = () => {
      this.#inflight.delete(op.opId)
      settle()
    }
    let result: WriteResult
    try {
      result = await send(op)
    } catch (error) {
      try {
        await queued
      } catch (storeError) {
        // Not queued: the write failed as a whole, and says why it could not wait.
        release()
        throw isTransient(error) ? storeError : error
      }
      if (isTransient(error) || !(error instanceof CausewayError)) {
        release()
        // It may or may not have been applied: the replay sends it again, under the same id.
        this.#countChanged()
        if (isUnreachable(error)) this.connectivity.markOffline(error as CausewayError)
        else this.connectivity.retryLater()
        if (this.#closed || this.#host.parts.closing.aborted) throw error
        return { pending: true, opId: op.opId }
      }
      this.#begin()
      await this.#store.commit([{ type: 'del', in: 'outbox', key }]).catch(() => {})
      release()
      this.#counted(-1)
      this.#end()
      throw error
    }
    this.#observe(op, result)
    this.#removing.add(op.opId)
    void queued
      .then(
        () => this.#applied([{ key, op, result }], true, [], false),
        () => {},
      )
      .finally(() => {
        this.#removing.delete(op.opId)
        release()
      })
    return result
  }

  /** Records an applied write in the session (NuKV: hwm, dtW), before its call returns. */
  #observe(op: StoredOp, result: WriteResult): void {
    this.#session.observeWrite(op.partition, result)
    this.#appliedContexts.set(op.opId, result.context ?? op.context)
    this.#host.parts.changed()
  }

  /** A tab that does not own the outbox, with nothing queued: send at once, queue on failure. */
  async #sendUnqueued(
    key: string,
    op: StoredOp,
    send: (op: StoredOp) => Promise<WriteResult>,
  ): Promise<WriteResult | PendingWrite> {
    let result: WriteResult
    try {
      result = await send(op)
    } catch (error) {
      if (!isTransient(error)) throw error
      if (isUnreachable(error)) this.connectivity.markOffline(error as CausewayError)
      await this.#queue(key, op)
      this.#channel.post({ t: 'kick' })
      return { pending: true, opId: op.opId }
    }
    this.#observe(op, result)
    void this.#applied([{ key, op, result }], false, [], false)
    return result
  }

  /** Appends `op` to the outbox and counts it (`STORAGE_FULL` when the store refuses it). */
  async #queue(key: string, op: StoredOp): Promise<void> {
    this.#begin()
    try {
      await this.#store.commit([{ type: 'put', in: 'outbox', key, value: op }])
      this.#counted(+1)
    } finally {
      this.#end()
    }
  }

  #waitFor(opId: string, timeoutMs: number): Promise<WriteResult | PendingWrite> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined }
      waiter.timer = setTimeout(() => {
        this.#waiters.delete(opId)
        resolve({ pending: true, opId })
      }, timeoutMs)
      this.#waiters.set(opId, waiter)
    })
  }

  #settle(outcome: OpOutcome): void {
    const waiter = this.#waiters.get(outcome.opId)
    if (waiter === undefined) return
    this.#waiters.delete(outcome.opId)
    clearTimeout(waiter.timer)
    if ('result' in outcome) waiter.resolve(resultOf(outcome.result))
    else if ('error' in outcome) waiter.reject(CausewayError.fromBody(outcome.error))
    else waiter.resolve({ pending: true, opId: outcome.opId })
  }

  /** What each waiting caller learns: here, and in the other tabs. */
  #report(outcomes: OpOutcome[]): void {
    if (outcomes.length === 0) return
    for (const o of outcomes) this.#settle(o)
    this.#channel.post({ t: 'outcomes', outcomes })
  }

  // ---- applying results ----

  /**
   * Records applied ops: out of the outbox (when `queued`), into the session and the read cache,
   * in one batch with the session, and any op made over one of them gets its context.
   */
  async #applied(
    done: { key: string; op: StoredOp; result: WriteResult }[],
    queued = true,
    failed: { key: string; op: StoredOp; error: CausewayError }[] = [],
    observe = true,
  ): Promise<void> {
    const changes: StoreChange[] = []
    if (observe) {
      for (const { op, result } of done) {
        this.#session.observeWrite(op.partition, result)
        this.#appliedContexts.set(op.opId, result.context ?? op.context)
      }
      if (done.length > 0) this.#host.parts.changed()
    }
    while (this.#appliedContexts.size > 1000) {
      this.#appliedContexts.delete(this.#appliedContexts.keys().next().value!)
    }
    if (queued) for (const { key } of done) changes.push({ type: 'del', in: 'outbox', key })
    for (const { key, op, error } of failed) {
      changes.push({ type: 'del', in: 'outbox', key })
      changes.push({
        type: 'put',
        in: 'failed',
        key,
        value: { ...op, error: error.toBody(), failedAt: Date.now() },
      })
    }
    changes.push(...(await this.#cacheAfterWrites(done)))
    changes.push(...(await this.#rechain(done, failed)))
    changes.push({ type: 'put', in: 'meta', key: 'session', value: this.#session.toJSON() })
    this.#begin()
    try {
      await this.#store.commit(changes)
      if (queued && done.length + failed.length > 0) this.#counted(-(done.length + failed.length))
    } catch (error) {
      // The ops stay queued: a replay finds them applied (their ids) and removes them then.
      this.#host.events.emit('error', { error: error as CausewayError })
    } finally {
      this.#end()
    }
  }

  /** The cache entries the applied writes leave. */
  async #cacheAfterWrites(done: { op: StoredOp; result: WriteResult }[]): Promise<StoreChange[]> {
    if (done.length === 0) return []
    const ids = [...new Set(done.map(({ op }) => cacheIdOf(op)))]
    const old = new Map<string, unknown>()
    const values = await this.#store.getMany('cache', ids)
    ids.forEach((id, i) => old.set(id, values[i]))
    for (const { op, result } of done) {
      const id = cacheIdOf(op)
      old.set(id, entryAfter(old.get(id), op, result, this.#host.conflictMode(op.key)))
    }
    return ids.map((id) => ({ type: 'put', in: 'cache', key: id, value: old.get(id) }))
  }

  /** Queued ops made over an applied (or refused) one get the context it left. */
  async #rechain(
    done: { op: StoredOp; result: WriteResult }[],
    failed: { op: StoredOp }[],
  ): Promise<StoreChange[]> {
    const contexts = new Map<string, string | undefined>()
    for (const { op, result } of done) contexts.set(op.opId, result.context ?? op.context)
    for (const { op } of failed) contexts.set(op.opId, op.context)
    if (contexts.size === 0 || this.#count <= done.length) return []
    const changes: StoreChange[] = []
    for (const [key, value] of await this.#store.entries('outbox')) {
      const op = value as StoredOp
      if (op.afterOp === undefined || !contexts.has(op.afterOp)) continue
      const next: StoredOp = { ...op }
      delete next.afterOp
      const context = contexts.get(op.afterOp)
      if (context === undefined) delete next.context
      else next.context = context
      changes.push({ type: 'put', in: 'outbox', key, value: next })
    }
    return changes
  }

  /** The context to send for a write made over local context `token` (`~<opId>`). */
  contextOfLocal(token: string): { context?: string; afterOp?: string } {
    const opId = token.slice(1)
    if (this.#appliedContexts.has(opId)) {
      const context = this.#appliedContexts.get(opId)
      return context === undefined ? {} : { context }
    }
    return { afterOp: opId }
  }

  // ---- replay ----

  /** Replays the outbox now (see `db.sync()`). */
  async sync(): Promise<SyncResult> {
    if (this.#closed) throw new CausewayError('SHUTTING_DOWN', 'the client is closed')
    // Known offline with nothing to replay: the replay would send nothing, so nothing would find
    // out that the network is back (an app's "retry" button, a network switch): ask the gateway.
    if (!this.connectivity.online && this.#count === 0) await this.connectivity.probeNow()
    if (!this.owner) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          const i = this.#syncWaiters.indexOf(done)
          if (i >= 0) this.#syncWaiters.splice(i, 1)
          resolve({ applied: 0, failed: 0, pending: this.#count, owner: false })
        }, 10_000)
        const done = (result: SyncResult) => {
          clearTimeout(timer)
          resolve(result)
        }
        this.#syncWaiters.push(done)
        this.#channel.post({ t: 'kick' })
      })
    }
    this.#syncing ??= this.#replay().finally(() => (this.#syncing = undefined))
    return this.#syncing
  }

  /** Replays soon when this client owns the outbox and something is queued; asks the owner otherwise. */
  #kick(): void {
    if (this.#closed) return
    if (!this.owner) {
      if (this.#count > 0) this.#channel.post({ t: 'kick' })
      return
    }
    if (this.#count > 0 || this.#waiters.size > 0) void this.sync().catch(() => {})
  }

  /** The connectivity probe: a replay when something is queued, else a topology fetch. */
  async #probe(): Promise<boolean> {
    if (this.owner && this.#count > 0) {
      const result = await this.sync()
      return result.error === undefined || !isUnreachable(result.error)
    }
    const parts = this.#host.parts
    try {
      await parts.transport.request({
        method: 'GET',
        url: parts.home.url + '/v1/topology',
        headers: { ...parts.headers },
        signal: AbortSignal.any([parts.closing, AbortSignal.timeout(parts.defaults.timeoutMs)]),
      })
      this.connectivity.markOnline()
      return true
    } catch {
      return false
    }
  }

  async #replay(): Promise<SyncResult> {
    await Promise.allSettled([...this.#inflight.values()])
    let applied = 0
    let failedCount = 0
    const refresh = new Set<string>()
    let stopped: CausewayError | undefined
    for (;;) {
      if (this.#closed) break
      const rows = await this.#store.entries('outbox', { limit: this.#maxBatch })
      if (rows.length === 0) {
        // Empty, whatever was counted: another client replayed them (a second owner of the
        // lease fallback, for a moment). Say so, or the app's badge keeps the old count.
        if (this.#mutations === 0) this.#setCount(0)
        break
      }
      if (rows.length > this.#count && this.#mutations === 0) this.#setCount(rows.length)
      const batch = this.#cut(rows as [string, StoredOp][])
      const outcome = await this.#sendBatch(batch)
      if (outcome.kind === 'transient') {
        stopped = outcome.error
        break
      }
      if (outcome.kind === 'too-large') {
        this.#maxBatch = Math.max(1, Math.floor(batch.length / 2))
        continue
      }
      const done = outcome.results.map((result, i) => ({
        key: batch[i]![0],
        op: batch[i]![1],
        result,
      }))
      const failed: { key: string; op: StoredOp; error: CausewayError }[] = []
      if (outcome.error !== undefined) {
        if (outcome.error.index === -1) {
          // The whole request was refused for good (credentials, scope): every op of it.
          for (const [key, op] of batch) failed.push({ key, op, error: outcome.error.error })
        } else if (!isTransient(outcome.error.error)) {
          const [key, op] = batch[outcome.error.index]!
          failed.push({ key, op, error: outcome.error.error })
        } else {
          stopped = outcome.error.error
        }
      }
      await this.#applied(done, true, failed)
      applied += done.length
      failedCount += failed.length
      for (const { op } of done)
        if (op.kind === 'put' || op.kind === 'delete')
          if (this.#host.conflictMode(op.key) === 'siblings' && refresh.size < MAX_REFRESH)
            refresh.add(op.key)
      const outcomes: OpOutcome[] = done.map(({ op, result }) => ({
        opId: op.opId,
        result: bodyOf(result),
      }))
      for (const { op, error } of failed) {
        outcomes.push({ opId: op.opId, error: error.toBody() })
        const failedOp: FailedOp = { ...publicOp(op), error, failedAt: Date.now() }
        this.#host.events.emit('error', { error, op: failedOp })
      }
      this.#report(outcomes)
      if (stopped !== undefined) break
    }
    if (stopped !== undefined) {
      if (isUnreachable(stopped)) this.connectivity.markOffline(stopped)
      else this.connectivity.retryLater()
      // Whoever waits learns now that its write stays queued.
      this.#report([...this.#waiters.keys()].map((opId) => ({ opId, pending: true as const })))
    }
    for (const key of refresh) await this.#host.refresh(key).catch(() => {})
    // Their cache entries (and conflict events) are in before the sync says it is done.
    await Promise.allSettled([...this.#keyChains.values()])
    const result: SyncResult = {
      applied,
      failed: failedCount,
      pending: this.#count,
      owner: true,
      ...(stopped === undefined ? {} : { error: stopped }),
    }
    if (stopped === undefined && this.#count === 0) this.#host.events.emit('synced', result)
    const { error, owner: _owner, ...rest } = result
    this.#channel.post({
      t: 'synced',
      result: error === undefined ? rest : { ...rest, error: error.toBody() },
    })
    return result
  }

  /**
   * The next batch: consecutive ops for one region with one durability, within the body budget,
   * ending before an op made over an op of the same batch (its context comes from that reply).
   */
  #cut(rows: [string, StoredOp][]): [string, StoredOp][] {
    const first = rows[0]![1]
    const budget = this.#host.topology.limits.maxValueBytes * BATCH_VALUE_FACTOR
    const ids = new Set<string>()
    let bytes = 0
    const batch: [string, StoredOp][] = []
    for (const row of rows) {
      const op = row[1]
      if (op.region !== first.region || op.durability !== first.durability) break
      if (op.afterOp !== undefined && ids.has(op.afterOp)) break
      const size = op.value === undefined ? 64 : JSON.stringify(op.value).length + 64
      if (batch.length > 0 && bytes + size > budget) break
      bytes += size
      ids.add(op.opId)
      batch.push(row)
    }
    return batch
  }

  async #sendBatch(batch: [string, StoredOp][]): Promise<
    | { kind: 'transient'; error: CausewayError }
    | { kind: 'too-large' }
    | {
        kind: 'done'
        results: WriteResult[]
        error?: { index: number; error: CausewayError }
      }
  > {
    const parts = this.#host.parts
    const region = parts.regions[batch[0]![1].region] ?? parts.home
    const ops = batch.map(([, op]) => this.#wireOp(op))
    const body = JSON.stringify({ ops })
    const timeoutMs = Math.max(parts.defaults.timeoutMs, 10_000)
    const deadline = new CallDeadline(timeoutMs, undefined, parts.closing)
    let res
    try {
      res = await sendWithRateLimitBackoff(
        parts.transport,
        {
          method: 'POST',
          url: `${region.url}/v1/ops?durability=${batch[0]![1].durability}`,
          headers: { ...parts.headers, 'content-type': 'application/json' },
          body,
          signal: deadline.signal,
        },
        deadline,
      )
    } catch (cause) {
      const error =
        cause instanceof CausewayError
          ? cause
          : new CausewayError(
              deadline.signal.aborted ? 'TIMEOUT' : 'NETWORK_ERROR',
              `replay to region ${region.name} (${region.url}) failed: ${(cause as Error)?.message ?? String(cause)}`,
              { region: region.id, url: region.url },
              { cause },
            )
      return { kind: 'transient', error }
    } finally {
      deadline.dispose()
    }
    if (res.status !== 200) {
      const error = CausewayError.fromBody(res.body, res.status)
      if (isTransient(error)) return { kind: 'transient', error }
      if (res.status === 413 && batch.length > 1) return { kind: 'too-large' }
      // A malformed envelope cannot be made by this SDK for a valid op; what is left is about
      // the request as a whole (credentials, a batch the gateway will not take): every op of it.
      if (batch.length === 1) return { kind: 'done', results: [], error: { index: 0, error } }
      return { kind: 'done', results: [], error: { index: -1, error } }
    }
    const reply = res.body as {
      results?: unknown
      error?: Partial<ErrorBody> & { index?: unknown }
    }
    const results: WriteResult[] = []
    const raw = Array.isArray(reply?.results) ? reply.results : []
    for (const [i, r] of raw.entries()) {
      const checked = checkWriteReply(r, parts.regions.length)
      results.push({
        pending: false,
        opId: batch[i]![1].opId,
        ts: checked.ts,
        dc: checked.dc,
        idx: checked.idx,
        epoch: checked.epoch,
        region: checked.region,
        context: checked.context,
      })
    }
    if (reply.error !== undefined) {
      const index = typeof reply.error.index === 'number' ? reply.error.index : results.length
      const error = CausewayError.fromBody(reply.error, reply.error.statusCode)
      return { kind: 'done', results, error: { index, error } }
    }
    return { kind: 'done', results }
  }

  /** A queued op as `POST /v1/ops` takes it, with the dependency it needs now. */
  #wireOp(op: StoredOp): Record<string, unknown> {
    const dt = hlcMax(op.dt, this.#session.writeDependency(op.level))
    const wire: Record<string, unknown> = { opId: op.opId, kind: op.kind }
    if (op.kind === 'put' || op.kind === 'delete') {
      wire.key = op.key
      if (op.kind === 'put') wire.value = op.value
      if (op.context !== undefined) wire.context = op.context
    } else {
      wire.name = op.key
      wire.elements = op.elements
    }
    wire.level = op.level
    if (dt !== HLC_ZERO) wire.dt = dt
    return wire
  }

  // ---- reads ----

  /** The cache entry of a key, or undefined. */
  async cachedKey(key: string): Promise<KeyEntry | undefined> {
    const entry = (await this.#store.get('cache', keyEntryId(key))) as KeyEntry | undefined
    return entry?.t === 'k' ? entry : undefined
  }

  /** The cache entry of a set, or undefined. */
  async cachedSet(name: string): Promise<SetEntry | undefined> {
    const entry = (await this.#store.get('cache', setEntryId(name))) as SetEntry | undefined
    return entry?.t === 's' ? entry : undefined
  }

  /** The queued ops of `key` (a key or a set's name), oldest first. */
  async queuedFor(key: string, kinds: 'kv' | 'set'): Promise<StoredOp[]> {
    if (this.#count <= this.#removing.size) return []
    const removing = new Set(this.#removing)
    const out: StoredOp[] = []
    for (const [, value] of await this.#store.entries('outbox')) {
      const op = value as StoredOp
      if (op.key !== key || removing.has(op.opId)) continue
      if ((op.kind === 'put' || op.kind === 'delete') === (kinds === 'kv')) out.push(op)
    }
    return out
  }

  /**
   * A read served from the cache with the queued writes of the key laid over it; `OFFLINE`
   * when this device knows nothing of the key.
   */
  async localRead<T>(key: string, why: CausewayError | undefined): Promise<ReadResult<T>> {
    this.connectivity.probeSoon()
    const [entry, ops] = await Promise.all([this.cachedKey(key), this.queuedFor(key, 'kv')])
    if (entry === undefined && ops.length === 0)
      throw new OfflineError(
        `offline, and this device has never read or written ${JSON.stringify(key)}`,
        { key },
        why === undefined ? undefined : { cause: why },
      )
    return this.overlay<T>(key, entry, ops, 'local')
  }

  /** `entry` (or a remote read as one) with `ops` laid over it, as a read result. */
  overlay<T>(
    key: string,
    entry: KeyEntry | undefined,
    ops: StoredOp[],
    source: 'local' | 'remote',
    base?: ReadResult<T>,
  ): ReadResult<T> {
    const siblings = this.#host.conflictMode(key) === 'siblings'
    let found = entry?.found ?? false
    let value = entry?.value
    let versions: Sibling<T>[] | undefined = siblings
      ? (entry?.versions ?? []).map((v) => ({
          value: v.value as T | undefined,
          deleted: v.deleted,
          ts: v.ts ?? HLC_ZERO,
          dc: v.dc ?? -1,
        }))
      : undefined
    let context = entry?.context ?? (siblings ? undefined : undefined)
    let ts = entry?.ts
    let dc = entry?.dc
    for (const op of ops) {
      ts = undefined
      dc = undefined
      const over = op.afterOp !== undefined || (op.context !== undefined && op.context === context)
      if (siblings) {
        const next: Sibling<T> = {
          value: op.kind === 'put' ? (op.value as T) : undefined,
          deleted: op.kind === 'delete',
          ts: HLC_ZERO,
          dc: -1,
        }
        versions = over || op.context !== undefined ? [next] : [...(versions ?? []), next]
        context = '~' + op.opId
      }
      found = op.kind === 'put'
      value = op.kind === 'put' ? op.value : undefined
    }
    let live: T[] | undefined
    if (siblings && versions !== undefined) {
      live = versions.filter((v) => !v.deleted).map((v) => v.value as T)
      found = live.length > 0
      value = live.length === 1 ? live[0] : undefined
    }
    return {
      found,
      value: found ? (value as T) : undefined,
      siblings: live,
      versions,
      context,
      ts,
      dc,
      idx: ops.length === 0 ? entry?.idx : undefined,
      epoch: base?.epoch ?? entry?.epoch ?? 1,
      region: base?.region ?? entry?.region ?? this.#host.parts.home.id,
      replica: base?.replica ?? entry?.replica ?? 0,
      waitedMs: base?.waitedMs ?? 0,
      attempts: base?.attempts ?? 0,
      source,
      pending: ops.length > 0,
    }
  }

  /** Records a remote read of `key` in the cache (only if at least as new), reporting a conflict. */
  recordKey(key: string, next: KeyEntry): void {
    const id = keyEntryId(key)
    const previous = this.#keyChains.get(id) ?? Promise.resolve()
    const chained = previous.then(async () => {
      if (this.#closed) return
      const old = (await this.#store.get('cache', id)) as KeyEntry | undefined
      if (!isAtLeastAsNew(old?.t === 'k' ? old : undefined, next)) return
      await this.#store.commit([{ type: 'put', in: 'cache', key: id, value: next }])
      const live = (next.versions ?? []).filter((v) => !v.deleted)
      if (live.length > 1 && old?.context !== next.context)
        this.#host.events.emit('conflict', {
          key,
          siblings: live.map((v) => v.value),
          versions: (next.versions ?? []).map((v) => ({
            value: v.value,
            deleted: v.deleted,
            ts: v.ts ?? HLC_ZERO,
            dc: v.dc ?? -1,
          })),
          context: next.context,
        })
    })
    const tail = chained.catch((error: unknown) =>
      this.#host.events.emit('error', { error: asCausewayError(error) }),
    )
    this.#keyChains.set(id, tail)
    void tail.then(() => {
      if (this.#keyChains.get(id) === tail) this.#keyChains.delete(id)
    })
  }

  /** Records what a set read showed. */
  recordSet(name: string, update: (old: SetEntry | undefined) => SetEntry): void {
    const id = setEntryId(name)
    const previous = this.#keyChains.get(id) ?? Promise.resolve()
    const tail = previous
      .then(async () => {
        if (this.#closed) return
        const old = (await this.#store.get('cache', id)) as SetEntry | undefined
        await this.#store.commit([
          { type: 'put', in: 'cache', key: id, value: update(old?.t === 's' ? old : undefined) },
        ])
      })
      .catch((error: unknown) => this.#host.events.emit('error', { error: asCausewayError(error) }))
    this.#keyChains.set(id, tail)
  }

  /** Records a set's `has` reply. */
  recordSetHas(name: string, element: string, found: boolean, ctx: string | undefined): void {
    this.recordSet(name, (old) => setWithHas(old, element, found, ctx))
  }

  /** Records a whole scan of a set. */
  recordSetScan(name: string, elements: { element: string; ctx?: string }[]): void {
    const entry = setFromScan(elements)
    this.recordSet(name, () => entry)
  }

  /** This device's view of a set: its entry with its queued writes laid over it. */
  async setView(name: string): Promise<SetEntry | undefined> {
    const [entry, ops] = await Promise.all([this.cachedSet(name), this.queuedFor(name, 'set')])
    return setView(entry, ops)
  }

  /** A set read answered from {@link setView}, or `OFFLINE` when it cannot tell (`answer`). */
  async readSetLocally<L>(
    name: string,
    answer: (view: SetEntry) => L | undefined,
    what: string,
  ): Promise<L> {
    this.connectivity.probeSoon()
    const view = await this.setView(name)
    const local = view === undefined ? undefined : answer(view)
    if (local === undefined)
      throw new OfflineError(`offline, and this device cannot tell ${what}`, { set: name })
    return local
  }

  /** A scan answered from {@link setView}: only a set this device scanned whole. */
  async scanSetLocally(
    name: string,
    range: {
      from?: string | undefined
      after?: string | undefined
      total: number
      withContext: boolean
    },
  ): Promise<Iterable<string | SetElement>> {
    this.connectivity.probeSoon()
    const view = await this.setView(name)
    if (view === undefined || !view.complete)
      throw new OfflineError(
        `offline, and this device never scanned set ${JSON.stringify(name)} whole`,
        { set: name },
      )
    return scanView(view, range)
  }

  /** A set write through the outbox; removes carry the contexts this device observed. */
  async writeSet(
    name: string,
    partition: number,
    op: 'add' | 'remove',
    chunk: readonly (string | SetElement)[],
    options: SetWriteOptions | undefined,
    send: (op: StoredOp) => Promise<WriteResult>,
  ): Promise<WriteResult | PendingWrite> {
    const elements =
      op === 'remove' && chunk.some((e) => typeof e === 'string')
        ? withObservedContexts(await this.setView(name), chunk)
        : [...chunk]
    const scope = writeScope(this.#host.parts, options)
    const stored: StoredOp = {
      opId: this.nextOpId(),
      kind: op === 'add' ? 'set-add' : 'set-remove',
      key: name,
      elements,
      partition,
      level: scope.level,
      dt: this.#session.writeDependency(scope.level),
      durability: scope.durability,
      region: scope.region.id,
      queuedAt: Date.now(),
    }
    return this.write(stored, send, scope.timeoutMs)
  }

  /** A put or delete through the outbox. */
  writeKey(
    fields: Pick<StoredOp, 'kind' | 'key' | 'value' | 'context' | 'afterOp' | 'partition'>,
    options: WriteOptions | undefined,
    send: (op: StoredOp) => Promise<WriteResult>,
  ): Promise<WriteResult | PendingWrite> {
    const scope = writeScope(this.#host.parts, options)
    const op: StoredOp = {
      ...fields,
      opId: this.nextOpId(),
      level: scope.level,
      dt: this.#session.writeDependency(scope.level),
      durability: scope.durability,
      region: scope.region.id,
      queuedAt: Date.now(),
    }
    if (op.kind !== 'put') delete op.value
    return this.write(op, send, scope.timeoutMs)
  }

  /**
   * Records a remote read of `key` and, when the key has queued writes, the read with them laid
   * over it (undefined when it has none).
   */
  async afterRemoteRead<T>(
    key: string,
    reply: ReadReply,
    result: ReadResult<T>,
  ): Promise<ReadResult<T> | undefined> {
    const entry = entryOfRead(reply)
    this.recordKey(key, entry)
    if (this.#count === 0) return undefined
    const queued = await this.queuedFor(key, 'kv')
    if (queued.length === 0) return undefined
    return this.overlay<T>(key, entry, queued, 'remote', result)
  }

  /** Records what a change of the feed says of a set. */
  recordSetChange(name: string, added: string[], removed: string[]): void {
    this.recordSet(name, (old) => setWithRemoves(setWithAdds(old, added), removed))
  }

  /** Saves the session soon (reads change it; writes save it with their batch). */
  sessionChanged(): void {
    if (this.#sessionSave !== undefined || this.#closed) return
    this.#sessionSave = setTimeout(() => {
      this.#sessionSave = undefined
      this.#store
        .commit([{ type: 'put', in: 'meta', key: 'session', value: this.#session.toJSON() }])
        .catch((error: unknown) =>
          this.#host.events.emit('error', { error: asCausewayError(error) }),
        )
    }, 50)
    ;(this.#sessionSave as { unref?: () => void }).unref?.()
  }

  // ---- the outbox as the app sees it ----

  async pending(): Promise<PendingOp[]> {
    // Taken before the read: a removal that lands during it must still be left out.
    const removing = new Set(this.#removing)
    return (await this.#store.outbox()).filter((op) => !removing.has(op.opId)).map(publicOp)
  }

  async failed(): Promise<FailedOp[]> {
    const rows = await this.#store.entries('failed')
    return rows.map(([, value]) => {
      const v = value as StoredOp & { error: ErrorBody; failedAt: number }
      return { ...publicOp(v), error: CausewayError.fromBody(v.error), failedAt: v.failedAt }
    })
  }

  /** Forgets failed ops (all, or those named); resolves how many. */
  async discardFailed(opIds?: readonly string[]): Promise<number> {
    const rows = await this.#store.entries('failed')
    const drop = rows.filter(([, v]) => opIds === undefined || opIds.includes((v as StoredOp).opId))
    await this.#store.commit(drop.map(([key]) => ({ type: 'del', in: 'failed', key })))
    return drop.length
  }

  // ---- coordination ----

  #counted(delta: number): void {
    this.#count = Math.max(0, this.#count + delta)
    this.#countChanged()
    // Other tabs recount from the store: once per burst is enough (a post per write costs).
    if (this.#changedPost !== undefined) return
    this.#changedPost = setTimeout(() => {
      this.#changedPost = undefined
      this.#channel.post({ t: 'changed' })
    }, 20)
    ;(this.#changedPost as { unref?: () => void }).unref?.()
  }

  #countChanged(): void {
    this.#host.events.emit('pending', { count: this.#count })
  }

  #setCount(count: number): void {
    if (count === this.#count) return
    this.#count = count
    this.#countChanged()
  }

  #becameOwner(): void {
    if (this.#closed) return
    // What the previous owner left (or this client queued before) replays now.
    void this.#recount().then(() => this.#kick())
  }

  /** A change of the outbox's count begins (see `#mutations`). */
  #begin(): void {
    this.#mutations++
  }

  /** ... and is in the store and in `#count`. */
  #end(): void {
    this.#mutations--
    this.#countEpoch++
    if (this.#mutations === 0) for (const wake of this.#idle.splice(0)) wake()
  }

  /** Counts the outbox again from the store: what other clients of the store did. */
  async #recount(): Promise<void> {
    for (let attempt = 0; attempt < 10 && !this.#closed; attempt++) {
      while (this.#mutations > 0 && !this.#closed)
        await new Promise<void>((resolve) => this.#idle.push(resolve))
      const epoch = this.#countEpoch
      const count = (await this.#store.entries('outbox')).length
      if (epoch === this.#countEpoch && this.#mutations === 0) {
        this.#setCount(count)
        return
      }
    }
  }

  #onMessage(m: TabMessage): void {
    if (this.#closed) return
    if (m.t === 'changed') void this.#recount()
    else if (m.t === 'kick') void this.#recount().then(() => this.#kick())
    else if (m.t === 'outcomes') for (const o of m.outcomes) this.#settle(o)
    else if (m.t === 'synced') {
      void this.#recount()
      const { error, ...rest } = m.result
      const result: SyncResult = {
        ...rest,
        owner: false,
        ...(error === undefined ? {} : { error: CausewayError.fromBody(error) }),
      }
      for (const done of this.#syncWaiters.splice(0)) done(result)
      if (error === undefined && rest.pending === 0) this.#host.events.emit('synced', result)
    }
  }

  #throwIfClosed(): void {
    if (this.#closed) throw new CausewayError('SHUTTING_DOWN', 'the client is closed')
  }

  /** Stops: timers, the lock (another client takes the outbox over), the channel, the store. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const wake of this.#idle.splice(0)) wake()
    this.connectivity.close()
    clearTimeout(this.#sessionSave)
    clearTimeout(this.#changedPost)
    for (const [opId, waiter] of this.#waiters) {
      clearTimeout(waiter.timer)
      waiter.resolve({ pending: true, opId })
    }
    this.#waiters.clear()
    await this.#syncing?.catch(() => {})
    await Promise.allSettled([...this.#keyChains.values()])
    await this.#store
      .commit([{ type: 'put', in: 'meta', key: 'session', value: this.#session.toJSON() }])
      .catch(() => {})
    await this.#store.flush()
    this.#lock.release()
    this.#channel.close()
    if (this.#opened.ownsStore) await this.#opened.local.db.close()
  }
}

function cacheIdOf(op: StoredOp): string {
  return op.kind === 'put' || op.kind === 'delete' ? keyEntryId(op.key) : setEntryId(op.key)
}

/** The cache entry after `op` was applied with `result`. */
function entryAfter(old: unknown, op: StoredOp, result: WriteResult, mode: ConflictMode): unknown {
  if (op.kind === 'set-add' || op.kind === 'set-remove') {
    const elements = (op.elements ?? []).map((e) => (typeof e === 'string' ? e : e.element))
    const set = (old as SetEntry | undefined)?.t === 's' ? (old as SetEntry) : undefined
    return op.kind === 'set-add' ? setWithAdds(set, elements) : setWithRemoves(set, elements)
  }
  const prev = (old as KeyEntry | undefined)?.t === 'k' ? (old as KeyEntry) : undefined
  const version = {
    ...(op.kind === 'put' ? { value: op.value } : {}),
    deleted: op.kind === 'delete',
    ts: result.ts,
    dc: result.dc,
  }
  const base = { t: 'k' as const, epoch: result.epoch, region: result.region, replica: 0 }
  if (mode !== 'siblings') {
    const next: KeyEntry = {
      ...base,
      found: op.kind === 'put',
      ...(op.kind === 'put' ? { value: op.value } : {}),
      ts: result.ts,
      dc: result.dc,
      idx: result.idx,
    }
    return isAtLeastAsNew(prev, next) ? next : prev
  }
  // Exact when the write superseded what the cache holds: then it is the only version. Otherwise
  // it is one more, and the sync reads the key again to learn the rest.
  const exact = result.context !== undefined && (prev === undefined || prev.context === op.context)
  const versions = exact ? [version] : [...(prev?.versions ?? []), version]
  const live = versions.filter((v) => !v.deleted)
  const next: KeyEntry = {
    ...base,
    found: live.length > 0,
    ...(live.length === 1 ? { value: live[0]!.value } : {}),
    ts: result.ts,
    dc: result.dc,
    versions,
  }
  const context = exact ? result.context : prev?.context
  if (context !== undefined) next.context = context
  return next
}

function publicOp(op: StoredOp): PendingOp {
  const out: PendingOp = {
    opId: op.opId,
    kind: op.kind,
    key: op.key,
    queuedAt: op.queuedAt,
    region: op.region,
  }
  if (op.kind === 'put') out.value = op.value
  if (op.elements !== undefined) out.elements = op.elements
  return out
}

function bodyOf(result: WriteResult): WriteResultBody {
  const body: WriteResultBody = {
    ts: result.ts,
    dc: result.dc,
    idx: result.idx,
    epoch: result.epoch,
    region: result.region,
    opId: result.opId,
  }
  if (result.context !== undefined) body.context = result.context
  return body
}

function resultOf(body: WriteResultBody): WriteResult {
  return { pending: false, ...body, context: body.context }
}

function asCausewayError(error: unknown): CausewayError {
  return error instanceof CausewayError
    ? error
    : new CausewayError('INTERNAL', (error as Error)?.message ?? String(error), undefined, {
        cause: error,
      })
}

/** Builds the stored form of a write (the client checks the input first). */
export function storedOp(fields: Omit<StoredOp, 'queuedAt'>): StoredOp {
  return { ...fields, queuedAt: Date.now() }
}

/** A read reply as a read-cache entry. */
function entryOfRead(reply: ReadReply): KeyEntry {
  const entry: KeyEntry = {
    t: 'k',
    found: reply.found,
    epoch: reply.epoch,
    region: reply.region,
    replica: reply.replica,
  }
  if (reply.found) entry.value = reply.value
  if (reply.ts !== undefined) entry.ts = reply.ts
  if (reply.dc !== undefined) entry.dc = reply.dc
  if (reply.idx !== undefined) entry.idx = reply.idx
  if (reply.context !== undefined) entry.context = reply.context
  if (reply.siblings !== undefined)
    entry.versions = reply.siblings.map((s) => ({
      ...('value' in s ? { value: s.value } : {}),
      deleted: !('value' in s),
      ts: s.ts,
      dc: s.dc,
    }))
  return entry
}
