/**
 * The replay (`db.sync()`, and by itself on reconnect): the owner of the outbox sends it in
 * order, batch after batch through `POST /v1/ops`, records each batch's results (`applied-ops.ts`)
 * before it sends the next, and stops at a transient failure, keeping the rest. A client that
 * does not own the outbox asks the owner and waits for what it reports. After a replay, the
 * siblings keys it wrote are read again so their conflicts show.
 */
import { CausewayError, MAX_BATCH_OPS } from '@causeway/core'
import type { AppliedOps, AppliedOp, RefusedOp } from './applied-ops.js'
import type { CacheRecords } from './cache-records.js'
import type { ClusterCheck } from './cluster-check.js'
import type { EngineContext } from './engine-context.js'
import type { OpWaiters } from './op-waiters.js'
import { type OutboxRow, cutBatch, sendBatch } from './ops-request.js'
import type { FailedOp, StoredOp, SyncResult } from './outbox-types.js'
import { publicOp } from './outbox-view.js'
import { bodyOf, isTransient, isUnreachable } from './outcome.js'
import type { OpOutcome, TabMessage } from './tab-channel.js'

// Siblings keys read again after a replay to show their conflicts: at most this many per sync.
const MAX_REFRESH = 100

export class Replay {
  readonly #ctx: EngineContext
  readonly #waiters: OpWaiters
  readonly #applied: AppliedOps
  readonly #cache: CacheRecords
  #syncing: Promise<SyncResult> | undefined
  /** Callers of `sync()` in a client that does not own the outbox, waiting for the owner's. */
  readonly #syncWaiters: ((result: SyncResult) => void)[] = []
  #maxBatch = MAX_BATCH_OPS
  /**
   * A kick came while a replay ran: what was queued meanwhile may be behind its last read of the
   * outbox, so another replay follows it (unless it stopped at a failure: then the connectivity's
   * retry, with its backoff, replays again).
   */
  #again = false
  #stopped = false
  #sending = false

  readonly #cluster: ClusterCheck

  constructor(
    ctx: EngineContext,
    waiters: OpWaiters,
    applied: AppliedOps,
    cache: CacheRecords,
    cluster: ClusterCheck,
  ) {
    this.#ctx = ctx
    this.#cluster = cluster
    this.#waiters = waiters
    this.#applied = applied
    this.#cache = cache
  }

  /**
   * Whether a replay is sending the outbox: a write made meanwhile queues behind it, and the
   * replay sends it too (it reads the outbox until it finds it empty with nothing being written
   * to it). Once it found it so, writes go at once again, though the replay has its ending to do.
   */
  get sending(): boolean {
    return this.#sending
  }

  /** Replays the outbox now (see `db.sync()`). */
  async sync(): Promise<SyncResult> {
    const { connectivity, count, lock, channel } = this.#ctx
    if (this.#ctx.closed) throw new CausewayError('SHUTTING_DOWN', 'the client is closed')
    // Known offline with nothing to replay: the replay would send nothing, so nothing would find
    // out that the network is back (an app's "retry" button, a network switch): ask the gateway.
    if (!connectivity.online && count.value === 0 && !this.#applied.unrecorded)
      await connectivity.probeNow()
    if (!lock.owner) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          const i = this.#syncWaiters.indexOf(done)
          if (i >= 0) this.#syncWaiters.splice(i, 1)
          resolve({ applied: 0, failed: 0, pending: count.value, owner: false })
        }, 10_000)
        const done = (result: SyncResult) => {
          clearTimeout(timer)
          resolve(result)
        }
        this.#syncWaiters.push(done)
        channel.post({ t: 'kick' })
      })
    }
    this.#syncing ??= this.#replay().finally(() => {
      this.#syncing = undefined
      this.#sending = false
      const again = this.#again && !this.#stopped
      this.#again = false
      if (again) this.kick()
    })
    return this.#syncing
  }

  /** Replays soon when this client owns the outbox and something is queued; asks the owner otherwise. */
  kick(): void {
    if (this.#ctx.closed) return
    if (!this.#ctx.lock.owner) {
      if (this.#ctx.count.value > 0) this.#ctx.channel.post({ t: 'kick' })
      return
    }
    if (this.#syncing !== undefined) {
      this.#again = true
      return
    }
    if (this.#ctx.count.value > 0 || this.#waiters.size > 0 || this.#applied.unrecorded)
      void this.sync().catch(() => {})
  }

  /** The connectivity probe: a replay when something is queued, else a topology fetch. */
  async probe(): Promise<boolean> {
    const { lock, count, host, connectivity } = this.#ctx
    if (lock.owner && (count.value > 0 || this.#applied.unrecorded)) {
      const result = await this.sync()
      return result.error === undefined || !isUnreachable(result.error)
    }
    const parts = host.parts
    try {
      await parts.transport.request({
        method: 'GET',
        url: parts.home.url + '/v1/topology',
        headers: { ...parts.headers },
        signal: AbortSignal.any([parts.closing, AbortSignal.timeout(parts.defaults.timeoutMs)]),
      })
      connectivity.markOnline()
      return true
    } catch {
      return false
    }
  }

  /** The owner (another client of the store) reported the end of its replay. */
  ownerSynced(message: Extract<TabMessage, { t: 'synced' }>): void {
    const { error, ...rest } = message.result
    const result: SyncResult = {
      ...rest,
      owner: false,
      ...(error === undefined ? {} : { error: CausewayError.fromBody(error) }),
    }
    for (const done of this.#syncWaiters.splice(0)) done(result)
    if (error === undefined && rest.pending === 0) this.#ctx.host.events.emit('synced', result)
  }

  /** Resolves when the replay under way (if any) is over. */
  async finished(): Promise<void> {
    await this.#syncing?.catch(() => {})
  }

  async #replay(): Promise<SyncResult> {
    const { store, count, host, connectivity, channel } = this.#ctx
    await this.#applied.settle()
    await Promise.allSettled([...this.#ctx.inflight.values()])
    let applied = 0
    let failedCount = 0
    const refresh = new Set<string>()
    let stopped: CausewayError | undefined
    // The outcomes of the last batch sent are told after the next read of the outbox, or once
    // the replay found it empty and stopped sending: a caller who writes again as soon as its
    // write is applied then goes at once, rather than queue behind this replay, be sent by it,
    // and keep it sending for as long as it writes.
    let told: OpOutcome[] = []
    // A 413 halves the batch for this replay only: the next one starts whole again (what was too
    // large then, a few big values, is usually gone).
    this.#maxBatch = MAX_BATCH_OPS
    // Outcomes a full store refused to record come first: until they are written nothing is sent,
    // so a store that stays full costs no upload (they are never sent again either way).
    stopped = await this.#applied.retryUnrecorded()
    this.#sending = stopped === undefined
    for (;;) {
      if (this.#ctx.closed || stopped !== undefined) break
      const read = await store.entries('outbox', { limit: this.#maxBatch })
      const rows = read.filter(([, op]) => !this.#applied.skips((op as StoredOp).opId))
      if (rows.length === 0 && read.length > 0) {
        stopped = new CausewayError('STORAGE_FULL', 'applied writes wait to be recorded')
        break
      }
      if (rows.length === 0 && store.busy) {
        // A write queued meanwhile may be among what is being written: read again after it.
        await store.flush()
        continue
      }
      if (rows.length === 0) {
        // Empty, whatever was counted: another client replayed them (a second owner of the
        // lease fallback, for a moment). Say so, or the app's badge keeps the old count.
        if (!count.changing) count.set(0)
        break
      }
      this.#waiters.report(told)
      told = []
      if (rows.length > count.value && !count.changing) count.set(rows.length)
      // The gateway must still serve this device's cluster (a reset one would take the queue
      // without a word): checked after each offline spell; on a change the outbox pauses.
      if (!this.#cluster.clear) {
        stopped = await this.#cluster
          .verify()
          .catch(
            (cause: unknown) =>
              new CausewayError(
                'NETWORK_ERROR',
                `cannot ask ${host.parts.home.url} for its cluster: ${(cause as Error)?.message ?? String(cause)}`,
                { url: host.parts.home.url },
                { cause },
              ),
          )
        if (stopped !== undefined) break
      }
      const { rows: batch, folded } = cutBatch(rows as OutboxRow[], host.topology)
      const outcome = await sendBatch(host.parts, this.#ctx.session, batch)
      if (outcome.kind === 'transient') {
        stopped = outcome.error
        break
      }
      if (outcome.kind === 'too-large') {
        this.#maxBatch = Math.max(1, Math.floor(batch.length / 2))
        continue
      }
      const done: AppliedOp[] = outcome.results.map((result, i) => ({
        key: batch[i]![0],
        op: batch[i]![1],
        result,
        folded: folded.get(batch[i]![1].opId),
      }))
      const failed: RefusedOp[] = []
      if (outcome.error !== undefined) {
        if (outcome.error.index === -1) {
          // The whole request was refused for good (credentials, scope): every op of it.
          for (const [key, op] of batch)
            failed.push({ key, op, error: outcome.error.error, folded: folded.get(op.opId) })
        } else if (!isTransient(outcome.error.error)) {
          const [key, op] = batch[outcome.error.index]! as [string, StoredOp]
          failed.push({ key, op, error: outcome.error.error, folded: folded.get(op.opId) })
        } else {
          stopped = outcome.error.error
        }
      }
      const unrecorded = await this.#applied.record(done, { failed })
      // The store refused their outcomes (full): they stay in memory, never sent again, and the
      // replay stops here, retried with backoff, rather than read and send the same rows again.
      if (unrecorded !== undefined) stopped ??= unrecorded
      const rowsOf = (n: number, d: { folded?: unknown[] | undefined }) =>
        n + 1 + (d.folded?.length ?? 0)
      applied += done.reduce(rowsOf, 0)
      failedCount += failed.reduce(rowsOf, 0)
      for (const { op } of done)
        if (op.kind === 'put' || op.kind === 'delete')
          if (host.conflictMode(op.key) === 'siblings' && refresh.size < MAX_REFRESH)
            refresh.add(op.key)
      const outcomes: OpOutcome[] = []
      for (const { op, result, folded: into } of done) {
        // A folded edit resolves with the result of the op it was folded into, under its own id.
        for (const [, f] of into ?? [])
          outcomes.push({ opId: f.opId, result: { ...bodyOf(result), opId: f.opId } })
        outcomes.push({ opId: op.opId, result: bodyOf(result) })
      }
      for (const { op, error, folded: into } of failed) {
        for (const o of [...(into ?? []).map(([, f]) => f), op]) {
          outcomes.push({ opId: o.opId, error: error.toBody() })
          const failedOp: FailedOp = { ...publicOp(o), error, failedAt: Date.now() }
          host.events.emit('error', { error, op: failedOp })
        }
      }
      told = outcomes
      if (stopped !== undefined) break
    }
    this.#sending = false
    this.#waiters.report(told)
    this.#stopped = stopped !== undefined
    if (stopped !== undefined) {
      if (isUnreachable(stopped)) connectivity.markOffline(stopped)
      // A changed cluster waits for the app (`resetCluster`), not for a retry.
      else if (stopped.code !== 'CLUSTER_CHANGED') connectivity.retryLater()
      // Whoever waits learns now that its write stays queued.
      this.#waiters.report(this.#waiters.ids().map((opId) => ({ opId, pending: true as const })))
    }
    for (const key of refresh) await host.refresh(key).catch(() => {})
    // Their cache entries (and conflict events) are in before the sync says it is done.
    await this.#cache.settled()
    const result: SyncResult = {
      applied,
      failed: failedCount,
      pending: count.value,
      owner: true,
      ...(stopped === undefined ? {} : { error: stopped }),
    }
    if (stopped === undefined && count.value === 0) host.events.emit('synced', result)
    const { error, owner: _owner, ...rest } = result
    channel.post({
      t: 'synced',
      result: error === undefined ? rest : { ...rest, error: error.toBody() },
    })
    return result
  }
}
