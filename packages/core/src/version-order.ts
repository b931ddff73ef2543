/**
 * The order of versions of one key: last writer wins by `(ts, dc)`, the version's HLC and then
 * the region that wrote it. Every backend keeps the winner under this order (the Redis scripts
 * apply the same rule, and a property test holds them to it), so all replicas that applied the
 * same entries agree on it.
 */
import type { Hlc } from './hlc.js'

/** What orders a version: its HLC, and the region that wrote it. */
export interface VersionStamp {
  ts: Hlc
  dc: number
}

/** Orders two versions by `(ts, dc)`: negative, zero or positive. */
export function compareVersions(a: VersionStamp, b: VersionStamp): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  return a.dc - b.dc
}

/** True when `candidate` should replace `current` (which may be absent). */
export function supersedes(candidate: VersionStamp, current: VersionStamp | undefined): boolean {
  return current === undefined || compareVersions(candidate, current) > 0
}
