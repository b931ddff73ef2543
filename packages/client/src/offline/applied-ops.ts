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
import { asCausewayError } from './outcome.js'

/** The op ids of applied and refused ops, those folded into them included. */
function idsOf(done: AppliedOp[], failed: RefusedOp[]): string[] {
  const ids: string[] = []
  for (const d of [...done, ...failed]) {
    ids.push(d.op.opId)
    for (const [, f] of d.folded ?? []) ids.push(f.opId)
  }
  return ids
}

/** An op applied, with its outbox key and result. */
export interface AppliedOp {
  key: string
  op: StoredOp
  result: WriteResult
  /** The queued edits folded into it (`ops-request.ts`): applied with it, with its result. */
  folded?: [string, StoredOp][] | undefined
}

/** An op refused for good, with its outbox key and the error. */
export interface RefusedOp {
  key: string
  op: StoredOp
  error: CausewayError
  /** The queued edits folded into it: refused with it. */
  folded?: [string, StoredOp][] | undefined
}

/** How {@link AppliedOps.record} records. */
export interface RecordOptions {
  /** Whether the ops are in the outbox (a tab that does not own it sends some without). */
  queued?: boolean
  /** Ops refused for good, moved to `failed`. */
  failed?: RefusedOp[]
  /** Whether the session has their results already. */
  observed?: boolean
  /** Written with the next batch (nothing waits for it). */
  soon?: boolean
  /** The cache entries they leave, computed before (a retry of what a full store refused). */
  cache?: StoreChange[]
}

/**
 * How long the recording of an op applied on the fast path may wait for others to join it, ms.
 * A client writing one value after another records tens of writes in one go: their outbox
 * removals, one read-cache entry per key and one session row per partition, in one batch, done
 * while later writes are on the wire rather than between a reply and the next call.
 */
const DEFER_MS = 10
/** Deferred recordings beyond which they are recorded at once. */
const DEFER_MAX = 256

/** An op whose recording waits, and what to call once it is recorded. */
interface Deferred {
  applied: AppliedOp
  done: () => void
}

export class AppliedOps {
  readonly #ctx: EngineContext
  readonly #cache: CacheRecords
  /** Result contexts of ops applied lately, for a write made over one of them. */
  readonly #contexts = new Map<string, string | undefined>()
  #deferred: Deferred[] = []
  #deferTimer: ReturnType<typeof setTimeout> | undefined
  /** The deferred recordings started, one after the other (each reads what the last wrote). */
  #recording: Promise<void> = Promise.resolve()
  /**
   * Outcomes the store refused to record (a full store): kept here and written by
   * {@link retryUnrecorded}; `inOutbox` when even their removal could not be written.
   */
  #unrecorded: {
    done: AppliedOp[]
    failed: RefusedOp[]
    inOutbox: boolean
    cache: StoreChange[]
  }[] = []
  /** Op ids of {@link #unrecorded}: applied or refused already, so never sent again. */
  readonly #skip = new Set<string>()

  constructor(ctx: EngineContext, cache: CacheRecords) {
    this.#ctx = ctx
    this.#cache = cache
  }

  /** Records an applied write in the session (NuKV: hwm, dtW), before its call returns. */
  observe(op: StoredOp, result: WriteResult): void {
    this.#ctx.session.observeWrite(op.partition, result)
    this.#contexts.set(op.opId, result.context)
    this.#ctx.host.parts.changed()
  }

  /**
   * Records an applied op later (see {@link DEFER_MS}), with the others applied meanwhile; `done`
   * is called once that is written (or failed). Its result is in the session already
   * ({@link observe}) and the op in the outbox until then, so a crash in between leaves it queued:
   * the replay finds it applied by its op id. What reads the read cache, the replay and `close()`
   * call {@link settle} first.
   */
  defer(applied: AppliedOp, done: () => void): void {
    this.#deferred.push({ applied, done })
    if (this.#deferred.length >= DEFER_MAX) void this.settle()
    else if (this.#deferTimer === undefined) {
      // Not unref'd: a script that writes and ends without close() still records its writes.
      this.#deferTimer = setTimeout(() => void this.settle(), DEFER_MS)
    }
  }

  /** Records the deferred ops now; resolves once every recording asked for so far is written. */
  settle(): Promise<void> {
    clearTimeout(this.#deferTimer)
    this.#deferTimer = undefined
    const batch = this.#deferred
    if (batch.length > 0) {
      this.#deferred = []
      this.#recording = this.#recording
        .then(async () => {
          // A store that refuses it keeps it in memory (`#keep`) and says so (the error event).
          await this.record(
            batch.map((d) => d.applied),
            { observed: true, soon: true },
          )
        })
        // Left queued: a replay finds them applied by their op ids.
        .catch((error: unknown) =>
          this.#ctx.host.events.emit('error', { error: asCausewayError(error) }),
        )
        .finally(() => {
          for (const d of batch) d.done()
        })
    }
    return this.#recording
  }

  /**
   * Records applied ops: out of the outbox (unless `queued` is false: they were never in it),
   * into the session (unless `observed`: {@link observe} did) and the read cache, in one batch
   * with the session's rows of their partitions, and any op made over one of them gets its
   * context. Refused ones move to
   * `failed`. With `soon`, the batch is the next one written (`LocalStore.commitSoon`): for ops
   * whose callers have their results already, so nothing waits for it.
   */
  async record(
    done: AppliedOp[],
    { queued = true, failed = [], observed = false, soon = false, cache }: RecordOptions = {},
  ): Promise<CausewayError | undefined> {
    const { store, session, sessionSaver, host, count } = this.#ctx
    const changes: StoreChange[] = []
    if (!observed) {
      for (const { op, result, folded } of done) {
        session.observeWrite(op.partition, result)
        this.#contexts.set(op.opId, result.context)
        for (const [, f] of folded ?? []) this.#contexts.set(f.opId, result.context)
      }
      if (done.length > 0) host.parts.changed()
    }
    while (this.#contexts.size > 1000) {
      this.#contexts.delete(this.#contexts.keys().next().value!)
    }
    let removed = 0
    if (queued)
      for (const { key, folded } of done) {
        for (const [k] of folded ?? []) changes.push({ type: 'del', in: 'outbox', key: k })
        changes.push({ type: 'del', in: 'outbox', key })
        removed += 1 + (folded?.length ?? 0)
      }
    for (const { key, op, error, folded } of failed) {
      for (const [k, o] of [...(folded ?? []), [key, op] as const]) {
        changes.push({ type: 'del', in: 'outbox', key: k })
        changes.push({
          type: 'put',
          in: 'failed',
          key: k,
          value: { ...o, error: error.toBody(), failedAt: Date.now() },
        })
        removed++
      }
    }
    changes.push(...(cache ?? (await this.#cache.afterWrites(done))))
    changes.push(...(await this.#rechain(done, failed)))
    // What the session learnt of them, saved with their removal (`session-store.ts`).
    if (done.length > 0) changes.push(...sessionSaver.rows(done.map(({ op }) => op.partition)))
    count.begin()
    try {
      await (soon ? store.commitSoon(changes) : store.commit(changes))
      if (removed > 0) count.counted(-removed)
      this.#cache.written(changes)
      for (const id of idsOf(done, failed)) this.#skip.delete(id)
      return undefined
    } catch (cause) {
      const error = asCausewayError(cause)
      await this.#keep(done, failed, queued, changes)
      host.events.emit('error', { error })
      return error
    } finally {
      count.end()
    }
  }

  /**
   * The store refused to record `done` and `failed` (a full store): their outcomes stay in
   * memory, never sent again (the gateway has them), their cache entries readable from memory,
   * and their removals from the outbox are tried alone (removals free space, and the badge
   * counts down), until {@link retryUnrecorded} writes the rest. Refused ones stay queued (moving
   * them to `failed` needs room).
   */
  async #keep(
    done: AppliedOp[],
    failed: RefusedOp[],
    queued: boolean,
    changes: StoreChange[],
  ): Promise<void> {
    const { store, count } = this.#ctx
    for (const id of idsOf(done, failed)) this.#skip.add(id)
    this.#cache.keep(changes)
    let inOutbox = queued
    if (queued && done.length > 0) {
      const removals: StoreChange[] = []
      for (const { key, folded } of done) {
        for (const [k] of folded ?? []) removals.push({ type: 'del', in: 'outbox', key: k })
        removals.push({ type: 'del', in: 'outbox', key })
      }
      try {
        await store.commitAlone(removals)
        count.counted(-removals.length)
        inOutbox = false
      } catch {
        // Not even that: they stay queued, skipped by the replay until this is retried.
      }
    }
    this.#unrecorded.push({
      done,
      failed,
      inOutbox,
      cache: changes.filter((c) => c.in === 'cache'),
    })
  }

  /** Whether outcomes wait in memory for the store to take them. */
  get unrecorded(): boolean {
    return this.#unrecorded.length > 0
  }

  /** Whether the op `opId` was applied (or refused) and must not be sent again. */
  skips(opId: string): boolean {
    return this.#skip.has(opId)
  }

  /**
   * Writes the outcomes kept in memory ({@link #keep}), oldest first; the error of the first
   * the store still refuses (then it and the later ones stay in memory), undefined when all are
   * written. The replay calls it before sending anything.
   */
  async retryUnrecorded(): Promise<CausewayError | undefined> {
    while (this.#unrecorded.length > 0) {
      const { done, failed, inOutbox, cache } = this.#unrecorded.shift()!
      const error = await this.record(done, {
        queued: inOutbox,
        failed,
        observed: true,
        cache: this.#cache.kept(cache),
      })
      if (error !== undefined) {
        // `record` kept it again, at the end: put it back first, in its order.
        this.#unrecorded.unshift(this.#unrecorded.pop()!)
        return error
      }
    }
    return undefined
  }

  /**
   * Queued ops made over an applied (or refused) one get the context it left. Only a put or
   * delete of a siblings key can have them: a local context (`~<opId>`, what a write over a
   * queued one carries) is only shown for those (`read-overlay.ts`). For the others the outbox
   * is not read at all: a read of it walks every removed op not compacted away yet, the costliest
   * part of an online write by far.
   */
  async #rechain(done: AppliedOp[], failed: RefusedOp[]): Promise<StoreChange[]> {
    // An op made over one that was applied supersedes what that one made: its reply's context.
    // Without one (the leader held a version of the key this device never saw) it is sent with
    // none rather than the earlier op's base, which that op superseded already.
    const contexts = new Map<string, string | undefined>()
    for (const { op, result, folded } of done)
      if (this.#chainable(op))
        for (const o of [op, ...(folded ?? []).map(([, f]) => f)])
          contexts.set(o.opId, result.context)
    for (const { op, folded } of failed)
      if (this.#chainable(op))
        for (const o of [op, ...(folded ?? []).map(([, f]) => f)]) contexts.set(o.opId, op.context)
    const rows = done.reduce((n, d) => n + 1 + (d.folded?.length ?? 0), 0)
    if (contexts.size === 0 || this.#ctx.count.value <= rows) return []
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

  /** Whether ops can be made over `op` while it is queued (see `#rechain`). */
  #chainable(op: StoredOp): boolean {
    return (
      (op.kind === 'put' || op.kind === 'delete') &&
      this.#ctx.host.conflictMode(op.key) === 'siblings'
    )
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
