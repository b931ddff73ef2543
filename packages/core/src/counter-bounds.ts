/**
 * The one bound on every counter Causeway decodes: a causal context's counters, a DVV set's dot
 * counters, log indexes in shipping envelopes and session vectors. Each is a safe integer such
 * that one more is still a safe integer, because a leader adds one to it (a new dot, the next
 * log index): a counter of 2^53 - 1 would become 2^53, which no decoder can tell from 2^53 + 1.
 * Every decoder refuses a counter above it, and every writer refuses to make one (the Redis Lua
 * scripts included, which do the same arithmetic in doubles).
 *
 * Negative zero. JSON can carry `-0` (`JSON.parse('-0')` is -0) but never writes it
 * (`JSON.stringify(-0)` is `0`). A decoder reads a `-0` where it takes 0 (a region id, an index
 * of a session vector) as 0, and returns 0: what it returns encodes back to what it read and is
 * `Object.is`-equal to what a round trip through JSON gives. Where the bound starts at 1 (epochs,
 * log indexes, counters) a `-0` is refused like a 0.
 */

/** The largest counter or index any decoder accepts: 2^53 - 2, so that one more stays exact. */
export const MAX_SAFE_COUNTER = Number.MAX_SAFE_INTEGER - 1

/** True when `value` is an integer in `min..MAX_SAFE_COUNTER`. */
export function isSafeCounter(value: unknown, min = 1): value is number {
  return (
    typeof value === 'number' &&
    Number.isSafeInteger(value) &&
    value >= min &&
    value <= MAX_SAFE_COUNTER
  )
}

/** True when `value` is a region id of a cluster of `regions` regions: an integer in `0..regions-1`. */
export function isRegionId(value: unknown, regions: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < regions
}

/** `n` with a negative zero read as 0 (see the module comment); any other number as it is. */
export function withoutNegativeZero(n: number): number {
  return n + 0
}
