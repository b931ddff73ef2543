/**
 * Writes through the outbox. Every write gets an op id and an outbox key, is queued (one atomic
 * batch) and sent: alone and at once when nothing is queued before it (the online fast path),
 * otherwise behind what is queued, by the replay. A write that cannot reach the gateway stays
 * queued and resolves `{ pending: true, opId }`; one refused for good when sent at once is thrown
 * at its caller and leaves the outbox.
 *
 * A new write never overtakes a queued one: while anything is queued (or a replay runs), writes
 * queue behind it. A client that does not own the outbox sends its own writes at once when the
 * outbox is empty, without writing them ahead (the owner would replay them), and queues them
 * otherwise.
 */
import { CausewayError } from '@causeway/core'
import { writeScope } from '../client-access.js'
import type { WriteResult } from '../client.js'
import type { WriteOptions } from '../options.js'
import type { SetElement, SetWriteOptions } from '../set.js'
import type { AppliedOps } from './applied-ops.js'
import type { ClusterCheck } from './cluster-check.js'
import type { EngineContext } from './engine-context.js'
import type { StoreChange } from './local-store.js'
import type { LocalReads } from './local-reads.js'
import type { OpWaiters } from './op-waiters.js'
import type { PendingWrite, StoredOp } from './outbox-types.js'
import { isTransient, isUnreachable } from './outcome.js'
import type { Replay } from './replay.js'
import { withObservedContexts } from './set-local.js'

/** Runs `f` in the loop's check phase, after what was scheduled there before (a request's write). */
function afterRequest<T>(f: () => Promise<T>): Promise<T> {
  if (typeof globalThis.setImmediate !== 'function') return f()
  return new Promise<T>((resolve, reject) =>
    globalThis.setImmediate(() => void f().then(resolve, reject)),
  )
}

/**
 * The `meta` entry holding the stamp of the last outbox key any client of the store made: each
 * new key goes after it (and after this client's own last), and is written with the op, so the
 * outbox's order is the order of writes across tabs, whatever their clocks say.
 */
const LAST_STAMP = 'outboxStamp'

/** Sends one op alone, with its op id. */
export type SendOne = (op: StoredOp) => Promise<WriteResult>

export class OutboxWrites {
  /** This client's part of its op ids: the device id and a tag of this connection. */
  readonly clientId: string
  readonly #ctx: EngineContext
  readonly #waiters: OpWaiters
  readonly #applied: AppliedOps
  readonly #replay: Replay
  readonly #reads: LocalReads
  readonly #cluster: ClusterCheck
  #seq = 0
  #stamp = 0

  constructor(
    ctx: EngineContext,
    clientId: string,
    parts: {
      waiters: OpWaiters
      applied: AppliedOps
      replay: Replay
      reads: LocalReads
      cluster: ClusterCheck
    },
  ) {
    this.#ctx = ctx
    this.clientId = clientId
    this.#waiters = parts.waiters
    this.#applied = parts.applied
    this.#replay = parts.replay
    this.#reads = parts.reads
    this.#cluster = parts.cluster
  }

  /** Outbox keys made from now on sort after `lastKey` (the last one in the store). */
  resumeAfter(lastKey: string | undefined): void {
    const lastStamp = lastKey === undefined ? 0 : parseInt(lastKey.slice(0, 14), 16)
    this.#stamp = Number.isFinite(lastStamp) ? lastStamp : 0
  }

  /** The next op id of this client. */
  nextOpId(): string {
    return `${this.clientId}.${++this.#seq}`
  }

  /**
   * The outbox key of a new op, and the change that records its stamp: after the last stamp any
   * client of the store recorded ({@link LAST_STAMP}) and this client's own last. Never from a
   * clock: a tab whose clock was corrected back would otherwise queue its next write before
   * writes another tab made earlier (the replay order is the key order).
   */
  async #outboxKey(opId: string): Promise<{ key: string; stamp: StoreChange }> {
    const stored = await this.#ctx.store.get('meta', LAST_STAMP).catch(() => undefined)
    const last = typeof stored === 'number' && Number.isSafeInteger(stored) ? stored : 0
    this.#stamp = Math.max(this.#stamp, last) + 1
    return {
      key: this.#stamp.toString(16).padStart(14, '0') + '.' + opId,
      stamp: { type: 'put', in: 'meta', key: LAST_STAMP, value: this.#stamp },
    }
  }

  /**
   * Queues `op` and sends it (see the module comment). `send` sends it alone, with its op id.
   * Resolves with the result when it was applied within `timeoutMs`, `{ pending: true, opId }`
   * otherwise; rejects with `STORAGE_FULL` when it could not be queued, and with the gateway's
   * error when it was sent at once and refused for good.
   */
  async write(op: StoredOp, send: SendOne, timeoutMs: number): Promise<WriteResult | PendingWrite> {
    const { connectivity, lock, count, store } = this.#ctx
    if (this.#ctx.closed) throw new CausewayError('SHUTTING_DOWN', 'the client is closed')
    if (op.afterOp !== undefined) {
      // Made over a queued write that has been applied meanwhile: its context is known now.
      const known = this.#applied.contextOfLocal('~' + op.afterOp)
      if (known.afterOp === undefined) {
        delete op.afterOp
        if (known.context !== undefined) op.context = known.context
      }
    }
    const { key, stamp } = await this.#outboxKey(op.opId)
    const online = connectivity.online
    // Sent at once only once the gateway is known to serve this device's cluster (checked after
    // each offline spell): otherwise queued, and the replay checks it before it sends anything.
    const cluster = this.#cluster.clear
    if (
      online &&
      cluster &&
      op.afterOp === undefined &&
      !this.#replay.sending &&
      this.#queuedBehind() === 0
    ) {
      if (lock.owner) return this.#sendAhead(key, stamp, op, send)
      if (count.value === 0 && (await store.entries('outbox', { limit: 1 })).length === 0)
        return this.#sendUnqueued(key, stamp, op, send)
    }
    await this.#queue(key, stamp, op)
    if (!online || this.#cluster.changed !== undefined) return { pending: true, opId: op.opId }
    const outcome = this.#waiters.waitFor(op.opId, timeoutMs)
    this.#replay.kick()
    return outcome
  }

  /** A put or delete through the outbox. */
  writeKey(
    fields: Pick<StoredOp, 'kind' | 'key' | 'value' | 'context' | 'afterOp' | 'partition'>,
    options: WriteOptions | undefined,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    const scope = writeScope(this.#ctx.host.parts, options)
    // Built field by field (no spreads): this runs for every write.
    const op: StoredOp = {
      opId: this.nextOpId(),
      kind: fields.kind,
      key: fields.key,
      partition: fields.partition,
      level: scope.level,
      dt: this.#ctx.session.writeDependency(scope.level),
      durability: scope.durability,
      region: scope.region.id,
      queuedAt: Date.now(),
    }
    if (fields.kind === 'put') op.value = fields.value
    if (fields.context !== undefined) op.context = fields.context
    if (fields.afterOp !== undefined) op.afterOp = fields.afterOp
    return this.write(op, send, scope.timeoutMs)
  }

  /** A set write through the outbox; removes carry the contexts this device observed. */
  async writeSet(
    name: string,
    partition: number,
    op: 'add' | 'remove',
    chunk: readonly (string | SetElement)[],
    options: SetWriteOptions | undefined,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    const elements =
      op === 'remove' && chunk.some((e) => typeof e === 'string')
        ? withObservedContexts(await this.#reads.setView(name), chunk)
        : [...chunk]
    const scope = writeScope(this.#ctx.host.parts, options)
    const stored: StoredOp = {
      opId: this.nextOpId(),
      kind: op === 'add' ? 'set-add' : 'set-remove',
      key: name,
      elements,
      partition,
      level: scope.level,
      dt: this.#ctx.session.writeDependency(scope.level),
      durability: scope.durability,
      region: scope.region.id,
      queuedAt: Date.now(),
    }
    return this.write(stored, send, scope.timeoutMs)
  }

  /** Ops queued that this client is not sending itself right now. */
  #queuedBehind(): number {
    return this.#ctx.count.value - this.#ctx.inflight.size
  }

  /**
   * The owner's fast path: queued and sent at once, side by side, and removed with its result
   * (read cache, session) in the background, in one batch with the other writes applied within a
   * few milliseconds (`AppliedOps.defer`). The session records the result before the call
   * returns, and the call returns only once the op is in the outbox (by then it nearly always
   * is), so a crash after the call leaves either the op queued (the replay finds it applied by its
   * op id and records its result then) or its removal written with the session that holds it:
   * never neither.
   */
  async #sendAhead(
    key: string,
    stamp: StoreChange,
    op: StoredOp,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    const { store, count, connectivity, host, inflight, removing } = this.#ctx
    // Counted from now (silently: an online write that succeeds never shows as pending).
    count.begin()
    count.adjustSilently(+1)
    let settle!: () => void
    inflight.set(op.opId, new Promise<void>((resolve) => (settle = resolve)))
    const release = () => {
      inflight.delete(op.opId)
      settle()
    }
    let result: WriteResult
    const sent = send(op)
    // Queued once the request is on its way (the HTTP client writes it in the loop's check
    // phase, as this does): the store's batch runs while the request is on the network.
    const queued = afterRequest(() =>
      store.commit([{ type: 'put', in: 'outbox', key, value: op }, stamp]),
    ).then(
      () => count.end(),
      (error: unknown) => {
        count.adjustSilently(-1)
        count.end()
        throw error
      },
    )
    queued.catch(() => {})
    try {
      result = await sent
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
        count.announce()
        if (isUnreachable(error)) connectivity.markOffline(error as CausewayError)
        else connectivity.retryLater()
        if (this.#ctx.closed || host.parts.closing.aborted) throw error
        return { pending: true, opId: op.opId }
      }
      count.begin()
      await store.commit([{ type: 'del', in: 'outbox', key }]).catch(() => {})
      release()
      count.counted(-1)
      count.end()
      throw error
    }
    this.#applied.observe(op, result)
    removing.add(op.opId)
    const done = () => {
      removing.delete(op.opId)
      release()
    }
    // Its removal, read-cache entry and session row are written later, with the writes around
    // it (`AppliedOps.defer`), off the path of the next call; it stays queued until then.
    void queued.then(
      () => this.#applied.defer({ key, op, result }, done),
      () => done(),
    )
    // A store that refused it (STORAGE_FULL) does not fail a write the gateway applied.
    await queued.catch(() => {})
    return result
  }

  /** A client that does not own the outbox, with nothing queued: send at once, queue on failure. */
  async #sendUnqueued(
    key: string,
    stamp: StoreChange,
    op: StoredOp,
    send: SendOne,
  ): Promise<WriteResult | PendingWrite> {
    let result: WriteResult
    try {
      result = await send(op)
    } catch (error) {
      if (!isTransient(error)) throw error
      if (isUnreachable(error)) this.#ctx.connectivity.markOffline(error as CausewayError)
      await this.#queue(key, stamp, op)
      this.#ctx.channel.post({ t: 'kick' })
      return { pending: true, opId: op.opId }
    }
    this.#applied.observe(op, result)
    void this.#applied.record([{ key, op, result }], {
      queued: false,
      observed: true,
      soon: true,
    })
    return result
  }

  /** Appends `op` to the outbox and counts it (`STORAGE_FULL` when the store refuses it). */
  async #queue(key: string, stamp: StoreChange, op: StoredOp): Promise<void> {
    const { store, count } = this.#ctx
    count.begin()
    try {
      await store.commit([{ type: 'put', in: 'outbox', key, value: op }, stamp])
      count.counted(+1)
    } finally {
      count.end()
    }
  }
}
