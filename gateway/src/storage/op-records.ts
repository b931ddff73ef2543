/**
 * Operation records: how a partition leader remembers the writes it applied under an operation id
 * (`causeway-op-id`), so that a repeat of the same write is answered with its first result instead
 * of being applied again (issue 14, offline replay).
 *
 * A record is keyed by the write's namespace (the text before its key's or set name's first `:`,
 * `''` without one) and the id, and is stored in the same atomic step as the write it stands for
 * (the LevelDB batch, the Redis script), so a write is never applied without its record or the
 * reverse, and a restart keeps both. It holds the request's fingerprint (a repeat with another one
 * is `OP_ID_REUSED`) and what the reply is made of. Records are forgotten after a retention window.
 */
import {
  type CausalContext,
  CausewayError,
  type Hlc,
  isHlc,
  namespaceOf,
  siblingActor,
} from '@causeway/core'
import type { LogEntry } from './partition-replica.js'
import type { SetWrite } from './set-replica.js'
import { decodeSiblingSet } from './sibling-set.js'

/** How long a leader remembers an operation id, by default: a day. */
export const DEFAULT_OP_RETENTION_MS = 24 * 60 * 60 * 1000

/** An operation id as a leader checks and records it. */
export interface OpRef {
  /** The namespace of the written key or set (`''` for one without a namespace). */
  namespace: string
  /** The operation id (`<client>.<seq>`, checked by the caller). */
  id: string
  /** What identifies the request (method, route, key, body, context): 1 to 64 of `[A-Za-z0-9_-]`. */
  fingerprint: string
}

/** What a leader remembers of a write it applied under an operation id. */
export interface OpRecord {
  fingerprint: string
  /** The write's log idx (its origin is the leader's region). */
  idx: number
  ts: Hlc
  /** The partition epoch the write was applied in. */
  epoch: number
  /** Wall-clock ms of the write (the log entry's `at`): the retention window counts from it. */
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
    typeof op.id === 'string' &&
    op.id.length > 0 &&
    op.id.length <= 96 &&
    /^[A-Za-z0-9_.-]+$/.test(op.id) &&
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
      `operation id ${JSON.stringify(op.id)} was already used for another request in namespace ${JSON.stringify(op.namespace)}`,
      { opId: op.id, namespace: op.namespace, idx: record.idx },
    )
  return { replayed: record }
}

/** Throws `INVALID_OPTION` unless `ms` is a usable retention window. */
export function checkRetention(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 1)
    throw new RangeError('opRetentionMs must be a positive whole number of ms')
  return ms
}
