/**
 * One replica of one set over an {@link OrderedKv}: the planners and streaming reads wired to
 * a store. It is the reference for the storage backends (which may run the same planners inside
 * their own transactions instead) and what the tests drive.
 *
 * Writes of one instance are serialised (read clocks, plan, batch), so an instance must be the
 * only writer of its set in its store; a backend with several writers needs its own per-set lock
 * or an atomic script around read-plan-write.
 */
import { seen } from './clock.js'
import { planCompaction } from './compaction.js'
import type { BigsetDelta } from './delta.js'
import { normalizeDots, type Actor, type Dot } from './dot.js'
import type { BigsetKeys } from './keys.js'
import type { KvWrite, OrderedKv } from './ordered-kv.js'
import {
  readClocks,
  readElementDots,
  scanEntries,
  scanRange,
  storedElementKeys,
  type ScanOptions,
  type SetEntry,
  type StoredElementKey,
} from './reads.js'
import type { ReplicaElement, ReplicaEntries } from './replica-merge.js'
import {
  planApplyDelta,
  planInsert,
  planRemove,
  type BigsetClocks,
  type ElementOp,
  type InsertPlan,
  type PlanOptions,
  type RemovePlan,
  type WritePlan,
} from './writes.js'

/** Options of a {@link KvBigset}. */
export interface KvBigsetOptions extends PlanOptions {
  /**
   * Whether an insert also supersedes this replica's own live dots of the element (riak_dt's
   * "an add replaces the element's dots"), so re-adding an element keeps one key instead of one
   * per add. It costs a read of that element's keys (a seek, independent of the set's size);
   * without it an insert reads only the clocks, as in the paper.
   * @default false
   */
  readonly supersedeLocal?: boolean
}

/** Options of {@link KvBigset.compact}. */
export interface CompactOptions {
  /** Covered keys deleted per batch. @default 1000 */
  readonly batchSize?: number
}

/** A replica of a set stored in an {@link OrderedKv}. */
export class KvBigset {
  readonly kv: OrderedKv
  readonly keys: BigsetKeys
  readonly #options: KvBigsetOptions
  #queue: Promise<unknown> = Promise.resolve()

  constructor(kv: OrderedKv, keys: BigsetKeys, options: KvBigsetOptions = {}) {
    this.kv = kv
    this.keys = keys
    this.#options = options
  }

  /** The replica's set-clock and set-tombstone. */
  clocks(): Promise<BigsetClocks> {
    return readClocks(this.kv, this.keys)
  }

  /** Inserts elements at the coordinating `actor`; returns the plan, whose `delta` must ship. */
  insert(actor: Actor, ops: readonly ElementOp[]): Promise<InsertPlan> {
    return this.#serially(async () => {
      const clocks = await this.clocks()
      let withCtx = ops
      if (this.#options.supersedeLocal === true) {
        withCtx = await Promise.all(
          ops.map(async (op) => {
            const local = await readElementDots(this.kv, this.keys, op.element, clocks.tombstone)
            return { element: op.element, ctx: normalizeDots([...(op.ctx ?? []), ...local]) }
          }),
        )
      }
      const plan = planInsert(this.keys, clocks, actor, withCtx, this.#options)
      await this.kv.batch(plan.writes)
      return plan
    })
  }

  /** Removes the observed dots of elements; returns the plan, whose `delta` must ship. */
  remove(ops: readonly ElementOp[]): Promise<RemovePlan> {
    return this.#serially(async () => {
      const plan = planRemove(this.keys, await this.clocks(), ops, this.#options)
      if (plan.writes.length > 0) await this.kv.batch(plan.writes)
      return plan
    })
  }

  /** Applies a delta shipped by a replica (idempotent, any order). */
  apply(delta: BigsetDelta): Promise<WritePlan> {
    return this.#serially(async () => {
      const plan = planApplyDelta(this.keys, await this.clocks(), delta, this.#options)
      if (plan.writes.length > 0) await this.kv.batch(plan.writes)
      return plan
    })
  }

  /** The element's live dots (its context for a later remove or add); empty when absent. */
  async has(element: string): Promise<Dot[]> {
    return (await this.replicaHas(element)).dots
  }

  /** This replica's view of one element, for merging with other replicas' views. */
  async replicaHas(element: string): Promise<ReplicaElement & { readonly dots: Dot[] }> {
    const { clock, tombstone } = await this.clocks()
    return { clock, dots: await readElementDots(this.kv, this.keys, element, tombstone) }
  }

  /** The elements in order, streamed from the store. */
  async *scan(options: ScanOptions = {}): AsyncGenerator<SetEntry> {
    const { tombstone } = await this.clocks()
    yield* scanEntries(this.kv, this.keys, tombstone, options)
  }

  /** This replica's ordered stream with its set-clock, for {@link mergeReplicaStreams}. */
  async replicaEntries(options: ScanOptions = {}): Promise<ReplicaEntries> {
    const { clock, tombstone } = await this.clocks()
    return { clock, entries: scanEntries(this.kv, this.keys, tombstone, options) }
  }

  /**
   * A background compaction pass: walks every element key once, deletes those the tombstone
   * covers in batches, and finally drops the tombstone's dots as of the pass's start.
   */
  async compact(options: CompactOptions = {}): Promise<{ deleted: number }> {
    const batchSize = options.batchSize ?? 1000
    const passStart = (await this.clocks()).tombstone
    if (passStart.vv.size === 0 && passStart.cloud.size === 0) return { deleted: 0 }
    let pending: StoredElementKey[] = []
    let deleted = 0
    for await (const k of storedElementKeys(this.kv, this.keys, scanRange(this.keys))) {
      if (!seen(passStart, k.dot)) continue
      pending.push(k)
      if (pending.length >= batchSize) {
        const writes: KvWrite[] = pending.map((p) => ({ type: 'del', key: p.key }))
        deleted += pending.length
        pending = []
        await this.#serially(() => this.kv.batch(writes))
      }
    }
    deleted += pending.length
    await this.#serially(async () => {
      const { tombstone } = await this.clocks()
      const plan = planCompaction(this.keys, tombstone, pending, { passStart })
      if (plan.writes.length > 0) await this.kv.batch(plan.writes)
    })
    return { deleted }
  }

  #serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task)
    this.#queue = run.catch(() => undefined)
    return run
  }
}

/** Convenience for tests and tools: the whole set as sorted elements (loads it: small sets only). */
export async function collectElements(entries: AsyncIterable<SetEntry>): Promise<string[]> {
  const out: string[] = []
  for await (const e of entries) out.push(e.element)
  return out
}
