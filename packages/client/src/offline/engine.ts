/**
 * The offline engine of one client (`connect({ persist })`): it queues writes in the local
 * store's outbox, answers reads from the read cache when the gateway cannot be reached, and
 * replays the outbox in order through `POST /v1/ops` when it can. This module builds its parts
 * and routes the client's calls and the other tabs' messages to them:
 *
 * - `outbox-writes.ts`: every write queued with its op id and sent (the online fast path, or
 *   behind what is queued);
 * - `replay.ts` and `ops-request.ts`: the replay, batch after batch, in order;
 * - `applied-ops.ts`: what an applied op leaves (session, read cache, out of the outbox), in one
 *   batch; `op-waiters.ts`: callers waiting for their queued write;
 * - `local-reads.ts` (with `read-overlay.ts`, `set-local.ts`): reads with the queued writes laid
 *   over the cache; `cache-records.ts` (with `cache-entries.ts`): the read cache as stored;
 * - `outbox-count.ts`: the pending count; `outbox-view.ts`: `pending()`, `failed()`;
 * - tabs: `outbox-lock.ts` (one owner replays, so no op is replayed by two) and `tab-channel.ts`
 *   (the others learn their writes' outcomes from the owner).
 *
 * Guarantees (monotonic writes, writes-follow-reads, exactly once) are stated where they are
 * kept: each op carries the dependency time its level picked when it was made; the replay sends
 * the larger of that and the session's, the gateway makes op n+1 of a batch depend on op n's
 * stamp, and batches go one after the other, so op n+1 is never applied before op n; the gateway
 * applies an op id at most once.
 */
import { CausewayError, type ReadReply } from '@causeway/core'
import type { ReadResult, WriteResult } from '../client.js'
import type { WriteOptions } from '../options.js'
import type { SetElement, SetWriteOptions } from '../set.js'
import { AppliedOps } from './applied-ops.js'
import { CacheRecords } from './cache-records.js'
import { ClusterCheck } from './cluster-check.js'
import { Connectivity } from './connectivity.js'
import type { EngineContext, EngineHost } from './engine-context.js'
import { randomId } from './ids.js'
import { LocalReads } from './local-reads.js'
import type { OpenedStore } from './opened-store.js'
import { OpWaiters } from './op-waiters.js'
import { OutboxCount } from './outbox-count.js'
import { outboxLock } from './outbox-lock.js'
import type { FailedOp, PendingOp, PendingWrite, StoredOp, SyncResult } from './outbox-types.js'
import { discardFailed, failedOps, pendingOps } from './outbox-view.js'
import { OutboxWrites, type SendOne } from './outbox-writes.js'
import { asCausewayError } from './outcome.js'
import type { KeyEntry, SetEntry } from './read-cache.js'
import { Replay } from './replay.js'
import type { StoreChange } from './local-store.js'
import { SESSION_ROW_PREFIX, SessionSaver } from './session-store.js'
import { openTabChannel, type TabMessage } from './tab-channel.js'

export type { EngineHost } from './engine-context.js'
export { openStore, saveTopology, type OpenedStore } from './opened-store.js'

/** The offline engine of one client (see the module comment). */
export class OfflineEngine {
  readonly connectivity: Connectivity
  /** Whether the gateway still serves this device's cluster (`cluster-check.ts`). */
  readonly cluster: ClusterCheck
  readonly #ctx: EngineContext
  readonly #opened: OpenedStore
  readonly #waiters: OpWaiters
  readonly #cache: CacheRecords
  readonly #applied: AppliedOps
  readonly #replay: Replay
  readonly #reads: LocalReads
  readonly #writes: OutboxWrites
  #sessionSave: ReturnType<typeof setTimeout> | undefined
  /** `resetCluster` forgot the session: it is not saved again. */
  #resetting = false

  private constructor(host: EngineHost, opened: OpenedStore) {
    this.#opened = opened
    const clientId = `${opened.device}-${randomId(6)}`
    const channelName = `causeway-outbox:${opened.name}`
    const channel = openTabChannel(channelName, (m) => this.#onMessage(m))
    const connectivity = new Connectivity(host.events, () => this.#replay.kick())
    connectivity.setProbe(() => this.#replay.probe())
    connectivity.setQueued(() => this.#ctx.count.value > 0)
    this.connectivity = connectivity
    const ctx: EngineContext = {
      host,
      store: opened.local,
      session: host.parts.session,
      sessionSaver: new SessionSaver(host.parts.session),
      channel,
      lock: outboxLock(channelName, clientId, channel.raw),
      connectivity,
      count: new OutboxCount(opened.local, host.events, channel, () => ctx.closed),
      inflight: new Map(),
      removing: new Set(),
      settleApplied: () => this.#applied.settle(),
      closed: false,
    }
    this.#ctx = ctx
    this.#waiters = new OpWaiters(channel)
    this.#cache = new CacheRecords(ctx)
    this.#applied = new AppliedOps(ctx, this.#cache)
    this.cluster = new ClusterCheck(ctx, false)
    this.#replay = new Replay(ctx, this.#waiters, this.#applied, this.#cache, this.cluster)
    this.#reads = new LocalReads(ctx, this.#cache)
    this.#writes = new OutboxWrites(ctx, clientId, {
      waiters: this.#waiters,
      applied: this.#applied,
      replay: this.#replay,
      reads: this.#reads,
      cluster: this.cluster,
    })
  }

  /** Starts the engine of a client over an opened store. */
  static async start(host: EngineHost, opened: OpenedStore): Promise<OfflineEngine> {
    const engine = new OfflineEngine(host, opened)
    const last = await opened.local.entries('outbox', { limit: 1, reverse: true })
    engine.#writes.resumeAfter(last[0]?.[0])
    engine.#ctx.count.adjustSilently((await opened.local.entries('outbox')).length)
    await engine.#ctx.lock.start(() => engine.#becameOwner())
    return engine
  }

  /** Whether this client replays the outbox (it owns it among the clients of the store). */
  get owner(): boolean {
    return this.#ctx.lock.owner
  }

  // ---- writes ----

  /** The next op id of this client. */
  nextOpId(): string {
    return this.#writes.nextOpId()
  }

  /** A put or delete through the outbox. */
  writeKey(
    fields: Pick<StoredOp, 'kind' | 'key' | 'value' | 'context' | 'afterOp' | 'partition'>,
    options: WriteOptions | undefined,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    return this.#writes.writeKey(fields, options, send)
  }

  /** A set write through the outbox; removes carry the contexts this device observed. */
  writeSet(
    name: string,
    partition: number,
    op: 'add' | 'remove',
    chunk: readonly (string | SetElement)[],
    options: SetWriteOptions | undefined,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    return this.#writes.writeSet(name, partition, op, chunk, options, send)
  }

  /** The context to send for a write made over local context `token` (`~<opId>`). */
  contextOfLocal(token: string): { context?: string; afterOp?: string } {
    return this.#applied.contextOfLocal(token)
  }

  // ---- replay ----

  /** Replays the outbox now (see `db.sync()`). */
  sync(): Promise<SyncResult> {
    return this.#replay.sync()
  }

  // ---- reads ----

  /** A read from the cache with the key's queued writes over it; `OFFLINE` when unknown. */
  localRead<T>(key: string, why: CausewayError | undefined): Promise<ReadResult<T>> {
    return this.#reads.localRead<T>(key, why)
  }

  /** Records a remote read; with queued writes of the key, the read with them laid over it. */
  afterRemoteRead<T>(
    key: string,
    reply: ReadReply,
    result: ReadResult<T>,
  ): Promise<ReadResult<T> | undefined> {
    return this.#reads.afterRemoteRead(key, reply, result)
  }

  /** A set read answered locally, or `OFFLINE` when this device cannot tell. */
  readSetLocally<L>(
    name: string,
    answer: (view: SetEntry) => L | undefined,
    what: string,
  ): Promise<L> {
    return this.#reads.readSetLocally(name, answer, what)
  }

  /** A scan answered locally: only a set this device scanned whole. */
  scanSetLocally(
    name: string,
    range: Parameters<LocalReads['scanSetLocally']>[1],
  ): Promise<Iterable<string | SetElement>> {
    return this.#reads.scanSetLocally(name, range)
  }

  /** Records a remote read of `key` in the cache (only if at least as new), reporting a conflict. */
  recordKey(key: string, next: KeyEntry): void {
    this.#cache.recordKey(key, next)
  }

  /** Records a set's `has` reply. */
  recordSetHas(name: string, element: string, found: boolean, ctx: string | undefined): void {
    this.#cache.recordSetHas(name, element, found, ctx)
  }

  /** Records a whole scan of a set. */
  recordSetScan(name: string, elements: { element: string; ctx?: string }[]): void {
    this.#cache.recordSetScan(name, elements)
  }

  /** Records what a change of the feed says of a set. */
  recordSetChange(name: string, added: string[], removed: string[]): void {
    this.#cache.recordSetChange(name, added, removed)
  }

  /**
   * Saves the whole session soon (reads change it; writes save their rows with their batch:
   * `session-store.ts`).
   */
  sessionChanged(): void {
    if (this.#sessionSave !== undefined || this.#ctx.closed || this.#resetting) return
    this.#sessionSave = setTimeout(() => {
      this.#sessionSave = undefined
      void this.#saveSession().catch((error: unknown) =>
        this.#ctx.host.events.emit('error', { error: asCausewayError(error) }),
      )
    }, 50)
    ;(this.#sessionSave as { unref?: () => void }).unref?.()
  }

  /** Saves the whole session (and drops the rows it holds). */
  async #saveSession(): Promise<void> {
    const { changes, rows } = this.#ctx.sessionSaver.whole()
    try {
      await this.#ctx.store.commit(changes)
    } catch (error) {
      this.#ctx.sessionSaver.keep(rows)
      throw error
    }
  }

  // ---- the outbox as the app sees it ----

  pending(): Promise<PendingOp[]> {
    return pendingOps(this.#ctx.store, this.#ctx.removing)
  }

  failed(): Promise<FailedOp[]> {
    return failedOps(this.#ctx.store)
  }

  /** Forgets failed ops (all, or those named); resolves how many. */
  discardFailed(opIds?: readonly string[]): Promise<number> {
    return discardFailed(this.#ctx.store, opIds)
  }

  // ---- coordination ----

  #becameOwner(): void {
    if (this.#ctx.closed) return
    // What the previous owner left (or this client queued before) replays now.
    void this.#ctx.count.recount().then(() => this.#replay.kick())
  }

  #onMessage(m: TabMessage): void {
    if (this.#ctx.closed) return
    const count = this.#ctx.count
    if (m.t === 'changed') void count.recount()
    else if (m.t === 'kick') void count.recount().then(() => this.#replay.kick())
    else if (m.t === 'outcomes') for (const o of m.outcomes) this.#waiters.settle(o)
    else if (m.t === 'synced') {
      void count.recount()
      this.#replay.ownerSynced(m)
    }
  }

  /**
   * The way on after `CLUSTER_CHANGED` (see `Causeway.resetCluster`): in one batch, the session
   * and the read cache are forgotten, the new cluster's topology is kept, and the queued writes
   * are dropped or kept without what tied them to the old cluster (their causal contexts, which
   * name versions the new cluster never had: kept ones become blind writes). Then closes.
   */
  async resetCluster(queued: 'keep' | 'drop'): Promise<void> {
    const change = this.cluster.changed
    if (change === undefined)
      throw new CausewayError('INVALID_OPTION', 'resetCluster: no cluster change was found', {
        option: 'resetCluster',
      })
    const ctx = this.#ctx
    await this.#applied.settle()
    await this.#replay.finished()
    await this.#cache.settled()
    // What is written from here on (the session, on close) must not bring the old state back.
    clearTimeout(this.#sessionSave)
    this.#sessionSave = undefined
    this.#resetting = true
    const changes: StoreChange[] = []
    for (const [key] of await ctx.store.entries('cache'))
      changes.push({ type: 'del', in: 'cache', key })
    for (const key of ['session', 'session-head']) changes.push({ type: 'del', in: 'meta', key })
    for (const [key] of await ctx.store.entries('meta', { prefix: SESSION_ROW_PREFIX }))
      changes.push({ type: 'del', in: 'meta', key })
    for (const [key, value] of await ctx.store.entries('outbox')) {
      if (queued === 'drop') {
        changes.push({ type: 'del', in: 'outbox', key })
        continue
      }
      const op: StoredOp = { ...(value as StoredOp) }
      delete op.context
      delete op.afterOp
      op.elements = op.elements?.map((e) => (typeof e === 'string' ? e : e.element))
      if (op.elements === undefined) delete op.elements
      changes.push({ type: 'put', in: 'outbox', key, value: op })
    }
    changes.push({ type: 'put', in: 'meta', key: 'topology', value: change.topology })
    await ctx.store.commit(changes)
    await this.close()
  }

  /** Stops: timers, the lock (another client takes the outbox over), the channel, the store. */
  async close(): Promise<void> {
    const ctx = this.#ctx
    if (ctx.closed) return
    ctx.closed = true
    ctx.count.close()
    this.connectivity.close()
    clearTimeout(this.#sessionSave)
    this.#waiters.close()
    await this.#applied.settle()
    await this.#replay.finished()
    await this.#cache.settled()
    if (!this.#resetting) await this.#saveSession().catch(() => {})
    await ctx.store.flush()
    ctx.lock.release()
    ctx.channel.close()
    if (this.#opened.ownsStore) await this.#opened.local.db.close()
  }
}
