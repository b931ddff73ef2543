/**
 * The order of versions of one key: last writer wins by `(ts, dc)`. Every backend stores the
 * winner under this order, so all replicas that applied the same entries agree on it.
 */
import type { Version } from './partition-replica.js'

/** Orders two versions by `(ts, dc)`: negative, zero or positive. */
export function compareVersions(
  a: Pick<Version, 'ts' | 'dc'>,
  b: Pick<Version, 'ts' | 'dc'>,
): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  return a.dc - b.dc
}

/** True when `candidate` should replace `current` (which may be absent). */
export function supersedes(candidate: Version, current: Version | undefined): boolean {
  return current === undefined || compareVersions(candidate, current) > 0
}
