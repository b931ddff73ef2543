/**
 * The little a bigset needs from a store: point reads, atomic batches and ascending key-range
 * iteration under bytewise key order. LevelDB (`get`, `batch`, `keys()` iterators) and Redis
 * (`GET`, `MULTI`/Lua, `ZRANGEBYLEX` over a sorted set of element keys) both provide it.
 */

/** One write of an atomic batch (the shape of abstract-level's batch operations). */
export type KvWrite =
  | { readonly type: 'put'; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly type: 'del'; readonly key: Uint8Array }

/** A key range; bounds are bytewise, and `limit` caps the number of keys. */
export interface KvRange {
  readonly gt?: Uint8Array
  readonly gte?: Uint8Array
  readonly lt?: Uint8Array
  readonly lte?: Uint8Array
  /** Most keys to yield. @default Infinity */
  readonly limit?: number
}

/** An ordered key-value store with bytewise key order. */
export interface OrderedKv {
  /** The value of `key`, or `undefined` when absent. */
  get(key: Uint8Array): Promise<Uint8Array | undefined>
  /** Applies every write or none, in order. */
  batch(writes: readonly KvWrite[]): Promise<void>
  /**
   * The keys in `range`, ascending. Stopping early (`break`) must release the iterator.
   * Element keys carry no value, so iteration yields keys only (as `ZRANGEBYLEX` does).
   */
  keys(range: KvRange): AsyncIterable<Uint8Array>
}

/** The empty value stored under element keys. */
export const ELEMENT_VALUE: Uint8Array = new Uint8Array(0)
