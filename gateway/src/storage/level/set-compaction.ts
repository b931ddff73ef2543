/**
 * Which covered element keys of a LevelDB replica's sets get deleted, and when (the paper's
 * section 4.3.3). A remove writes clocks only: its dots go into the set-tombstone, which hides
 * their keys. A later commit deletes the keys and drops their dots from the tombstone
 * (`SetCommit.compact`), never rewriting the set. This module collects the keys and asks the
 * replica for that commit (`requestCommit`):
 * - targeted: a short while after a remove, the keys its contexts named (removes within that
 *   time share one commit);
 * - keys a scan walked over;
 * - a full pass over one set ({@link SetCompaction.pass}): every covered key, from a snapshot,
 *   handed over in chunks, then the whole tombstone the pass started with;
 * - when the replica opens, full passes over the sets a previous run left a tombstone in: their
 *   targets were only in that run's memory.
 */
import {
  decodeClock,
  hasSeen,
  isEmptyClock,
  scanRange,
  setNameOfKey,
  storedElementKeys,
  type BigsetDelta,
  type BigsetKeys,
  type DotClock,
  type ElementKey,
} from '@causeway/core'
import {
  SET_NAMESPACE,
  SET_NAMESPACE_END,
  SnapshotKv,
  fromStoreString,
  levelSetKeys,
  toStoreString,
} from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'

/** What waits for compaction in one set. */
export interface Targets {
  /** Covered keys, by their store key. */
  readonly covered: Map<string, ElementKey>
  /** Set when a full pass met every covered key of this tombstone: trim all of it. */
  passStart?: DotClock
}

/** Options of {@link SetCompaction}. */
export interface SetCompactionOptions {
  db: StringLevel
  /** Asks the replica to run a commit soon, which plans what {@link SetCompaction.take} gives. */
  requestCommit: () => Promise<void>
  /** How long after a remove its keys are compacted, in ms. @default 50 */
  delayMs?: number
  /** Told about failed background work (the next pass or remove retries it). */
  onError?: (error: unknown) => void
}

/** Most covered keys kept for targeted compaction; the rest wait for a scan or a pass. */
const MAX_TARGETS = 100_000
/** Keys a full pass hands to one commit. */
const PASS_CHUNK = 1000
const NO_TARGETS: ReadonlyMap<string, Targets> = new Map()

/** The compaction of one replica's sets (see the module comment). */
export class SetCompaction {
  readonly #db: StringLevel
  readonly #requestCommit: () => Promise<void>
  readonly #delayMs: number
  readonly #onError: (error: unknown) => void
  /** Covered keys waiting, per set name. */
  readonly #targets = new Map<string, Targets>()
  #count = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  /** Bumped by `opened` and `close`: a pass of an older run stops. */
  #run = 0

  constructor(options: SetCompactionOptions) {
    this.#db = options.db
    this.#requestCommit = options.requestCommit
    this.#delayMs = options.delayMs ?? 50
    this.#onError = options.onError ?? (() => {})
  }

  /** Whether anything waits for a commit. */
  get waiting(): boolean {
    return this.#targets.size > 0
  }

  /** After an entry of set `name`: the keys its contexts moved into `tombstone` wait. */
  removed(name: string, keys: BigsetKeys, delta: BigsetDelta, tombstone: DotClock): void {
    let added = false
    for (const op of [...delta.adds, ...delta.removes]) {
      for (const dot of op.ctx) {
        if (hasSeen(tombstone, dot) && this.#add(name, keys, { element: op.element, dot }))
          added = true
      }
    }
    if (added) this.#schedule()
  }

  /** A scan of set `name` walked over a covered key. */
  covered(name: string, keys: BigsetKeys, key: ElementKey): void {
    if (this.#add(name, keys, key)) this.#schedule()
  }

  /** What waits, for the commit being planned (which owns it from now on). */
  take(): ReadonlyMap<string, Targets> {
    if (this.#targets.size === 0) return NO_TARGETS
    const taken = new Map(this.#targets)
    this.#targets.clear()
    this.#count = 0
    return taken
  }

  /**
   * A full pass over set `name`: walks every element key once (from a snapshot), hands the
   * covered ones over in chunks, then the tombstone the pass started with.
   */
  pass(name: string): Promise<{ deleted: number }> {
    return this.#pass(name, this.#run)
  }

  /**
   * The replica opened: in the background, a pass over each set whose tombstone is not empty,
   * one set at a time. Finding them skips from set to set (a seek and a read per set).
   * @returns the background work, settled when it is done or stopped (errors go to `onError`).
   */
  opened(): Promise<void> {
    const run = ++this.#run
    return this.#recover(run).catch(this.#onError)
  }

  /** Stops passes and drops what waits (the replica is closing; covered keys stay hidden). */
  close(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#targets.clear()
    this.#count = 0
    this.#run++
  }

  async #recover(run: number): Promise<void> {
    // A moment after opening, so the first requests do not queue behind it.
    await new Promise((resolve) => setTimeout(resolve, this.#delayMs).unref?.())
    let from = SET_NAMESPACE
    while (this.#run === run) {
      const [key] = await this.#db.keys({ gte: from, lt: SET_NAMESPACE_END, limit: 1 }).all()
      if (key === undefined || this.#run !== run) return
      const name = setNameOfKey(fromStoreString(key), SET_NAMESPACE)
      if (name === undefined) return // not a set key: nothing of ours past it
      const keys = levelSetKeys(name)
      from = toStoreString(keys.setEnd)
      const tombstone = await this.#db.get(toStoreString(keys.tombstone))
      if (this.#run !== run || isEmptyClock(decodeClock(fromStoreString(tombstone)))) continue
      await this.#pass(name, run)
    }
  }

  // Stops early when the replica closes (`run` is over): the rest stays hidden.
  async #pass(name: string, run: number): Promise<{ deleted: number }> {
    const keys = levelSetKeys(name)
    const snapshot = this.#db.snapshot()
    let deleted = 0
    try {
      const kv = new SnapshotKv(this.#db, snapshot)
      const passStart = decodeClock(await kv.get(keys.tombstone))
      if (isEmptyClock(passStart)) return { deleted: 0 }
      let chunk = 0
      for await (const k of storedElementKeys(kv, keys, scanRange(keys))) {
        if (this.#run !== run) return { deleted }
        if (!hasSeen(passStart, k.dot)) continue
        if (this.#add(name, keys, k, true)) chunk++
        deleted++
        if (chunk >= PASS_CHUNK) {
          chunk = 0
          await this.#requestCommit()
        }
      }
      if (this.#run !== run) return { deleted }
      this.#targetsOf(name).passStart = passStart
      await this.#requestCommit()
      return { deleted }
    } finally {
      await snapshot.close()
    }
  }

  // A pass hands over every key it meets (chunks bound it); the others stop at MAX_TARGETS.
  #add(name: string, keys: BigsetKeys, k: ElementKey, pass = false): boolean {
    if (!pass && this.#count >= MAX_TARGETS) return false
    const targets = this.#targetsOf(name)
    const storeKey = toStoreString(keys.element(k.element, k.dot))
    if (targets.covered.has(storeKey)) return false
    targets.covered.set(storeKey, { element: k.element, dot: k.dot })
    this.#count++
    return true
  }

  #targetsOf(name: string): Targets {
    let targets = this.#targets.get(name)
    if (targets === undefined) this.#targets.set(name, (targets = { covered: new Map() }))
    return targets
  }

  #schedule(): void {
    if (this.#timer !== undefined) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      if (this.#targets.size > 0) this.#requestCommit().catch(this.#onError)
    }, this.#delayMs)
    this.#timer.unref?.()
  }
}
