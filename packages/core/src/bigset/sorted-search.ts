/**
 * Binary search in a sorted array, for the ordered structures of sets (dot clouds, in-memory
 * ordered keys, a commit's pending keys). Strings compare by UTF-16 code unit, which is byte
 * order for the latin1 store strings the backends use.
 */

/** The first index whose value is `>= value` (`sorted.length` when there is none). */
export function lowerBound<T extends string | number>(sorted: readonly T[], value: T): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The first index whose value is `> value` (`sorted.length` when there is none). */
export function upperBound<T extends string | number>(sorted: readonly T[], value: T): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}
