/**
 * Versions of a key. Every write (a put, or a delete's tombstone) creates one, named by the HLC
 * its leader stamped and the region it was written in; last-writer-wins orders them by
 * `(ts, dc)`, so the checker does too.
 */

/** One version of a key: its HLC (16 hex digits) and origin region. */
export interface Version {
  ts: string
  dc: number
}

/**
 * Orders two versions by `(ts, dc)`: negative when `a` is older, positive when newer. "No
 * version" (`undefined`: the key was never written, as far as the reader saw) is older than any.
 */
export function compareVersions(a: Version | undefined, b: Version | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1
  // Wire HLCs are fixed-width lowercase hex, so string order is time order.
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  return a.dc - b.dc
}

/** True when both name the same version (or both are "no version"). */
export function sameVersion(a: Version | undefined, b: Version | undefined): boolean {
  return compareVersions(a, b) === 0
}

/** The newer of two versions. */
export function maxVersion(a: Version | undefined, b: Version | undefined): Version | undefined {
  return compareVersions(a, b) >= 0 ? a : b
}

/** `ts@dc`, or `none`: how reports print a version. */
export function formatVersion(v: Version | undefined): string {
  return v === undefined ? 'none' : `${v.ts}@${v.dc}`
}

/** A string that identifies a version, for maps and sets. */
export function versionId(v: Version): string {
  return `${v.ts}@${v.dc}`
}
