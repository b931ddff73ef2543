/**
 * What an applied (or refused) op leaves: its result in the session (NuKV: hwm, dtW), its entry
 * in the read cache, the op out of the outbox (a refused one into `failed`), and the context it
 * produced given to the queued ops made over it, all in one atomic batch with the session.
 */
import type { CausewayError } from '@causeway/core'
import type { WriteResult } from '../client.js'
import type { CacheRecords } from './cache-records.js'
import type { EngineContext } from './engine-context.js'
import type { StoreChange } from './local-store.js'
import type { StoredOp } from './outbox-types.js'

/** An op applied, with its outbox key and result. */
export interface AppliedOp {
  key: string
  op: StoredOp
  result: WriteResult
}

/** An op refused for good, with its outbox key and the error. */
export interface RefusedOp {
  key: string
  op: StoredOp
  error: CausewayError
}

export class AppliedOps {
  readonly #ctx: EngineContext
  readonly #cache: CacheRecords
  /** Result contexts of ops applied lately, for a write made over one of them. */
  readonly #contexts = new Map<string, string | undefined>()

  constructor(ctx: EngineContext, cache: CacheRecords) {
    this.#ctx = ctx
    this.#cache = cache
  }

  /** Records an applied write in the session (NuKV: hwm, dtW), before its call returns. */
  observe(op: StoredOp, result: WriteResult): void {
    this.#ctx.session.observeWrite(op.partition, result)
    this.#contexts.set(op.opId, result.context ?? op.context)
    this.#ctx.host.parts.changed()
  }

  /**
   * Records applied ops: out of the outbox (when `queued`), into the session (unless `observe`
   * is false: {@link observe} did) and the read cache, in one batch with the session, and any op
   * made over one of them gets its context. Refused ones move to `failed`.
   */
  async record(
    done: AppliedOp[],
    queued = true,
    failed: RefusedOp[] = [],
    observe = true,
  ): Promise<void> {
    const { store, session, host, count } = this.#ctx
    const changes: StoreChange[] = []
    if (observe) {
      for (const { op, result } of done) {
        session.observeWrite(op.partition, result)
        this.#contexts.set(op.opId, result.context ?? op.context)
      }
      if (done.length > 0) host.parts.changed()
    }
    while (this.#contexts.size > 1000) {
      this.#contexts.delete(this.#contexts.keys().next().value!)
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
    changes.push(...(await this.#cache.afterWrites(done)))
    changes.push(...(await this.#rechain(done, failed)))
    changes.push({ type: 'put', in: 'meta', key: 'session', value: session.toJSON() })
    count.begin()
    try {
      await store.commit(changes)
      if (queued && done.length + failed.length > 0) count.counted(-(done.length + failed.length))
    } catch (error) {
      // The ops stay queued: a replay finds them applied (their ids) and removes them then.
      host.events.emit('error', { error: error as CausewayError })
    } finally {
      count.end()
    }
  }

  /** Queued ops made over an applied (or refused) one get the context it left. */
  async #rechain(
    done: { op: StoredOp; result: WriteResult }[],
    failed: { op: StoredOp }[],
  ): Promise<StoreChange[]> {
    const contexts = new Map<string, string | undefined>()
    for (const { op, result } of done) contexts.set(op.opId, result.context ?? op.context)
    for (const { op } of failed) contexts.set(op.opId, op.context)
    if (contexts.size === 0 || this.#ctx.count.value <= done.length) return []
    const changes: StoreChange[] = []
    for (const [key, value] of await this.#ctx.store.entries('outbox')) {
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
    if (this.#contexts.has(opId)) {
      const context = this.#contexts.get(opId)
      return context === undefined ? {} : { context }
    }
    return { afterOp: opId }
  }
}
