/**
 * One entry of a partition log, as replicas store it, followers apply it and regions ship it: a
 * union discriminated by `kind`, frozen once made (the makers below are the only way to make one),
 * so an entry is never filled in after creation and every reader of a committed entry (follower
 * feeds, shippers, change feeds, the log tail shared by the replicas of a process) sees the same
 * object.
 *
 * Kinds (what applying the entry does):
 * - `put`: a last-writer-wins write of `value` (JSON text); the version with the highest
 *   `(ts, origin)` wins (`version-order.ts`).
 * - `delete`: the same with a tombstone.
 * - `siblings`: a write of a key in a siblings namespace; `siblings` is the origin leader's sibling
 *   set of the key after the write (`sibling-set-codec.ts`), merged (`DvvSet.sync`) on apply.
 * - `set-op`: a write to a set (Bigsets); `key` is the set name and `setDelta` the delta the origin
 *   leader planned (`deltaToJSON`), applied with `planApplyDelta`.
 * - `commit`: this partition's share of the writes of a transaction the region of `origin` applied
 *   (Nami): `tid` is its position in that region's transaction log, `writes` its writes here
 *   (`commit-writes.ts`), `key` the first of them. In region `origin` its writes become versions
 *   visible from snapshot `tid` on; another region only logs it (its writes reach that region as one
 *   unit through the transaction log there, and a `relay` entry of that region makes them visible).
 *   A `relay` entry carries `[region, tid, idx]`: the transaction of region `region` at `tid` there,
 *   whose own commit entry in this partition is `idx` of `region`'s stream.
 *
 * Kinds to come: `label` (the causal cross-region mode's update labels). A replica that meets a kind it does not know refuses the whole batch
 * with `UNSUPPORTED_LOG_FORMAT` and applies none of it (`log-entry-check.ts`), so a newer sender
 * is told, not half understood.
 */
import type { Hlc } from './hlc.js'

/** Every kind of log entry this version knows, in the order they were introduced. */
export const LOG_ENTRY_KINDS = ['put', 'delete', 'siblings', 'set-op', 'commit'] as const

/** A kind of log entry. */
export type LogEntryKind = (typeof LOG_ENTRY_KINDS)[number]

/** True when `kind` is a kind of log entry this version knows. */
export function isLogEntryKind(kind: unknown): kind is LogEntryKind {
  return typeof kind === 'string' && (LOG_ENTRY_KINDS as readonly string[]).includes(kind)
}

/** What every entry carries, whatever its kind. */
export interface LogEntryHead {
  /** Region where the write was accepted. */
  readonly origin: number
  /** Position in the origin's FIFO stream: 1, 2, 3, ... with no gaps. */
  readonly idx: number
  /** The written key, or the set name of a `set-op`. */
  readonly key: string
  readonly ts: Hlc
  /** Wall-clock ms at which the origin leader appended it (for lag metrics and injected lag). */
  readonly at: number
}

/** A last-writer-wins write of a value. */
export interface PutEntry extends LogEntryHead {
  readonly kind: 'put'
  /** JSON text of the value (never empty). */
  readonly value: string
}

/** A last-writer-wins delete: a tombstone version. */
export interface DeleteEntry extends LogEntryHead {
  readonly kind: 'delete'
}

/**
 * A write of a key in a siblings namespace. The written value (or tombstone) is in `siblings`, as
 * the newest sibling of region `origin`, stamped `ts`.
 */
export interface SiblingsEntry extends LogEntryHead {
  readonly kind: 'siblings'
  /** The origin leader's sibling set of `key` after the write, in its text form. */
  readonly siblings: string
}

/** A write to a set (Bigsets): `key` is the set name. */
export interface SetOpEntry extends LogEntryHead {
  readonly kind: 'set-op'
  /** The delta the origin leader planned, as `JSON.stringify(deltaToJSON(delta))`. */
  readonly setDelta: string
}

/**
 * Which transaction of another region a `commit` entry makes visible here: `[region, tid, idx]`,
 * the region that applied it, its tid there, and the idx of that region's own commit entry for it
 * in this partition's log.
 */
export type CommitRelay = readonly [region: number, tid: number, idx: number]

/** A partition's share of a transaction's writes (see the module comment). */
export interface CommitEntry extends LogEntryHead {
  readonly kind: 'commit'
  /** The transaction's position in the transaction log of region `origin`. */
  readonly tid: number
  /** The writes in this partition, as `encodeCommitWrites` makes them; `key` is the first. */
  readonly writes: string
  /** Set when the entry makes another region's transaction visible in region `origin`. */
  readonly relay?: CommitRelay
}

/** One entry of a partition log. */
export type LogEntry = PutEntry | DeleteEntry | SiblingsEntry | SetOpEntry | CommitEntry

/** A last-writer-wins entry: a put or a delete. */
export type KeyEntry = PutEntry | DeleteEntry

/** A `put` of `value`. Fields are listed in one order, so every entry has the same shape. */
export function putEntry(head: LogEntryHead, value: string): PutEntry {
  const { origin, idx, key, ts, at } = head
  return Object.freeze({ kind: 'put', origin, idx, key, ts, at, value })
}

/** A `delete`. */
export function deleteEntry(head: LogEntryHead): DeleteEntry {
  const { origin, idx, key, ts, at } = head
  return Object.freeze({ kind: 'delete', origin, idx, key, ts, at })
}

/** A `put` of `value`, or a `delete` when it is undefined. */
export function keyEntry(head: LogEntryHead, value: string | undefined): KeyEntry {
  return value === undefined ? deleteEntry(head) : putEntry(head, value)
}

/** A `siblings` entry carrying the key's set after the write. */
export function siblingsEntry(head: LogEntryHead, siblings: string): SiblingsEntry {
  const { origin, idx, key, ts, at } = head
  return Object.freeze({ kind: 'siblings', origin, idx, key, ts, at, siblings })
}

/** A `set-op` entry carrying the planned delta. */
export function setOpEntry(head: LogEntryHead, setDelta: string): SetOpEntry {
  const { origin, idx, key, ts, at } = head
  return Object.freeze({ kind: 'set-op', origin, idx, key, ts, at, setDelta })
}

/** The commit entry of transaction `tid` (of region `head.origin`) with `writes` here. */
export function commitEntry(
  head: LogEntryHead,
  tid: number,
  writes: string,
  relay?: CommitRelay,
): CommitEntry {
  const { origin, idx, key, ts, at } = head
  return Object.freeze(
    relay === undefined
      ? { kind: 'commit', origin, idx, key, ts, at, tid, writes }
      : { kind: 'commit', origin, idx, key, ts, at, tid, writes, relay: Object.freeze([...relay]) },
  ) as CommitEntry
}

/** The text an entry carries beyond its head (value, set, delta or writes); `''` for a delete. */
export function entryBody(entry: LogEntry): string {
  switch (entry.kind) {
    case 'put':
      return entry.value
    case 'siblings':
      return entry.siblings
    case 'set-op':
      return entry.setDelta
    case 'commit':
      return entry.writes
    case 'delete':
      return ''
  }
}
