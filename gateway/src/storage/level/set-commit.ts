/**
 * The set side of one replica commit: its set entries planned in order, then the compaction that
 * waits, each with core's planners against the sets as the commit's earlier plans left them.
 *
 * - A set's head (`set-head.ts`) comes from the head cache or, once per commit, from the store.
 * - An element's live dots are read from the store the first time the commit touches the element
 *   (one seek, whatever the set's size; the seeks of a commit share an iterator), and afterwards
 *   taken from the previous plan (`WritePlan.live`). They keep the count exact and let an add
 *   supersede the element's live dots.
 *
 * Nothing else writes the store while a commit plans (the replica's commit queue is the only
 * writer), so what it reads is what its batch applies to.
 */
import {
  hasSeen,
  planApplyDelta,
  planCompaction,
  type BigsetDelta,
  type BigsetKeys,
  type DotClock,
  type Dot,
  type ElementKey,
  type Hlc,
  type KvWrite,
  type WritePlan,
} from '@causeway/core'
import type { AbstractKeyIterator } from 'abstract-level'
import { advanceStamp, type SetWrite } from '../set-replica.js'
import { deltaElements, planLocalWrite } from '../set-writes.js'
import {
  SET_NAMESPACE_END,
  elementRange,
  keysBefore,
  levelSetKeys,
  liveDots,
  toStoreString,
  type StoreOp,
  type StoreRange,
} from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import type { SetHeadCache } from './set-head-cache.js'
import { countAndStampOps, readHead, type SetHead } from './set-head.js'

/** What an entry changes: a leader's write to plan (Algorithm 1) or a received delta (Algorithm 2). */
export type SetChange =
  { readonly write: SetWrite; readonly actor: number } | { readonly delta: BigsetDelta }

/** The log position and time of an entry: what its set's stamp advances by. */
export interface SetEntryStamp {
  readonly origin: number
  readonly idx: number
  readonly ts: Hlc
}

/** A set while the commit plans. */
interface Working {
  head: SetHead
  /** Whether an entry (not only compaction) wrote it: its count and stamp are written too. */
  written: boolean
  /** The live dots of the elements the commit touched, as its last plan left them. */
  readonly live: Map<string, readonly Dot[]>
}

/** Plans the set writes of one commit (see the module comment). */
export class SetCommit {
  readonly #db: StringLevel
  readonly #regions: number
  readonly #cache: SetHeadCache
  readonly #sets = new Map<string, Working>()
  /** The batch so far: a value, or `null` for a delete. */
  readonly #ops = new Map<string, string | null>()
  #iterator: { keys: AbstractKeyIterator<StringLevel, string>; from: string } | undefined

  constructor(db: StringLevel, regions: number, cache: SetHeadCache) {
    this.#db = db
    this.#regions = regions
    this.#cache = cache
  }

  /**
   * Plans one entry of set `name`. Returns the delta it applies (what a leader's write ships), and
   * the set's keys and tombstone after it.
   */
  async entry(
    name: string,
    at: SetEntryStamp,
    change: SetChange,
  ): Promise<{ delta: BigsetDelta; keys: BigsetKeys; tombstone: DotClock }> {
    const set = await this.#working(name)
    const { keys, clocks } = set.head
    let plan: WritePlan & { delta: BigsetDelta }
    if ('write' in change) {
      const elements = change.write.elements.map((e) => e.element)
      const live = await this.#liveOf(set, elements)
      plan = planLocalWrite(keys, clocks, change.write, live, change.actor)
    } else {
      const live = await this.#liveOf(set, deltaElements(change.delta))
      plan = { ...planApplyDelta(keys, clocks, change.delta, { live }), delta: change.delta }
    }
    this.#write(plan.writes)
    for (const [element, dots] of plan.live ?? []) set.live.set(element, dots)
    set.head = {
      keys,
      clocks: plan.clocks,
      size: set.head.size + (plan.sizeDelta ?? 0),
      stamp: advanceStamp(set.head.stamp, at.origin, at.idx, at.ts),
    }
    set.written = true
    return { delta: plan.delta, keys, tombstone: plan.clocks.tombstone }
  }

  /**
   * Plans the deletion of covered element keys of set `name` and trims its tombstone; with
   * `passStart`, a full pass met every covered key of that tombstone, so all of it goes.
   */
  async compact(name: string, covered: readonly ElementKey[], passStart?: DotClock): Promise<void> {
    const set = await this.#working(name)
    const { keys, clocks, size, stamp } = set.head
    // Keys met during a walk are covered unless compacted since (tombstones only lose dots so).
    const still = covered.filter((k) => hasSeen(clocks.tombstone, k.dot))
    if (still.length === 0 && passStart === undefined) return
    const plan = planCompaction(keys, clocks.tombstone, still, passStart && { passStart })
    this.#write(plan.writes)
    set.head = { keys, clocks: { clock: clocks.clock, tombstone: plan.tombstone }, size, stamp }
  }

  /** The commit's store operations, and the head of every set it planned for. */
  finish(): { ops: StoreOp[]; heads: Map<string, SetHead> } {
    const heads = new Map<string, SetHead>()
    for (const [name, set] of this.#sets) {
      heads.set(name, set.head)
      if (set.written) for (const op of countAndStampOps(set.head)) this.#ops.set(op.key, op.value)
    }
    const ops: StoreOp[] = []
    for (const [key, value] of this.#ops)
      ops.push(value === null ? { type: 'del', key } : { type: 'put', key, value })
    return { ops, heads }
  }

  /** Releases the commit's iterator; call once planning is over, whether it succeeded or not. */
  close(): void {
    // Not awaited: the batch need not wait for it (the store closes what is left open).
    this.#iterator?.keys.close().catch(() => {})
    this.#iterator = undefined
  }

  async #working(name: string): Promise<Working> {
    let set = this.#sets.get(name)
    if (set === undefined) {
      const head =
        this.#cache.get(name)?.head ?? (await readHead(this.#db, levelSetKeys(name), this.#regions))
      set = { head, written: false, live: new Map() }
      this.#sets.set(name, set)
    }
    return set
  }

  // The live dots of `elements` before the entry being planned.
  async #liveOf(set: Working, elements: readonly string[]): Promise<Map<string, readonly Dot[]>> {
    const { keys, clocks } = set.head
    const live = new Map<string, readonly Dot[]>()
    for (const element of elements) {
      let dots = set.live.get(element)
      if (dots === undefined) {
        const stored = await this.#storedKeys(elementRange(keys, element))
        set.live.set(element, (dots = liveDots(keys, stored, clocks.tombstone)))
      }
      live.set(element, dots)
    }
    return live
  }

  // The store's keys in `range`, on the commit's one iterator. It opens at the first range (the
  // store seeks off the main thread then; a later `seek` runs on it) and again when a range lies
  // before where it opened (a seek there would end it).
  #storedKeys(range: StoreRange): Promise<string[]> {
    if (this.#iterator === undefined || range.gte < this.#iterator.from) {
      this.#iterator?.keys.close().catch(() => {})
      const keys = this.#db.keys({ gte: range.gte, lt: SET_NAMESPACE_END })
      this.#iterator = { keys, from: range.gte }
    } else {
      this.#iterator.keys.seek(range.gte)
    }
    return keysBefore(this.#iterator.keys, range.lt)
  }

  #write(writes: readonly KvWrite[]): void {
    for (const w of writes) {
      const key = toStoreString(w.key)
      this.#ops.set(key, w.type === 'put' ? toStoreString(w.value) : null)
    }
  }
}
