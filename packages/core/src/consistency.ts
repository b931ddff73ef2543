/**
 * Consistency levels, per call. Which session rows a read sends and which dependency time a
 * write sends (NuKV Algorithm 1).
 */

/** Read levels, weakest first. `session` (the default) is monotonic reads plus read-your-writes. */
export const READ_LEVELS = ['eventual', 'monotonic-reads', 'read-your-writes', 'session'] as const
/** Write levels, weakest first. `session` (the default) is monotonic writes plus writes-follow-reads. */
export const WRITE_LEVELS = [
  'eventual',
  'monotonic-writes',
  'writes-follow-reads',
  'session',
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
  return level === 'monotonic-reads' || level === 'session'
}

/** Whether a read at `level` must cover what the session has written (`hwm`). */
export function readNeedsWrites(level: ReadLevel): boolean {
  return level === 'read-your-writes' || level === 'session'
}

/** Whether a write at `level` must be ordered after the session's writes (`dtW`). */
export function writeFollowsWrites(level: WriteLevel): boolean {
  return level === 'monotonic-writes' || level === 'session'
}

/** Whether a write at `level` must be ordered after what the session has read (`dtR`). */
export function writeFollowsReads(level: WriteLevel): boolean {
  return level === 'writes-follow-reads' || level === 'session'
}

/** Replica choice of a read. `any`: let the gateway choose (it prefers one that needs no wait). */
export const REPLICA_CHOICES = ['any', 'leader', 'follower'] as const
/** Which replica serves a read. */
export type ReplicaChoice = (typeof REPLICA_CHOICES)[number]

/** When a write is acknowledged: once durable at the leader, or applied at a majority. */
export const DURABILITIES = ['leader', 'majority'] as const
/** A write's durability. */
export type Durability = (typeof DURABILITIES)[number]
