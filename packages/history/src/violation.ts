/** What the checks report, and how a report reads when a test fails. */
import type { ClientId, Operation, OperationRef } from './history.js'
import { formatVersion, type Version } from './version.js'

/** The checks the checker runs. */
export const CHECK_NAMES = [
  'monotonic-reads',
  'read-your-writes',
  'monotonic-writes',
  'writes-follow-reads',
  'convergence',
  'causal',
] as const

/** One of {@link CHECK_NAMES}. */
export type CheckName = (typeof CHECK_NAMES)[number]

/**
 * How a guarantee was broken:
 * - `stale-read`: a read returned a version older than one the session had read or written;
 * - `unordered-write`: a write got a version not newer than one the session had written or read;
 * - `final-state`: a region ended on a version the same session had superseded;
 * - `diverged`: regions ended on different winners;
 * - `lost-write`: a region ended on a version older than the newest acknowledged write;
 * - `unknown-version`: a read or final winner names a version no client wrote;
 * - `duplicate-version`: two acknowledged writes got the same version;
 * - `value-mismatch`: a read returned a version with another value (or found-ness) than written;
 * - `missing-final-state`: a key with acknowledged writes has no final state;
 * - `superseded-sibling`: a read or final state of a siblings key holds a version beside one that
 *   superseded it, or one an acknowledged write superseded (a false conflict);
 * - `causal-cycle`: an operation depends on itself in the causal order (a read returned a version
 *   written in its own causal future).
 */
export type ViolationKind =
  | 'stale-read'
  | 'unordered-write'
  | 'final-state'
  | 'diverged'
  | 'lost-write'
  | 'unknown-version'
  | 'duplicate-version'
  | 'value-mismatch'
  | 'missing-final-state'
  | 'superseded-sibling'
  | 'causal-cycle'

/** One broken guarantee, with what is needed to debug it. */
export interface Violation {
  check: CheckName
  kind: ViolationKind
  key: string
  /** The session whose guarantee broke (absent for convergence across sessions). */
  client?: ClientId
  /** The operation that set the requirement (the earlier read or write). */
  earlier?: OperationRef
  /** The operation that broke it. */
  later?: OperationRef
  /** The version that had to be reached (or exceeded, for writes). */
  required?: Version
  /** The version observed instead. */
  observed?: Version
  /** For final-state kinds: the region concerned. */
  region?: number
  /** For final-state kinds: every region's winner. */
  winners?: ReadonlyArray<Version | undefined>
  /**
   * Check `causal`: the requirement came to the session only through other keys (no version of
   * the key it had read or written explains it): an anomaly no per-key guarantee forbids.
   */
  crossKey?: boolean
  /** One line, for people. */
  message: string
}

/** The outcome of one check over a history. */
export interface CheckResult {
  check: CheckName
  violations: Violation[]
  /** How many operations (or keys, for convergence) had a requirement to meet. */
  checked: number
  /** How many of those had it set by an operation in another region: the interesting cases. */
  crossRegion: number
}

/** `get#12 (c3 in region 1 at session)`: how reports name an operation. */
export function describeOperation(ref: OperationRef): string {
  const op: Operation = ref.operation
  return `${op.op}#${ref.index} (${String(op.client)} in region ${op.region} at ${op.level})`
}

/** A violation as text, for test failure messages. */
export function formatViolation(v: Violation): string {
  const parts = [`[${v.check}/${v.kind}] key ${JSON.stringify(v.key)}: ${v.message}`]
  if (v.required !== undefined || v.observed !== undefined)
    parts.push(`required ${formatVersion(v.required)}, observed ${formatVersion(v.observed)}`)
  if (v.winners !== undefined) parts.push(`winners [${v.winners.map(formatVersion).join(', ')}]`)
  return parts.join('; ')
}
