/**
 * The sets' ordered keys inside a replica's LevelDB keyspace. The replica's store has string
 * keys and values, and Bigset keys are bytes; a byte string is stored as the string of the same
 * code units (`latin1`), whose UTF-8 (classic-level) and UTF-16 (memory-level `utf8`) orders are
 * both the bytes' order, so element keys iterate exactly as the codec intends.
 *
 * - {@link StoreKv} reads the store (optionally at an explicit snapshot);
 * - {@link CommitKv} is the overlay one commit plans against: reads see the commit's own earlier
 *   writes, and the writes come out as one list for the replica's atomic batch.
 */
import { lowerBound, upperBound, type KvRange, type KvWrite, type OrderedKv } from '@causeway/core'
import type { AbstractKeyIterator, AbstractSnapshot } from 'abstract-level'
import type { StringLevel } from './level-replica.js'

/** Every set key starts with these bytes (`b/`); the replica's other keys never do. */
export const SET_NAMESPACE = 'b/'
/** Keys read per step of a seek: an element usually has one key, and the next one ends it. */
const SEEK_STEP = 2

/** A byte string as a store key or value. */
export function toStoreString(bytes: Uint8Array): string {
  // Keys, clocks and empty values are short: building the string from the code units is cheaper
  // than wrapping them in a Buffer first (every write of a commit passes through here).
  if (bytes.length <= SHORT_BYTES) {
    return String.fromCharCode.apply(null, bytes as unknown as number[])
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
}

/** Longest byte string {@link toStoreString} converts without a Buffer (well under arg limits). */
const SHORT_BYTES = 256

/** Inverse of {@link toStoreString}. */
export function fromStoreString(text: string): Uint8Array {
  const buffer = Buffer.from(text, 'latin1')
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
}

/** One operation of the replica's batch. */
export type StoreOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string }

/** A key range `[gte, lt)` of store strings. */
export interface StringScope {
  readonly gte: string
  readonly lt: string
}

interface StringRange {
  gt?: string
  gte?: string
  lt?: string
  lte?: string
}

function stringRange(range: KvRange): StringRange {
  const out: StringRange = {}
  if (range.gt !== undefined) out.gt = toStoreString(range.gt)
  if (range.gte !== undefined) out.gte = toStoreString(range.gte)
  if (range.lt !== undefined) out.lt = toStoreString(range.lt)
  if (range.lte !== undefined) out.lte = toStoreString(range.lte)
  return out
}

function inRange(key: string, r: StringRange): boolean {
  if (r.gt !== undefined && !(key > r.gt)) return false
  if (r.gte !== undefined && !(key >= r.gte)) return false
  if (r.lt !== undefined && !(key < r.lt)) return false
  if (r.lte !== undefined && !(key <= r.lte)) return false
  return true
}

/** Reads of the store, at `snapshot` when given. Writes go through the replica's commits. */
export class StoreKv implements OrderedKv {
  readonly #db: StringLevel
  readonly #snapshot: AbstractSnapshot | undefined

  constructor(db: StringLevel, snapshot?: AbstractSnapshot) {
    this.#db = db
    this.#snapshot = snapshot
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    const value = await this.#db.get(toStoreString(key), this.#options())
    return value === undefined ? undefined : fromStoreString(value)
  }

  /** Several values at once, from one (implicit or explicit) snapshot. */
  async getMany(keys: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    const values = await this.#db.getMany(keys.map(toStoreString), this.#options())
    return values.map((v) => (v === undefined ? undefined : fromStoreString(v)))
  }

  batch(): Promise<void> {
    throw new Error('set writes go through the replica commit (CommitKv)')
  }

  async *keys(range: KvRange): AsyncGenerator<Uint8Array> {
    const options = { ...stringRange(range), ...this.#options() } as Record<string, unknown>
    if (range.limit !== undefined) options.limit = range.limit
    for await (const key of this.#db.keys(options)) yield fromStoreString(key)
  }

  #options(): { snapshot?: AbstractSnapshot } {
    return this.#snapshot === undefined ? {} : { snapshot: this.#snapshot }
  }
}

/**
 * The store as one commit sees it: its own pending writes over the store. Keys are iterated by
 * merging the store's range with the pending keys in it, so a plan that reads an element's keys
 * after an earlier plan of the same commit wrote some sees them.
 */
export class CommitKv implements OrderedKv {
  readonly #db: StringLevel
  /** Pending writes: a value, or `null` for a delete. */
  readonly #pending = new Map<string, string | null>()
  /** The pending keys in order, so a range read finds its own by binary search. */
  readonly #sorted: string[] = []
  /**
   * One iterator per scope (a set's element keys) for every {@link keyTexts} of the commit in it:
   * a seek on an open iterator costs far less than opening one per element. Nothing else writes
   * the store while a commit plans, so their view (fixed at the first step) is the store the
   * commit plans against.
   */
  readonly #seekers = new Map<
    string,
    { iterator: AbstractKeyIterator<StringLevel, string>; from: string }
  >()

  constructor(db: StringLevel) {
    this.#db = db
  }

  /** Several values by their store keys; those not written by this commit from one snapshot. */
  async getTexts(keys: readonly string[]): Promise<(string | undefined)[]> {
    const missing = keys.filter((k) => !this.#pending.has(k))
    const stored = missing.length > 0 ? await this.#db.getMany(missing) : []
    let m = 0
    return keys.map((k) => {
      if (!this.#pending.has(k)) return stored[m++]
      return this.#pending.get(k) ?? undefined
    })
  }

  /**
   * The store keys in `[gte, lt)` as this commit sees them, ascending: for the few keys of one
   * element, read at once and merged with this commit's own writes in the range. `scope`, a
   * range holding `[gte, lt)` (a set's element keys), is sought in by one iterator per commit.
   */
  async keyTexts(gte: string, lt: string, scope: StringScope): Promise<string[]> {
    const stored = await this.#storedKeys(gte, lt, scope)
    const first = lowerBound(this.#sorted, gte)
    const mine = this.#sorted[first]
    if (mine === undefined || mine >= lt) return stored
    const merged = new Set(stored)
    for (let p = first; p < this.#sorted.length && this.#sorted[p]! < lt; p++)
      merged.add(this.#sorted[p]!)
    const out: string[] = []
    for (const k of merged) if (this.#pending.get(k) !== null) out.push(k)
    return out.sort()
  }

  // The store's keys in `[gte, lt)`, by a seek of the scope's iterator. The iterator is opened at
  // the first range asked for (most commits ask for one: opening there is the seek), and again
  // from an earlier start if a later range lies before it (outside it, a seek would end it).
  async #storedKeys(gte: string, lt: string, scope: StringScope): Promise<string[]> {
    if (gte < scope.gte || lt > scope.lt) throw new RangeError('a key range outside its scope')
    let seeker = this.#seekers.get(scope.gte)
    if (seeker === undefined || gte < seeker.from) {
      seeker?.iterator.close().catch(() => {})
      seeker = { iterator: this.#db.keys({ gte, lt: scope.lt }), from: gte }
      this.#seekers.set(scope.gte, seeker)
    } else {
      seeker.iterator.seek(gte)
    }
    const out: string[] = []
    for (;;) {
      const step = await seeker.iterator.nextv(SEEK_STEP)
      for (const key of step) {
        if (key >= lt) return out
        out.push(key)
      }
      if (step.length === 0) return out
    }
  }

  /** Releases the commit's iterators; call once planning is over, whether it succeeded or not. */
  close(): void {
    // Not awaited: the commit's batch need not wait for them (the store closes what is left open).
    for (const seeker of this.#seekers.values()) seeker.iterator.close().catch(() => {})
    this.#seekers.clear()
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    const k = toStoreString(key)
    const pending = this.#pending.get(k)
    if (pending !== undefined) return pending === null ? undefined : fromStoreString(pending)
    const value = await this.#db.get(k)
    return value === undefined ? undefined : fromStoreString(value)
  }

  /** Several values at once; those not written by this commit come from one store snapshot. */
  async getMany(keys: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    const texts = keys.map(toStoreString)
    const missing = texts.filter((k) => !this.#pending.has(k))
    const stored = missing.length > 0 ? await this.#db.getMany(missing) : []
    const fromStore = new Map(missing.map((k, i) => [k, stored[i]]))
    return texts.map((k) => {
      const value = this.#pending.has(k) ? this.#pending.get(k) : fromStore.get(k)
      return value === undefined || value === null ? undefined : fromStoreString(value)
    })
  }

  async batch(writes: readonly KvWrite[]): Promise<void> {
    for (const w of writes)
      this.#set(toStoreString(w.key), w.type === 'put' ? toStoreString(w.value) : null)
  }

  /** Writes a string value (sizes, stamps) under a byte key. */
  putText(key: Uint8Array, value: string): void {
    this.#set(toStoreString(key), value)
  }

  /** Writes a string value under a store key. */
  putStoreText(key: string, value: string): void {
    this.#set(key, value)
  }

  #set(key: string, value: string | null): void {
    if (!this.#pending.has(key)) this.#sorted.splice(lowerBound(this.#sorted, key), 0, key)
    this.#pending.set(key, value)
  }

  async *keys(range: KvRange): AsyncGenerator<Uint8Array> {
    const r = stringRange(range)
    const limit = range.limit ?? Infinity
    if (limit <= 0) return
    // This commit's keys in the range, found by binary search from the range's start.
    let p =
      r.gt !== undefined ? upperBound(this.#sorted, r.gt) : lowerBound(this.#sorted, r.gte ?? '')
    const inside = (k: string | undefined): k is string => k !== undefined && inRange(k, r)
    let count = 0
    for await (const key of this.#db.keys(r)) {
      while (inside(this.#sorted[p]) && this.#sorted[p]! < key) {
        const k = this.#sorted[p++]!
        if (this.#pending.get(k) === null) continue
        yield fromStoreString(k)
        if (++count >= limit) return
      }
      if (this.#sorted[p] === key) p++
      if (this.#pending.get(key) === null) continue
      yield fromStoreString(key)
      if (++count >= limit) return
    }
    for (; inside(this.#sorted[p]); p++) {
      const k = this.#sorted[p]!
      if (this.#pending.get(k) === null) continue
      yield fromStoreString(k)
      if (++count >= limit) return
    }
  }

  /** The commit's writes, for the replica's batch. */
  ops(): StoreOp[] {
    const out: StoreOp[] = []
    for (const [key, value] of this.#pending) {
      out.push(value === null ? { type: 'del', key } : { type: 'put', key, value })
    }
    return out
  }
}
