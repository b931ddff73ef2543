/**
 * The sets of a {@link LevelPartitionReplica} (see `../set-replica.ts`): Bigsets keys in the
 * replica's own LevelDB keyspace (`level-set-kv.ts`), written by the replica's commit queue so a
 * set write, its log entry and `sv` land in one atomic batch.
 *
 * Per set, under `BigsetKeys.forSet(name, 'b/')`: the set-clock (`c`), the set-tombstone (`d`),
 * one empty-valued key per (element, dot) (`e…`), the exact element count (`n`, ASCII decimal)
 * and the stamp (`v`, JSON `{ seen, ts }`).
 *
 * Writes, in the replica's commit (so nothing else writes the store in between): each set entry
 * is planned against the clocks as the commit's earlier entries left them (`CommitKv`):
 * - a local write (`stage` registered it when the leader accepted it) runs Algorithm 1; an add
 *   supersedes the element's dots live at the leader, so re-adding keeps one key per element, and
 *   a remove without a context removes the dots live at the leader;
 * - a shipped or replicated entry runs Algorithm 2 on its delta.
 * Every write reads the touched elements' keys (one seek each, whatever the set's size) so the
 * element count stays exact, and updates the stamp.
 *
 * Removes only touch the clocks: a removed dot goes into the set-tombstone, which hides its key.
 * Compaction deletes covered keys and trims the tombstone, never rewriting the set: in the
 * background, a short while after the remove (targeted: the remove names the keys), during scans
 * (a scan reports the covered keys it walks over), on demand as a full pass over one set, and,
 * when the replica opens, as full passes over the sets a previous run left a tombstone in.
 *
 * Reads: `has` seeks the element's keys, usually in a long-lived iterator (`element-seeks.ts`),
 * and takes the tombstone and stamp from a cache the commits keep (`set-read-cache.ts`), whose
 * seqlock proves the seek saw that state; a snapshot only when a commit touching the set is
 * being written. `scan` and `stream` read one snapshot.
 */
import {
  BigsetKeys,
  CausewayError,
  checkElement,
  cloudSize,
  decodeClock,
  decodeSetSize,
  deltaToJSON,
  hasSeen,
  isEmptyClock,
  planApplyDelta,
  planCompaction,
  scanEntries,
  scanRange,
  storedElementKeys,
  type BigsetClocks,
  type BigsetDelta,
  type Dot,
  type DotClock,
  type ElementKey,
  type SetEntry,
  type WritePlan,
} from '@causeway/core'
import {
  advanceStamp,
  emptyStamp,
  setActor,
  type SetMembership,
  type SetReplicaStream,
  type SetScan,
  type SetScanOptions,
  type SetSize,
  type SetStamp,
  type SetWrite,
} from '../set-replica.js'
import { deltaElements, parseSetDelta, planLocalWrite } from '../set-writes.js'
import {
  CommitKv,
  SET_NAMESPACE,
  StoreKv,
  type StoreOp,
  type StringScope,
  fromStoreString,
  toStoreString,
} from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import { ElementSeeks } from './element-seeks.js'
import { SetReadCache, type CachedSetState, type SetReadCacheOptions } from './set-read-cache.js'

/** Options of {@link LevelSets}. */
export interface LevelSetsOptions {
  db: StringLevel
  region: number
  regions: number
  /** The replica's current epoch (dots are minted under `setActor(region, epoch)`). */
  epoch: () => number
  /** Asks the replica to run a commit soon, so pending compaction is written. */
  requestCommit: () => Promise<void>
  /**
   * How long after a remove its covered keys are compacted, in ms (removes within that time share
   * one compaction batch).
   * @default 50
   */
  compactDelayMs?: number
  /** Told about failed background compactions (they are retried by the next one). */
  onError?: (error: unknown) => void
  /** Bounds of the in-memory tombstones and stamps `has` reads (`set-read-cache.ts`). */
  cache?: SetReadCacheOptions
}

/** The tag of the stamp key, after the codec's `c`/`d`/`e`/`n` (left to backends). */
const TAG_STAMP = 0x76 // 'v'
/** Most covered keys kept for targeted compaction per replica; the rest wait for a scan or pass. */
const MAX_TARGETS = 100_000
/** Keys a full compaction pass hands to one commit. */
const PASS_CHUNK = 1000
/** What `#takeTargets` returns when nothing waits for compaction. */
const NO_TARGETS: ReadonlyMap<string, Targets> = new Map()
/** Most sets whose written clocks, count and stamp a replica keeps for its next commits. */
const KNOWN_SETS = 256
/** Sets whose clocks hold more cloud dots than this are read from the store by each commit. */
const KNOWN_MAX_CLOUD = 4096

/** What a commit left a set's clocks, count and stamp at (all immutable values). */
interface KnownSet {
  readonly clocks: BigsetClocks
  readonly size: number
  readonly stamp: SetStamp
}

interface SetState {
  readonly keys: BigsetKeys
  readonly texts: SetKeyTexts
  clocks: BigsetClocks
  size: number
  stamp: SetStamp
  touched: boolean
}

interface Targets {
  /** Covered keys by their store key. */
  readonly covered: Map<string, ElementKey>
  /** Set when a full pass met every covered key of this tombstone: trim all of it. */
  passStart?: DotClock
}

/** A set's keys with the store strings of its fixed keys, encoded once per set name. */
interface SetKeyTexts {
  readonly keys: BigsetKeys
  readonly clock: string
  readonly tombstone: string
  readonly size: string
  readonly stamp: string
  /** The set's element keys. */
  readonly elements: StringScope
}

/** Most set names whose keys are kept encoded (shared by every replica of the process). */
const KEY_CACHE_LIMIT = 1024
/** Encoded keys by set name, least recently used first. */
const keyCache = new Map<string, SetKeyTexts>()

// A set's keys, from the cache: encoding a name's keys on every write and read costs more than
// the rest of planning a one-element add.
function setKeyTexts(name: string): SetKeyTexts {
  let texts = keyCache.get(name)
  if (texts !== undefined) {
    keyCache.delete(name)
    keyCache.set(name, texts)
    return texts
  }
  const keys = BigsetKeys.forSet(name, SET_NAMESPACE)
  texts = {
    keys,
    clock: toStoreString(keys.clock),
    tombstone: toStoreString(keys.tombstone),
    size: toStoreString(keys.size),
    stamp: toStoreString(stampKey(keys)),
    elements: { gte: toStoreString(keys.elementsStart), lt: toStoreString(keys.elementsEnd) },
  }
  keyCache.set(name, texts)
  if (keyCache.size > KEY_CACHE_LIMIT) keyCache.delete(keyCache.keys().next().value!)
  return texts
}

/** The keys of set `name` in a LevelDB replica (the same object while the name stays cached). */
export function levelSetKeys(name: string): BigsetKeys {
  return setKeyTexts(name).keys
}

/**
 * Parsed deltas of received entries, with the text they were parsed from. Committed entries are
 * frozen and shared by the replicas of the process, so each is parsed once, not once per replica.
 */
const parsedDeltas = new WeakMap<SetCommitEntry, { text: string; delta: BigsetDelta }>()

// The delta of a received entry; throws `INVALID_REQUEST` when malformed.
function receivedDelta(entry: SetCommitEntry): BigsetDelta {
  const text = entry.setDelta
  if (typeof text !== 'string')
    throw new CausewayError('INVALID_REQUEST', 'a set entry needs its delta')
  const parsed = parsedDeltas.get(entry)
  if (parsed !== undefined && parsed.text === text) return parsed.delta
  const delta = parseSetDelta(text)
  parsedDeltas.set(entry, { text, delta })
  return delta
}

function stampKey(keys: BigsetKeys): Uint8Array {
  const key = new Uint8Array(keys.prefix.length + 1)
  key.set(keys.prefix)
  key[keys.prefix.length] = TAG_STAMP
  return key
}

const decoder = new TextDecoder()

function decodeStamp(bytes: Uint8Array | undefined, regions: number): SetStamp {
  return decodeStoredStamp(bytes === undefined ? undefined : decoder.decode(bytes), regions)
}

// The stamp as stored: ASCII JSON, so its store string is its text.
function decodeStoredStamp(text: string | undefined, regions: number): SetStamp {
  if (text === undefined) return emptyStamp(regions)
  const parsed = JSON.parse(text) as SetStamp
  const seen = new Array<number>(regions).fill(0)
  parsed.seen.forEach((idx, d) => {
    if (d < regions) seen[d] = idx
  })
  return { seen, ts: parsed.ts }
}

function decodeStoredClock(text: string | undefined): DotClock {
  return decodeClock(text === undefined ? undefined : fromStoreString(text))
}

// The element count as stored: ASCII decimal (`encodeSetSize`), so its store string is its text.
function decodeStoredSize(text: string | undefined): number {
  if (text === undefined) return 0
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n < 0) throw new CausewayError('INTERNAL', 'corrupt bigset size')
  return n
}

/** Just past every set key: the namespace `b/` with its last byte incremented. */
const NAMESPACE_END = 'b0'
/** The set-tombstone's tag after a set's prefix (`BigsetKeys`). */
const TOMBSTONE_TAG = 'd'

// The prefix of the set a store key belongs to: the namespace, then the escaped name up to its
// terminator 00 01 (inside an escaped name a 00 is always followed by FF).
function setPrefixOf(key: string): string | undefined {
  if (!key.startsWith(SET_NAMESPACE)) return undefined
  const end = key.indexOf('\x00\x01', SET_NAMESPACE.length)
  return end < 0 ? undefined : key.slice(0, end + 2)
}

// The set name of a prefix from `setPrefixOf`.
function setNameOf(prefix: string): string {
  const escaped = prefix.slice(SET_NAMESPACE.length, -2).replaceAll('\x00\xff', '\x00')
  return Buffer.from(escaped, 'latin1').toString('utf8')
}

/** The store string of `keys.elementsStart`, per cached set. */
const elementsStarts = new WeakMap<BigsetKeys, string>()
// Whether the escaped UTF-8 of `element`, as latin1, is the element itself: ASCII without NUL.
function isPlain(element: string): boolean {
  for (let i = 0; i < element.length; i++) {
    const c = element.charCodeAt(i)
    if (c === 0 || c > 0x7f) return false
  }
  return true
}

// The store string of an element's first key, without encoding the common plain element.
function elementStartOf(keys: BigsetKeys, element: string): string {
  if (!isPlain(element)) return toStoreString(keys.elementStart(element))
  let prefix = elementsStarts.get(keys)
  if (prefix === undefined) elementsStarts.set(keys, (prefix = toStoreString(keys.elementsStart)))
  return prefix + element + '\x00\x01'
}

// Just past an element's keys, from its first key (whose last byte is the terminator 0x01).
function elementEndOf(start: string): string {
  return start.slice(0, -1) + '\x02'
}

// The live dots of an element from its keys (each its first key plus a 12-byte dot, as latin1
// code units: actor u32be, counter u64be), decoded straight from the strings.
function membership(
  stored: readonly string[],
  startLength: number,
  state: CachedSetState,
): SetMembership {
  const dots = liveDots(stored, startLength, state.tombstone)
  // A copy: the cached stamp is shared by every read until the next write.
  return { dots, stamp: { seen: [...state.stamp.seen], ts: state.stamp.ts } }
}

// The dots of an element's keys that `tombstone` has not seen.
function liveDots(stored: readonly string[], startLength: number, tombstone: DotClock): Dot[] {
  const dots: Dot[] = []
  for (const key of stored) {
    if (key.length !== startLength + 12)
      throw new CausewayError('INTERNAL', 'corrupt bigset key: not an element key of this set')
    const at = startLength
    const actor = u32(key, at)
    const counter = u32(key, at + 4) * 0x1_0000_0000 + u32(key, at + 8)
    const dot = { actor, counter }
    if (!hasSeen(tombstone, dot)) dots.push(dot)
  }
  return dots
}

function u32(text: string, at: number): number {
  return (
    text.charCodeAt(at) * 0x100_0000 +
    ((text.charCodeAt(at + 1) << 16) | (text.charCodeAt(at + 2) << 8) | text.charCodeAt(at + 3))
  )
}

/** The entries of a commit that are set writes: `key` (the set name) and `setDelta`. */
export interface SetCommitEntry {
  origin: number
  idx: number
  key: string
  ts: string
  /** Empty for a local write until its commit plans it. */
  setDelta?: string
}

/** The sets of one LevelDB replica: planning inside commits, reads, compaction. */
export class LevelSets {
  readonly #db: StringLevel
  readonly #region: number
  readonly #regions: number
  readonly #epoch: () => number
  readonly #requestCommit: () => Promise<void>
  readonly #compactDelayMs: number
  readonly #onError: (error: unknown) => void
  /** Local writes accepted by the leader and not yet planned. */
  readonly #staged = new WeakMap<SetCommitEntry, SetWrite>()
  /** Covered keys waiting for compaction, per set name. */
  readonly #targets = new Map<string, Targets>()
  #targetCount = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  /** Tombstones and stamps for `has`, kept by the commits (`set-read-cache.ts`). */
  readonly #cache: SetReadCache
  /** Long-lived iterators `has` seeks in (`element-seeks.ts`). */
  readonly #seeks: ElementSeeks
  /**
   * The sets' state as this replica's last commits wrote it, least recently used first. Only
   * commits write set keys, so a commit plans against these instead of reading and decoding the
   * clocks again. A commit takes out the sets it loads and `committed` puts them back, so a
   * commit that fails to write leaves the next one to read the store.
   */
  readonly #known = new Map<string, KnownSet>()
  /** The sets of the commit being written, for `#known` and the read cache once it is. */
  #written: Map<string, SetState> | undefined
  /** Bumped by `opened` and `close`: a recovery pass of an older run stops. */
  #run = 0

  constructor(options: LevelSetsOptions) {
    this.#db = options.db
    this.#region = options.region
    this.#regions = options.regions
    this.#epoch = options.epoch
    this.#requestCommit = options.requestCommit
    this.#compactDelayMs = options.compactDelayMs ?? 50
    this.#onError = options.onError ?? (() => {})
    this.#cache = new SetReadCache(options.cache)
    this.#seeks = new ElementSeeks(this.#db, this.#cache)
  }

  /** Sets whose tombstone and stamp are cached now (tests). */
  get cachedSets(): number {
    return this.#cache.size
  }

  /** Registers a local write for its commit (the leader validated it with `checkSetWrite`). */
  stage(entry: SetCommitEntry, write: SetWrite): void {
    this.#staged.set(entry, write)
  }

  /** Validates a received entry's delta; throws `INVALID_REQUEST` when malformed. */
  check(entry: SetCommitEntry): void {
    if (this.#staged.has(entry)) return
    receivedDelta(entry)
  }

  /** Cancels a scheduled compaction (the replica is closing; covered keys stay hidden). */
  close(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#seeks.close()
    this.#cache.clear()
    this.#known.clear()
    this.#written = undefined
    this.#run++
  }

  /**
   * The replica opened: in the background, finds the sets whose tombstone is not empty and runs
   * a compaction pass over each ({@link compact}), one set at a time. Their covered keys were
   * remembered only in memory by the process that removed them (or were never met by a scan),
   * so after a restart nothing else would delete them. Finding them skips from set to set (one
   * seek and one read per set, never walking a set's elements); each pass hands at most
   * `PASS_CHUNK` deletions to one commit, so writes wait at most one small batch.
   * @returns the background work, settled when it is done or stopped (errors go to `onError`).
   */
  opened(): Promise<void> {
    const run = ++this.#run
    this.#known.clear()
    return this.#recover(run).catch(this.#onError)
  }

  async #recover(run: number): Promise<void> {
    // A moment after opening, so the first requests do not queue behind it.
    await new Promise((resolve) => setTimeout(resolve, this.#compactDelayMs).unref?.())
    let from = SET_NAMESPACE
    while (this.#run === run) {
      const [key] = await this.#db.keys({ gte: from, lt: NAMESPACE_END, limit: 1 }).all()
      if (key === undefined || this.#run !== run) return
      const prefix = setPrefixOf(key)
      if (prefix === undefined) return // not a set key: nothing of ours past it
      from = prefix + '\xff' // the next set's keys start past this one's
      const tombstone = await this.#db.get(prefix + TOMBSTONE_TAG)
      if (tombstone === undefined || this.#run !== run) continue
      if (isEmptyClock(decodeClock(fromStoreString(tombstone)))) continue
      await this.#compact(setNameOf(prefix), run)
    }
  }

  /**
   * Plans the set entries of one commit, in order, plus any pending compaction, and returns the
   * store operations. Fills in `setDelta` of local writes. Must run inside the replica's commit:
   * no other write may reach the store until these operations are written, and the replica
   * calls {@link committed} once they are (before acknowledging anything of the commit).
   */
  async commitOps(entries: readonly SetCommitEntry[]): Promise<StoreOp[]> {
    // Nothing to plan and no compaction waiting: no set changes, so the cache has nothing to hear.
    if (entries.length === 0 && this.#targets.size === 0) return []
    const kv = new CommitKv(this.#db)
    try {
      return await this.#planCommit(kv, entries)
    } finally {
      kv.close()
    }
  }

  async #planCommit(kv: CommitKv, entries: readonly SetCommitEntry[]): Promise<StoreOp[]> {
    const states = new Map<string, SetState>()
    const load = async (name: string): Promise<SetState> => {
      let state = states.get(name)
      if (state === undefined) {
        const texts = setKeyTexts(name)
        const known = this.#known.get(name)
        if (known !== undefined) {
          this.#known.delete(name)
          state = { keys: texts.keys, texts, ...known, touched: false }
          states.set(name, state)
          return state
        }
        const [clock, tombstone, size, stamp] = await kv.getTexts([
          texts.clock,
          texts.tombstone,
          texts.size,
          texts.stamp,
        ])
        state = {
          keys: texts.keys,
          texts,
          clocks: { clock: decodeStoredClock(clock), tombstone: decodeStoredClock(tombstone) },
          size: decodeStoredSize(size),
          stamp: decodeStoredStamp(stamp, this.#regions),
          touched: false,
        }
        states.set(name, state)
      }
      return state
    }

    // Taken before planning: this commit's own removes are compacted by a later one, so a remove
    // stays a write of clocks only.
    const pending = this.#takeTargets()
    let targeted = false
    for (const entry of entries) {
      const state = await load(entry.key)
      const plan = await this.#plan(kv, state, entry)
      await kv.batch(plan.writes)
      state.clocks = plan.clocks
      state.size += plan.sizeDelta ?? 0
      state.stamp = advanceStamp(state.stamp, entry.origin, entry.idx, entry.ts)
      state.touched = true
      if (this.#target(entry.key, plan.delta, plan.clocks.tombstone)) targeted = true
    }

    for (const [name, targets] of pending) {
      const state = await load(name)
      const covered = [...targets.covered.values()].filter((k) =>
        hasSeen(state.clocks.tombstone, k.dot),
      )
      if (covered.length === 0 && targets.passStart === undefined) continue
      const options = targets.passStart === undefined ? {} : { passStart: targets.passStart }
      const plan = planCompaction(state.keys, state.clocks.tombstone, covered, options)
      await kv.batch(plan.writes)
      state.clocks = { clock: state.clocks.clock, tombstone: plan.tombstone }
    }

    for (const state of states.values()) {
      if (!state.touched) continue
      kv.putStoreText(state.texts.size, String(state.size))
      kv.putStoreText(state.texts.stamp, JSON.stringify(state.stamp))
    }
    if (targeted) this.#scheduleCompaction()
    const ops = kv.ops()
    // From here until `committed`, `has` reads these sets from a snapshot.
    this.#cache.starting(states.keys())
    this.#written = states
    return ops
  }

  /** The operations of the last {@link commitOps} are written (and about to be acknowledged). */
  committed(): void {
    const written = this.#written
    this.#written = undefined
    if (written === undefined) return
    this.#remember(written)
    const cached = new Map<string, CachedSetState>()
    for (const [name, state] of written)
      cached.set(name, { tombstone: state.clocks.tombstone, stamp: state.stamp })
    this.#cache.finished(cached)
    this.#seeks.closeExpired()
  }

  #remember(states: ReadonlyMap<string, SetState>): void {
    for (const [name, { clocks, size, stamp }] of states) {
      this.#known.delete(name)
      if (cloudSize(clocks.clock) + cloudSize(clocks.tombstone) > KNOWN_MAX_CLOUD) continue
      this.#known.set(name, { clocks, size, stamp })
      if (this.#known.size > KNOWN_SETS) this.#known.delete(this.#known.keys().next().value!)
    }
  }

  async #plan(
    kv: CommitKv,
    state: SetState,
    entry: SetCommitEntry,
  ): Promise<WritePlan & { delta: BigsetDelta }> {
    const staged = this.#staged.get(entry)
    if (staged === undefined) {
      const delta = receivedDelta(entry)
      const live = await this.#live(kv, state, deltaElements(delta))
      return { ...planApplyDelta(state.keys, state.clocks, delta, { live }), delta }
    }
    this.#staged.delete(entry)
    const live = await this.#live(
      kv,
      state,
      staged.elements.map((e) => e.element),
    )
    const actor = setActor(this.#region, this.#epoch())
    const plan = planLocalWrite(state.keys, state.clocks, staged, live, actor)
    entry.setDelta = JSON.stringify(deltaToJSON(plan.delta))
    return plan
  }

  // The live dots of each touched element, before the write (one seek per element).
  async #live(
    kv: CommitKv,
    state: SetState,
    elements: readonly string[],
  ): Promise<Map<string, Dot[]>> {
    const live = new Map<string, Dot[]>()
    for (const element of elements) {
      if (live.has(element)) continue
      checkElement(element)
      // The element's keys as store strings, their dots decoded from the strings (no bytes).
      const start = elementStartOf(state.keys, element)
      const stored = await kv.keyTexts(start, elementEndOf(start), state.texts.elements)
      live.set(element, liveDots(stored, start.length, state.clocks.tombstone))
    }
    return live
  }

  // Remembers the keys a delta's contexts moved into the tombstone, for targeted compaction.
  #target(name: string, delta: BigsetDelta, tombstone: DotClock): boolean {
    let added = false
    const keys = levelSetKeys(name)
    const ops = [...delta.adds, ...delta.removes]
    for (const op of ops) {
      for (const d of op.ctx) {
        if (this.#targetCount >= MAX_TARGETS) return added
        if (!hasSeen(tombstone, d)) continue
        added = this.#addTarget(name, keys, { element: op.element, dot: d }) || added
      }
    }
    return added
  }

  #addTarget(name: string, keys: BigsetKeys, k: ElementKey): boolean {
    let targets = this.#targets.get(name)
    if (targets === undefined) this.#targets.set(name, (targets = { covered: new Map() }))
    const storeKey = toStoreString(keys.element(k.element, k.dot))
    if (targets.covered.has(storeKey)) return false
    targets.covered.set(storeKey, k)
    this.#targetCount++
    return true
  }

  #takeTargets(): ReadonlyMap<string, Targets> {
    if (this.#targets.size === 0) return NO_TARGETS // most commits: no copy
    const taken = new Map(this.#targets)
    this.#targets.clear()
    this.#targetCount = 0
    return taken
  }

  #scheduleCompaction(): void {
    if (this.#timer !== undefined) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      if (this.#targets.size > 0) this.#requestCommit().catch(this.#onError)
    }, this.#compactDelayMs)
    this.#timer.unref?.()
  }

  // ---- reads ----

  /**
   * See `ReplicaSets.has`: the element's keys (one seek) with the set's tombstone and stamp as of
   * the same state. Usually the tombstone and stamp come from the cache and the seek is the only
   * read: the cache's seqlock proves no commit touched the set meanwhile. While one is being
   * written, or when a commit touched the set during the seek, all is read from one snapshot.
   */
  async has(name: string, element: string): Promise<SetMembership> {
    checkElement(element)
    const seen = this.#cache.observe(name, () => levelSetKeys(name))
    if (seen === undefined) return this.#hasAtSnapshot(name, element)
    const { keys } = seen
    const start = elementStartOf(keys, element)
    const range = { gte: start, lt: elementEndOf(start) }
    if (seen.state !== undefined) {
      // In the same tick as `observe`: a pooled iterator serves only if its view is this state.
      const pooled = await this.#seeks.keys(name, range.gte, range.lt)
      if (pooled !== undefined) return membership(pooled, start.length, seen.state)
      const stored = await this.#db.keys(range).all()
      if (!this.#cache.unchanged(name, seen.ticket)) return this.#hasAtSnapshot(name, element)
      return membership(stored, start.length, seen.state)
    }
    const [[tombstone, stamp], stored] = await Promise.all([
      new StoreKv(this.#db).getMany([keys.tombstone, stampKey(keys)]),
      this.#db.keys(range).all(),
    ])
    if (!this.#cache.unchanged(name, seen.ticket)) return this.#hasAtSnapshot(name, element)
    const state = { tombstone: decodeClock(tombstone), stamp: decodeStamp(stamp, this.#regions) }
    this.#cache.remember(name, seen, state)
    return membership(stored, start.length, state)
  }

  // `has` from one snapshot: the element's keys, the tombstone and the stamp.
  async #hasAtSnapshot(name: string, element: string): Promise<SetMembership> {
    const keys = levelSetKeys(name)
    const start = toStoreString(keys.elementStart(element))
    const snapshot = this.#db.snapshot()
    try {
      // Both reads at once, from one snapshot: the clocks and the element's own keys (a seek).
      const [[tombstone, stamp], stored] = await Promise.all([
        new StoreKv(this.#db, snapshot).getMany([keys.tombstone, stampKey(keys)]),
        this.#db.keys({ gte: start, lt: elementEndOf(start), snapshot }).all(),
      ])
      const state = { tombstone: decodeClock(tombstone), stamp: decodeStamp(stamp, this.#regions) }
      return membership(stored, start.length, state)
    } finally {
      await snapshot.close()
    }
  }

  /** See `ReplicaSets.size`. */
  async size(name: string): Promise<SetSize> {
    const keys = levelSetKeys(name)
    const [size, stamp] = await new StoreKv(this.#db).getMany([keys.size, stampKey(keys)])
    return { size: decodeSetSize(size), stamp: decodeStamp(stamp, this.#regions) }
  }

  /**
   * See `ReplicaSets.scan`: one snapshot for the whole walk, so the stamp matches what it
   * returned. Covered keys met on the way are handed to compaction.
   */
  scan(name: string, options: SetScanOptions = {}): SetScan {
    const keys = levelSetKeys(name)
    scanRange(keys, options) // validates from/after before anything is opened
    let stamp: SetStamp | undefined
    const walk = async function* (this: LevelSets): AsyncGenerator<SetEntry> {
      const snapshot = this.#db.snapshot()
      const kv = new StoreKv(this.#db, snapshot)
      let met = false
      try {
        const [tombstone, stampBytes] = await kv.getMany([keys.tombstone, stampKey(keys)])
        stamp = decodeStamp(stampBytes, this.#regions)
        const onCovered = (k: ElementKey) => {
          if (this.#targetCount < MAX_TARGETS && this.#addTarget(name, keys, k)) met = true
        }
        yield* scanEntries(kv, keys, decodeClock(tombstone), { ...options, onCovered })
      } finally {
        await snapshot.close()
        if (met) this.#scheduleCompaction()
      }
    }
    return {
      [Symbol.asyncIterator]: () => walk.call(this),
      stamp: async () => {
        if (stamp !== undefined) return stamp
        // Not iterated: the stamp as of now covers the nothing it returned.
        const [bytes] = await new StoreKv(this.#db).getMany([stampKey(keys)])
        return decodeStamp(bytes, this.#regions)
      },
    }
  }

  /** See `ReplicaSets.stream`: the set-clock and entries from one snapshot. */
  async stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'> = {},
  ): Promise<SetReplicaStream> {
    const keys = levelSetKeys(name)
    const snapshot = this.#db.snapshot()
    const kv = new StoreKv(this.#db, snapshot)
    try {
      const [clock, tombstone, stampBytes] = await kv.getMany([
        keys.clock,
        keys.tombstone,
        stampKey(keys),
      ])
      const stamp = decodeStamp(stampBytes, this.#regions)
      const range = { from: options.from, after: options.after }
      const walk = scanEntries(kv, keys, decodeClock(tombstone), range)
      return {
        clock: decodeClock(clock),
        entries: (async function* () {
          try {
            yield* walk
          } finally {
            await snapshot.close()
          }
        })(),
        stamp: async () => stamp,
      }
    } catch (error) {
      await snapshot.close()
      throw error
    }
  }

  /**
   * A full compaction pass over one set: walks every element key once (from a snapshot), has
   * the covered ones deleted in chunks, then trims every tombstone dot the pass started with.
   */
  compact(name: string): Promise<{ deleted: number }> {
    return this.#compact(name, this.#run)
  }

  // The pass stops early when the replica closes (`run` is over): the rest stays hidden.
  async #compact(name: string, run: number): Promise<{ deleted: number }> {
    const keys = levelSetKeys(name)
    const snapshot = this.#db.snapshot()
    let deleted = 0
    try {
      const kv = new StoreKv(this.#db, snapshot)
      const passStart = decodeClock(await kv.get(keys.tombstone))
      if (isEmptyClock(passStart)) return { deleted: 0 }
      let chunk = 0
      for await (const k of storedElementKeys(kv, keys, scanRange(keys))) {
        if (this.#run !== run) return { deleted }
        if (!hasSeen(passStart, k.dot)) continue
        if (this.#addTarget(name, keys, k)) chunk++
        deleted++
        if (chunk >= PASS_CHUNK) {
          chunk = 0
          await this.#requestCommit()
        }
      }
      if (this.#run !== run) return { deleted }
      let targets = this.#targets.get(name)
      if (targets === undefined) this.#targets.set(name, (targets = { covered: new Map() }))
      targets.passStart = passStart
      await this.#requestCommit()
      return { deleted }
    } finally {
      await snapshot.close()
    }
  }
}
