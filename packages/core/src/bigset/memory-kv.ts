/**
 * An in-memory {@link OrderedKv} for tests and examples. Keys are held as binary strings (one
 * char per byte), whose JS order is bytewise order. Inserting a new key costs O(n), fine for
 * the tests' sets of up to a few hundred thousand keys.
 */
import type { KvRange, KvWrite, OrderedKv } from './ordered-kv.js'
import { lowerBound } from './sorted-search.js'

/** An {@link OrderedKv} held in memory; every call is atomic. */
export class MemoryOrderedKv implements OrderedKv {
  readonly #values = new Map<string, Uint8Array>()
  #sorted: string[] = []

  /** Number of keys held. */
  get size(): number {
    return this.#sorted.length
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.#values.get(toBinary(key))
  }

  async batch(writes: readonly KvWrite[]): Promise<void> {
    for (const w of writes) {
      const k = toBinary(w.key)
      if (w.type === 'put') {
        if (!this.#values.has(k)) this.#sorted.splice(lowerBound(this.#sorted, k), 0, k)
        this.#values.set(k, w.value.slice())
      } else if (this.#values.delete(k)) {
        this.#sorted.splice(lowerBound(this.#sorted, k), 1)
      }
    }
  }

  async *keys(range: KvRange): AsyncGenerator<Uint8Array> {
    const limit = range.limit ?? Infinity
    const upper = range.lt ?? range.lte
    const upperKey = upper === undefined ? undefined : toBinary(upper)
    const inclusiveUpper = range.lt === undefined
    let cursor: string | undefined
    let strict = range.gt !== undefined
    if (range.gt !== undefined) cursor = toBinary(range.gt)
    else if (range.gte !== undefined) cursor = toBinary(range.gte)
    for (let n = 0; n < limit; n++) {
      // Re-seek after every key, so writes made while iterating never derail the cursor.
      let at = cursor === undefined ? 0 : lowerBound(this.#sorted, cursor)
      if (strict && this.#sorted[at] === cursor) at++
      const k = this.#sorted[at]
      if (k === undefined) return
      if (upperKey !== undefined && (inclusiveUpper ? k > upperKey : k >= upperKey)) return
      cursor = k
      strict = true
      yield fromBinary(k)
    }
  }

  /** Every key, ascending (for tests). */
  allKeys(): Uint8Array[] {
    return this.#sorted.map(fromBinary)
  }
}

function toBinary(bytes: Uint8Array): string {
  let s = ''
  for (let i = 0; i < bytes.length; i += 4096) {
    s += String.fromCharCode(...bytes.subarray(i, i + 4096))
  }
  return s
}

function fromBinary(s: string): Uint8Array {
  const out = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i)
  return out
}
