/**
 * The `bigsets` suite's whole-value sets: a set stored as one value under one key and inserted
 * into by read-modify-write through a key-value store's plain get and put. Two of them:
 *
 * - `orswot`: riak_dt's ORSWOT (`orswot.ts`), what Riak sets are and what the Bigsets paper
 *   measured (6.89 inserts/s at 45k elements): a CRDT, with the add-wins observed-remove
 *   semantics of the decomposed set, so it is the baseline the decomposed set is judged against;
 * - `array`: the sorted elements as a JSON array, not a CRDT (no dots, no clock: concurrent
 *   writers in two regions cannot be merged), kept as the least any whole-value set must read and
 *   write per insert.
 */
import { lowerBound } from '@causeway/core'
import { type Dot, Orswot } from './orswot.js'

/** Which whole-value set. */
export type WholeValueKind = 'orswot' | 'array'

/** What a whole-value set is stored in: a key's value, read and written whole. */
export interface ValueStore {
  /** The key's value (parsed JSON), or undefined when it has none. */
  get(key: string): Promise<unknown>
  /** Writes the key's value (serialised as JSON by the store). */
  put(key: string, value: unknown): Promise<unknown>
}

/** Inserts into a sorted array of distinct strings, keeping it so. */
export function sortedInsert(values: string[], value: string): void {
  const at = lowerBound(values, value)
  if (values[at] !== value) values.splice(at, 0, value)
}

/**
 * One ORSWOT insert by read-modify-write: read the value, check and adopt it, add `element` with
 * a dot minted from `actor`'s clock entry (the writing region), write the value back whole.
 * Returns the new dot.
 */
export async function insertIntoOrswot(
  store: ValueStore,
  key: string,
  actor: string,
  element: string,
): Promise<Dot> {
  const stored = await store.get(key)
  const set = stored === undefined ? Orswot.empty() : Orswot.fromJSON(stored)
  const dot = set.add(actor, element)
  await store.put(key, set.toJSON())
  return dot
}

/** One array insert by read-modify-write (no dot, no clock). */
export async function insertIntoArray(
  store: ValueStore,
  key: string,
  element: string,
): Promise<void> {
  const stored = await store.get(key)
  if (stored !== undefined && !Array.isArray(stored)) throw new TypeError(`${key} is not an array`)
  const values = (stored as string[] | undefined) ?? []
  sortedInsert(values, element)
  await store.put(key, values)
}

/** One insert into the whole-value set of `kind` (the actor only matters to the ORSWOT). */
export function insertInto(
  kind: WholeValueKind,
  store: ValueStore,
  key: string,
  actor: string,
  element: string,
): Promise<unknown> {
  return kind === 'orswot'
    ? insertIntoOrswot(store, key, actor, element)
    : insertIntoArray(store, key, element)
}

/**
 * The stored value of a set of `kind` that `actor` grew by inserting `elements` one after the
 * other (built directly: the suite writes it whole, unmeasured, before measuring inserts).
 */
export function grownValue(kind: WholeValueKind, actor: string, elements: readonly string[]) {
  if (kind === 'orswot') return Orswot.ofAdds(actor, elements).toJSON()
  return [...new Set(elements)].sort()
}

/**
 * How many of `elements` the whole-value set of `kind` under `key` holds now: concurrent
 * read-modify-writes of one last-writer-wins value overwrite each other, so fewer inserts survive
 * than were acknowledged.
 */
export async function survivors(
  kind: WholeValueKind,
  store: ValueStore,
  key: string,
  elements: readonly string[],
): Promise<number> {
  const stored = await store.get(key)
  if (stored === undefined) return 0
  if (kind === 'orswot') {
    const set = Orswot.fromJSON(stored)
    return elements.filter((e) => set.has(e)).length
  }
  const values = new Set(stored as string[])
  return elements.filter((e) => values.has(e)).length
}
