/**
 * One replica of one set over an {@link OrderedKv}: the planners and streaming reads wired to
 * a store. It is the reference for the storage backends (which may run the same planners inside
 * their own transactions instead) and what the tests drive.
 *
 * Writes of one instance are serialised (read clocks, plan, batch), so an instance must be the
 * only writer of its set in its store; a backend with several writers needs its own per-set lock
 * or an atomic script around read-plan-write.
 */
import { CausewayError } from '../errors.js'
import { hasSeen } from './clock.js'
import { planCompaction } from './compaction.js'
import type { BigsetDelta } from './delta.js'
import { normalizeDots, type Actor, type Dot } from './dot.js'
import type { BigsetKeys } from './keys.js'
import type { KvWrite, OrderedKv } from './ordered-kv.js'
import {
  readClocks,
  readElementDots,
  readTombstone,
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
  /**
   * Whether to keep an exact element count under the size key, so {@link KvBigset.size} is one
   * read. Each write then also reads the touched elements' keys and the count (seeks, whatever
   * the set's size). Without it, `size()` counts by walking the whole set.
   * @default false
   */
  readonly trackSize?: boolean
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
      const live = await this.#liveDots(
        clocks,
        ops.map((op) => op.element),
        this.#options.supersedeLocal === true,
      )
      let withCtx = ops
      if (this.#options.supersedeLocal === true) {
        withCtx = ops.map((op) => ({
          element: op.element,
          ctx: normalizeDots([...(op.ctx ?? []), ...(live?.get(op.element) ?? [])]),
        }))
      }
      return this.#write(planInsert(this.keys, clocks, actor, withCtx, this.#planOptions(live)))
    })
  }

  /** Removes the observed dots of elements; returns the plan, whose `delta` must ship. */
  remove(ops: readonly ElementOp[]): Promise<RemovePlan> {
    return this.#serially(async () => {
      const clocks = await this.clocks()
      const live = await this.#liveDots(
        clocks,
        ops.map((op) => op.element),
      )
      return this.#write(planRemove(this.keys, clocks, ops, this.#planOptions(live)))
    })
  }

  /** Applies a delta shipped by a replica (idempotent, any order). */
  apply(delta: BigsetDelta): Promise<WritePlan> {
    return this.#serially(async () => {
      const clocks = await this.clocks()
      const elements = [...delta.adds, ...delta.removes].map((op) => op.element)
      const live = await this.#liveDots(clocks, elements)
      return this.#write(planApplyDelta(this.keys, clocks, delta, this.#planOptions(live)))
    })
  }

  /**
   * The number of elements: one read with `trackSize`, otherwise a walk over the whole set
   * (exact either way, as of this replica).
   */
  async size(): Promise<number> {
    if (this.#options.trackSize === true) return decodeSetSize(await this.kv.get(this.keys.size))
    let n = 0
    for await (const _ of this.scan()) n++
    return n
  }

  /** The element's live dots (its context for a later remove or add); empty when absent. */
  async has(element: string): Promise<Dot[]> {
    return readElementDots(this.kv, this.keys, element, await readTombstone(this.kv, this.keys))
  }

  /** This replica's view of one element, for merging with other replicas' views. */
  async replicaHas(element: string): Promise<ReplicaElement & { readonly dots: Dot[] }> {
    const { clock, tombstone } = await this.clocks()
    return { clock, dots: await readElementDots(this.kv, this.keys, element, tombstone) }
  }

  /** The elements in order, streamed from the store. */
  async *scan(options: ScanOptions = {}): AsyncGenerator<SetEntry> {
    yield* scanEntries(this.kv, this.keys, await readTombstone(this.kv, this.keys), options)
  }

  /**
   * This replica's ordered stream with its set-clock, for {@link mergeReplicaStreams}. It takes
   * no limit: elements one replica has may be removed in the merge, so the limit belongs there.
   */
  async replicaEntries(options: Pick<ScanOptions, 'from' | 'after'> = {}): Promise<ReplicaEntries> {
    const { clock, tombstone } = await this.clocks()
    const range = { from: options.from, after: options.after }
    return { clock, entries: scanEntries(this.kv, this.keys, tombstone, range) }
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
      if (!hasSeen(passStart, k.dot)) continue
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

  // The live dots of the touched elements, read only when counting or superseding.
  async #liveDots(
    clocks: BigsetClocks,
    elements: readonly string[],
    needed = false,
  ): Promise<Map<string, Dot[]> | undefined> {
    if (!needed && this.#options.trackSize !== true) return undefined
    const live = new Map<string, Dot[]>()
    for (const element of new Set(elements)) {
      live.set(element, await readElementDots(this.kv, this.keys, element, clocks.tombstone))
    }
    return live
  }

  #planOptions(live: Map<string, Dot[]> | undefined): PlanOptions {
    return this.#options.trackSize === true ? { ...this.#options, live } : this.#options
  }

  async #write<P extends WritePlan>(plan: P): Promise<P> {
    const writes = plan.writes
    if (plan.sizeDelta !== undefined && plan.sizeDelta !== 0) {
      const size = decodeSetSize(await this.kv.get(this.keys.size)) + plan.sizeDelta
      writes.push({ type: 'put', key: this.keys.size, value: encodeSetSize(size) })
    }
    if (writes.length > 0) await this.kv.batch(writes)
    return plan
  }

  #serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task)
    this.#queue = run.catch(() => undefined)
    return run
  }
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** The stored form of an element count: ASCII decimal (so Redis `INCRBY` works on it too). */
export function encodeSetSize(size: number): Uint8Array {
  return encoder.encode(String(size))
}

/** Reads a stored element count; an absent key is 0. */
export function decodeSetSize(bytes: Uint8Array | undefined): number {
  if (bytes === undefined) return 0
  const n = Number(decoder.decode(bytes))
  if (!Number.isSafeInteger(n) || n < 0) throw new CausewayError('INTERNAL', 'corrupt bigset size')
  return n
}

/** Convenience for tests and tools: the whole set as sorted elements (loads it: small sets only). */
export async function collectElements(entries: AsyncIterable<SetEntry>): Promise<string[]> {
  const out: string[] = []
  for await (const e of entries) out.push(e.element)
  return out
}
