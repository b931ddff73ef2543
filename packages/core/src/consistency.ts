/**
 * Consistency levels, per call. Which session rows a read sends and which dependency time a
 * write sends (NuKV Algorithm 1).
 */

/**
 * Read levels, weakest first. `session` (the default) is monotonic reads plus read-your-writes;
 * `causal` (clusters with `shipping: 'causal'` only) is `session` plus causality across keys: the
 * read also waits until the region has applied everything the session's vector clock covers.
 */
export const READ_LEVELS = [
  'eventual',
  'monotonic-reads',
  'read-your-writes',
  'session',
  'causal',
] as const
/**
 * Write levels, weakest first. `session` (the default) is monotonic writes plus
 * writes-follow-reads; `causal` (clusters with `shipping: 'causal'` only) is `session` plus
 * causality across keys: the write depends on the session's whole vector clock.
 */
export const WRITE_LEVELS = [
  'eventual',
  'monotonic-writes',
  'writes-follow-reads',
  'session',
  'causal',
] as const

/** A read consistency level. */
export type ReadLevel = (typeof READ_LEVELS)[number]
/** A write consistency level. */
export type WriteLevel = (typeof WRITE_LEVELS)[number]

/** True when `value` names a read level. */
export function isReadLevel(value: unknown): value is ReadLevel {
  return typeof value === 'string' && (READ_LEVELS as readonly string[]).includes(value)
}

/** True when `value` names a write level. */
export function isWriteLevel(value: unknown): value is WriteLevel {
  return typeof value === 'string' && (WRITE_LEVELS as readonly string[]).includes(value)
}

/** Whether a read at `level` must cover what the session has read (`hrm`). */
export function readNeedsReads(level: ReadLevel): boolean {
  return level === 'monotonic-reads' || level === 'session' || level === 'causal'
}

/** Whether a read at `level` must cover what the session has written (`hwm`). */
export function readNeedsWrites(level: ReadLevel): boolean {
  return level === 'read-your-writes' || level === 'session' || level === 'causal'
}

/** Whether a write at `level` must be ordered after the session's writes (`dtW`). */
export function writeFollowsWrites(level: WriteLevel): boolean {
  return level === 'monotonic-writes' || level === 'session' || level === 'causal'
}

/** Whether a write at `level` must be ordered after what the session has read (`dtR`). */
export function writeFollowsReads(level: WriteLevel): boolean {
  return level === 'writes-follow-reads' || level === 'session' || level === 'causal'
}

/**
 * Whether a call at `level` is causal across keys: it carries the session's vector clock
 * (`causeway-clock`) and needs a cluster with `shipping: 'causal'`.
 */
export function isCausalLevel(level: ReadLevel | WriteLevel): level is 'causal' {
  return level === 'causal'
}

/** How a cluster ships writes between regions: per partition in order, or causally (Eunomia). */
export const SHIPPING_MODES = ['fifo', 'causal'] as const
/** A cluster's shipping mode. */
export type ShippingMode = (typeof SHIPPING_MODES)[number]

/** True when `value` names a shipping mode. */
export function isShippingMode(value: unknown): value is ShippingMode {
  return typeof value === 'string' && (SHIPPING_MODES as readonly string[]).includes(value)
}

/** Replica choice of a read. `any`: let the gateway choose (it prefers one that needs no wait). */
export const REPLICA_CHOICES = ['any', 'leader', 'follower'] as const
/** Which replica serves a read. */
export type ReplicaChoice = (typeof REPLICA_CHOICES)[number]

/** When a write is acknowledged: once durable at the leader, or applied at a majority. */
export const DURABILITIES = ['leader', 'majority'] as const
/** A write's durability. */
export type Durability = (typeof DURABILITIES)[number]
