/**
 * Operation records: how a store (a partition leader, a region's transaction log) applies a write
 * that carries an operation id (`causeway-op-id`, `<client>.<seq>`) at most once, for ever, and
 * answers a repeat with its first result (issue 14, offline replay; issue 22, no time window).
 *
 * Per tenant (the API key that sent the write; `''` on a gateway without keys) and client, the
 * store keeps, in the same atomic step as each write (the LevelDB batch, the Redis script):
 *
 * - the record of each of the client's last {@link OP_WINDOW} ids applied here: the request's
 *   fingerprint (a repeat with another one is `OP_ID_REUSED`) and what the reply is made of;
 * - the client's mark: `low` (every seq at or below it that has no record is refused with
 *   `OP_EXPIRED`), `high` (the highest seq applied here) and `seen` (when the last one was).
 *
 * A seq above `low` without a record is new and applied. When a write leaves more than the
 * window's records, the lowest is dropped and `low` rises to it, so records stay bounded per
 * client and a late op of the client is refused rather than applied when more than a window of
 * its later ops reached this store first (the SDK sends in seq order, at most a batch of
 * `MAX_BATCH_OPS` or its request concurrency out of order, far below the window).
 *
 * A client idle here for the retention window (`seen` older) keeps only its mark: its records
 * count as gone (and are deleted), `low` counts as `high`, so a resend of anything it sent before
 * is `OP_EXPIRED` and only ids above what it used are applied. The mark itself is never
 * forgotten: one small record per client, so no op of a client can ever be confused with a new
 * one. Ids are numbered per client across partitions and the transaction log, so a store sees
 * gaps; that is why a mark is not a "next expected seq".
 */
import {
  type CausalContext,
  CausewayError,
  type Hlc,
  isHlc,
  isOpId,
  namespaceOf,
  parseOpId,
  siblingActor,
} from '@causeway/core'
import type { LogEntry } from './partition-replica.js'
import type { SetWrite } from './set-replica.js'
import { decodeSiblingSet } from './sibling-set.js'

/**
 * How long a client may stay idle at a store before its records are dropped (its mark stays), by
 * default: a day.
 */
export const DEFAULT_OP_RETENTION_MS = 24 * 60 * 60 * 1000

/** How many ids of one client above its mark a store keeps records of, by default. */
export const OP_WINDOW = 1024

/** An operation id as a leader checks and records it. */
export interface OpRef {
  /** The namespace of the written key or set (`''` for one without a namespace). */
  namespace: string
  /** The operation id (`<client>.<seq>`, checked by the caller). */
  id: string
  /** What identifies the request (method, route, key, body, context): 1 to 64 of `[A-Za-z0-9_-]`. */
  fingerprint: string
  /**
   * Who sent it: the API key's principal (`key:<name>`), `''` (or absent) on a gateway without
   * keys. Records are kept per tenant, so no tenant sees another's.
   */
  tenant?: string
}

/** What a store remembers of a client besides its records (see the module comment). */
export interface OpMark {
  /** Seqs at or below it without a record are `OP_EXPIRED`. */
  low: number
  /** The highest seq applied here. */
  high: number
  /** Wall-clock ms of the client's last write here. */
  seen: number
}

/** A mark of a client never seen. */
export const NO_MARK: OpMark = { low: 0, high: 0, seen: 0 }

/** What a leader remembers of a write it applied under an operation id. */
export interface OpRecord {
  fingerprint: string
  /** The write's log idx (its origin is the leader's region). */
  idx: number
  ts: Hlc
  /** The partition epoch the write was applied in. */
  epoch: number
  /** Wall-clock ms of the write (the log entry's `at`). */
  at: number
  /**
   * A sibling write: the counter of the leader's actor (`siblingActor(region, epoch)`) in the
   * key's set after it (its dot).
   */
  dot?: number
}

/** A leader write that may carry an operation id. */
export type ReplicaWrite =
  | { kind: 'kv'; key: string; value: string | undefined }
  | { kind: 'sibling'; key: string; value: string | undefined; context: CausalContext }
  | { kind: 'set'; name: string; write: SetWrite }

/** What a write with an operation id came to: applied now, or applied before (a replay). */
export type OpOutcome = { entry: LogEntry; record: OpRecord } | { replayed: OpRecord }

/** A check to run before a write with an operation id is applied, once it is known to be new. */
export type OpCheck = () => Promise<void>

const FINGERPRINT = /^[A-Za-z0-9_-]{1,64}$/
// Fields of a record's text, split by US (never in a fingerprint, a number or an HLC).
const US = '\u001f'

/** Throws `INVALID_REQUEST` unless `op` is usable as a record key and fingerprint. */
export function checkOpRef(op: OpRef): void {
  const ok =
    typeof op === 'object' &&
    op !== null &&
    typeof op.namespace === 'string' &&
    !op.namespace.includes(':') &&
    op.namespace.isWellFormed() &&
    isOpId(op.id) &&
    (op.tenant === undefined ||
      (typeof op.tenant === 'string' && op.tenant.length <= 256 && op.tenant.isWellFormed())) &&
    typeof op.fingerprint === 'string' &&
    FINGERPRINT.test(op.fingerprint)
  if (!ok) throw new CausewayError('INVALID_REQUEST', 'malformed operation reference')
}

/** The key or set name `write` writes. */
export function keyOfWrite(write: ReplicaWrite): string {
  return write.kind === 'set' ? write.name : write.key
}

/**
 * Throws `INVALID_REQUEST` unless `op` is a usable operation reference for `write`: a record key,
 * a fingerprint, and the namespace of the written key or set.
 */
export function checkOpWrite(op: OpRef, write: ReplicaWrite): void {
  checkOpRef(op)
  const key = keyOfWrite(write)
  if (typeof key === 'string' && (namespaceOf(key) ?? '') !== op.namespace)
    throw new CausewayError(
      'INVALID_REQUEST',
      `operation ${JSON.stringify(op.id)} names namespace ${JSON.stringify(op.namespace)}, not the namespace of what it writes`,
    )
}

/** The record's text: `fingerprint US idx US ts US epoch US at US dot` (dot empty when none). */
export function encodeOpRecord(record: OpRecord): string {
  return [
    record.fingerprint,
    record.idx,
    record.ts,
    record.epoch,
    record.at,
    record.dot ?? '',
  ].join(US)
}

/** Inverse of {@link encodeOpRecord}; `undefined` for text that is not a record. */
export function decodeOpRecord(text: string): OpRecord | undefined {
  const [fingerprint, idx, ts, epoch, at, dot] = text.split(US)
  const record: OpRecord = {
    fingerprint: fingerprint ?? '',
    idx: Number(idx),
    ts: (ts ?? '') as Hlc,
    epoch: Number(epoch),
    at: Number(at),
  }
  if (dot !== undefined && dot !== '') record.dot = Number(dot)
  const ok =
    FINGERPRINT.test(record.fingerprint) &&
    Number.isSafeInteger(record.idx) &&
    record.idx >= 1 &&
    isHlc(record.ts) &&
    Number.isSafeInteger(record.epoch) &&
    Number.isFinite(record.at) &&
    (record.dot === undefined || (Number.isSafeInteger(record.dot) && record.dot >= 1))
  return ok ? record : undefined
}

/** The record of a write the leader of `region` just applied as `entry`. */
export function recordOf(
  entry: LogEntry,
  fingerprint: string,
  epoch: number,
  region: number,
): OpRecord {
  const record: OpRecord = { fingerprint, idx: entry.idx, ts: entry.ts, epoch, at: entry.at }
  if (entry.kind === 'siblings') {
    const mine = siblingActor(region, epoch)
    const own = decodeSiblingSet(entry.siblings).entries.find(([actor]) => actor === mine)
    if (own !== undefined) record.dot = own[1]
  }
  return record
}

/**
 * The outcome of finding `record` for `op`: its replay, or `OP_ID_REUSED` when the record was made
 * by another request.
 */
export function replayOf(op: OpRef, record: OpRecord): { replayed: OpRecord } {
  if (record.fingerprint !== op.fingerprint)
    throw new CausewayError(
      'OP_ID_REUSED',
      `operation id ${JSON.stringify(op.id)} was already used for another request`,
      { opId: op.id, namespace: op.namespace, idx: record.idx },
    )
  return { replayed: record }
}

/** The client (tenant-qualified) and seq of `op`. */
export function opClientOf(op: OpRef): { tenant: string; client: string; seq: number } {
  const { client, seq } = parseOpId(op.id)
  return { tenant: op.tenant ?? '', client, seq }
}

/** Whether a client last seen at `mark.seen` is idle past the window at `now`. */
export function isIdle(mark: OpMark, now: number, retentionMs: number): boolean {
  return mark.high > 0 && now - mark.seen >= retentionMs
}

/** The mark in force at `now`: an idle client's `low` is its `high` (its records are gone). */
export function markAt(mark: OpMark, now: number, retentionMs: number): OpMark {
  return isIdle(mark, now, retentionMs) ? { ...mark, low: Math.max(mark.low, mark.high) } : mark
}

/** `OP_EXPIRED` for `op`, below the mark `low`. */
export function opExpired(op: OpRef, low: number): CausewayError {
  return new CausewayError(
    'OP_EXPIRED',
    `operation ${JSON.stringify(op.id)} is at or below what this gateway remembers of its client ` +
      `(seq ${low}): it may have been applied already and its result is no longer known; it was not applied again`,
    { opId: op.id, remembered: low },
  )
}

/** The mark's text: `low US high US seen`. */
export function encodeOpMark(mark: OpMark): string {
  return [mark.low, mark.high, mark.seen].join(US)
}

/** Inverse of {@link encodeOpMark}; `undefined` for text that is not a mark. */
export function decodeOpMark(text: string): OpMark | undefined {
  const [low, high, seen] = text.split(US).map(Number)
  const ok = [low, high, seen].every((n) => Number.isSafeInteger(n) && n! >= 0)
  return ok ? { low: low!, high: high!, seen: seen! } : undefined
}

/** Throws `RangeError` unless `n` is a usable window (records kept per client). */
export function checkOpWindow(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1 || n > 1_000_000)
    throw new RangeError('opWindow must be a whole number from 1 to 1,000,000')
  return n
}

/** Throws `INVALID_OPTION` unless `ms` is a usable retention window. */
export function checkRetention(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 1)
    throw new RangeError('opRetentionMs must be a positive whole number of ms')
  return ms
}
