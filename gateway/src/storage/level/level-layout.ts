/**
 * How a replica lays itself out in one LevelDB keyspace. Prefixed keys rather than sublevels, so
 * one `getMany` reads a key's version and the replica's `meta` from the same implicit snapshot:
 * that is what makes a read's version and `sv` agree.
 *
 * - `m`: {@link ReplicaMeta} (JSON). `sv`, epoch and the last HLC; rewritten by every batch.
 * - `l/<origin:3>/<idx:16>`: a log entry, zero-padded decimals so key order is numeric order.
 * - `d/<key>`: the winning version of `key`.
 * - `s/<key>`: the sibling set of `key` in a siblings namespace (its text form, `sibling-set.ts`).
 * - `b/...`: the keys of sets (Bigsets), binary keys as latin1 strings (`level-set-kv.ts`).
 * - Transactional keys (`tx-layout` below): `y/<key>` the newest version of `key`, with its value
 *   (most reads are of the newest), `x/<len>/<key>/<tid>` the versions it superseded, each a
 *   pointer to the commit entry in the log that holds its value, `g/<tid>/<len>/<key>/<tid>` which
 *   of those a snapshot from `tid` on no longer sees (what a collection deletes), `c/<tid>` the idx
 *   of the commit entry of transaction `tid`.
 *
 * Values are compact strings rather than JSON objects so a value (already JSON text) is never
 * escaped a second time.
 */
import {
  CausewayError,
  type CommitRelay,
  type Hlc,
  commitEntry,
  deleteEntry,
  entryBody,
  isHlc,
  putEntry,
  setOpEntry,
  siblingsEntry,
} from '@causeway/core'
import type { LogEntry, Version } from '../partition-replica.js'

/** Version of this layout, stored in `meta.format`. */
export const LAYOUT_FORMAT = 1

/** Key of the replica's {@link ReplicaMeta}. */
export const META_KEY = 'm'

/** What a replica persists besides data and log. The local counter is `sv[region]`. */
export interface ReplicaMeta {
  format: number
  region: number
  partition: number
  regions: number
  sv: number[]
  epoch: number
  /** Highest HLC issued or observed, so the clock never goes back across restarts. */
  hlc: Hlc
  /** Transactions: absent until the replica has any (see {@link TxMeta}). */
  tx?: TxMeta
}

/** What a replica persists of transactions. */
export interface TxMeta {
  /** Highest tid committed here (`committedTid`). */
  ctid: number
  /** The version floor (`txFloor`). */
  floor: number
  /** By region: the highest idx of that region's commit entries here a relay made visible. */
  rel: number[]
}

/**
 * The JSON text of `meta`, written by every commit: the same text as `JSON.stringify(meta)` (every
 * number in it is an integer and the HLC is hex), made without walking the object.
 */
export function encodeMeta(meta: ReplicaMeta): string {
  return (
    `{"format":${meta.format},"region":${meta.region},"partition":${meta.partition},` +
    `"regions":${meta.regions},"sv":[${meta.sv.join(',')}],"epoch":${meta.epoch},"hlc":"${meta.hlc}"` +
    (meta.tx === undefined
      ? '}'
      : `,"tx":{"ctid":${meta.tx.ctid},"floor":${meta.tx.floor},"rel":[${meta.tx.rel.join(',')}]}}`)
  )
}

const IDX_DIGITS = 16
const ORIGIN_DIGITS = 3

/** Key of the log entry `idx` of `origin`. */
export function logKey(origin: number, idx: number): string {
  return `l/${String(origin).padStart(ORIGIN_DIGITS, '0')}/${String(idx).padStart(IDX_DIGITS, '0')}`
}

/** Key of the winning version of `key`. */
export function dataKey(key: string): string {
  return `d/${key}`
}

/** Key of the sibling set of `key`. */
export function siblingsKey(key: string): string {
  return `s/${key}`
}

const VALUE = '='
const TOMBSTONE = '-'

/** `<ts:16 hex><dc:2 hex><'=' value | '-'>`. */
export function encodeVersion(version: Version): string {
  const head = version.ts + version.dc.toString(16).padStart(2, '0')
  return version.value === undefined ? head + TOMBSTONE : head + VALUE + version.value
}

/**
 * A version's `(ts, dc)` as one string that sorts in version order (`@causeway/core`'s `version-order.ts`): the
 * first characters of {@link encodeVersion}'s text, so a stored winner is compared unparsed.
 */
export function versionOrderKey(ts: Hlc, dc: number): string {
  return ts + dc.toString(16).padStart(2, '0')
}

/** {@link versionOrderKey} of an encoded version. */
export function storedVersionOrderKey(text: string): string {
  return text.slice(0, 18)
}

/**
 * Inverse of {@link encodeVersion}, checked: an HLC, a region id below `regions`, then a
 * tombstone mark or a non-empty value.
 * @throws `CausewayError('INVALID_REQUEST')` ("malformed version") on anything else: a store that
 * does not decode, whose key the replica then quarantines.
 */
export function decodeStoredVersion(text: string, regions: number): Version {
  if (!isStoredVersion(text, regions))
    throw new CausewayError(
      'INVALID_REQUEST',
      `malformed version ${JSON.stringify(text.slice(0, 24))}${text.length > 24 ? '…' : ''}`,
    )
  return decodeVersion(text)
}

/** True when `text` is a version {@link decodeStoredVersion} accepts; cheap enough for every write. */
export function isStoredVersion(text: string, regions: number): boolean {
  if (text.length < 19 || !isHlc(text.slice(0, 16))) return false
  const dc = text.slice(16, 18)
  if (!/^[0-9a-f]{2}$/.test(dc) || parseInt(dc, 16) >= regions) return false
  return text[18] === TOMBSTONE ? text.length === 19 : text[18] === VALUE && text.length > 19
}

/** Inverse of {@link encodeVersion}, unchecked: for text this replica wrote and just read. */
export function decodeVersion(text: string): Version {
  const ts = text.slice(0, 16)
  const dc = parseInt(text.slice(16, 18), 16)
  return text[18] === TOMBSTONE ? { ts, dc } : { ts, dc, value: text.slice(19) }
}

// What follows the header of a log entry.
const BODY_NONE = 0
const BODY_VALUE = 1
const BODY_SIBLINGS = 2
const BODY_SET_DELTA = 3
const BODY_COMMIT = 4

/**
 * `[key, ts, at, body]` as JSON, a newline, then the body: nothing (a tombstone), the value,
 * the sibling set of a siblings-namespace write, the delta of a set write, or a commit's writes (whose
 * header adds its tid and relay: `[key, ts, at, 4, tid, relay?]`). JSON never holds a raw newline,
 * so the first one ends the header. Origin and idx live in the LevelDB key.
 */
export function encodeEntry(entry: LogEntry): string {
  const known = encodedEntries.get(entry)
  if (known !== undefined) return known
  const text = encode(entry)
  // Entries are frozen (shared by the replicas of this process): one never changes again.
  encodedEntries.set(entry, text)
  return text
}

const encodedEntries = new WeakMap<LogEntry, string>()

// The body mark of each kind; the stored format predates kinds and stays as it was.
const BODY_OF_KIND = {
  put: BODY_VALUE,
  delete: BODY_NONE,
  siblings: BODY_SIBLINGS,
  'set-op': BODY_SET_DELTA,
  commit: BODY_COMMIT,
}

function encode(entry: LogEntry): string {
  const head: unknown[] = [entry.key, entry.ts, entry.at, BODY_OF_KIND[entry.kind]]
  if (entry.kind === 'commit') {
    head.push(entry.tid)
    if (entry.relay !== undefined) head.push(entry.relay)
  }
  return JSON.stringify(head) + '\n' + entryBody(entry)
}

/** Inverse of {@link encodeEntry}. */
export function decodeEntry(origin: number, idx: number, text: string): LogEntry {
  const newline = text.indexOf('\n')
  const [key, ts, at, body, tid, relay] = JSON.parse(text.slice(0, newline)) as [
    string,
    Hlc,
    number,
    number,
    number?,
    CommitRelay?,
  ]
  const head = { origin, idx, key, ts, at }
  if (body === BODY_COMMIT) return commitEntry(head, tid!, text.slice(newline + 1), relay)
  if (body === BODY_VALUE) return putEntry(head, text.slice(newline + 1))
  if (body === BODY_SIBLINGS) return siblingsEntry(head, text.slice(newline + 1))
  if (body === BODY_SET_DELTA) return setOpEntry(head, text.slice(newline + 1))
  return deleteEntry(head)
}

/** Origin and idx back from a log key. */
export function parseLogKey(key: string): { origin: number; idx: number } {
  return {
    origin: Number(key.slice(2, 2 + ORIGIN_DIGITS)),
    idx: Number(key.slice(3 + ORIGIN_DIGITS)),
  }
}

// ---- Transactional keys ----

const TID_DIGITS = 16

function tidText(tid: number): string {
  return String(tid).padStart(TID_DIGITS, '0')
}

// A key's length in front of it, so that no key's rows fall inside another key's range.
function sized(key: string): string {
  return `${key.length.toString(16).padStart(8, '0')}/${key}/`
}

/** Key of the newest version of transactional `key`. */
export function txLatestKey(key: string): string {
  return `y/${key}`
}

/** Key of the version of `key` made by `tid`, once a later one superseded it. */
export function txHistoryKey(key: string, tid: number): string {
  return `x/${sized(key)}${tidText(tid)}`
}

/** The range of `key`'s superseded versions up to `tid` (for a reverse seek). */
export function txHistoryRange(key: string, tid: number): { gte: string; lte: string } {
  return { gte: `x/${sized(key)}`, lte: `x/${sized(key)}${tidText(tid)}` }
}

/** Key of the mark that the version of `key` made by `tid` is invisible from snapshot `from` on. */
export function txGarbageKey(from: number, key: string, tid: number): string {
  return `g/${tidText(from)}/${sized(key)}${tidText(tid)}`
}

/** The marks of versions invisible from snapshots up to `floor` (what a collection deletes). */
export function txGarbageRange(floor: number): { gte: string; lte: string } {
  return { gte: 'g/', lte: `g/${tidText(floor)}/\uffff` }
}

/** The history key a garbage mark names. */
export function txHistoryOfGarbage(mark: string): string {
  return `x/${mark.slice(3 + TID_DIGITS)}`
}

/** Key of the idx of the commit entry of transaction `tid`. */
export function txCommitKey(tid: number): string {
  return `c/${tidText(tid)}`
}

/** The commit-entry index rows of transactions up to `tid`. */
export function txCommitRange(tid: number): { gte: string; lte: string } {
  return { gte: 'c/', lte: txCommitKey(tid) }
}

/** A stored version of a transactional key: its tid, `(ts, dc)`, and where its value is. */
export interface TxStoredVersion {
  tid: number
  ts: Hlc
  dc: number
  deleted: boolean
  /** The idx (in this replica's own region's stream) of the commit entry holding the value. */
  idx: number
  /** The value itself, kept with the newest version only (absent: read it from the entry). */
  value?: string
}

/** `<tid:16><ts:16><dc:2 hex><'=' | '-'><idx>`, then `|` and the value when it is kept. */
export function encodeTxVersion(v: TxStoredVersion): string {
  const head =
    tidText(v.tid) + v.ts + v.dc.toString(16).padStart(2, '0') + (v.deleted ? '-' : '=') + v.idx
  return v.value === undefined ? head : head + '|' + v.value
}

/**
 * Inverse of {@link encodeTxVersion}.
 * @throws `CausewayError('INVALID_REQUEST')` ("malformed version") when it does not decode.
 */
export function decodeTxVersion(text: string, regions: number): TxStoredVersion {
  const tid = Number(text.slice(0, TID_DIGITS))
  const ts = text.slice(TID_DIGITS, TID_DIGITS + 16)
  const dc = parseInt(text.slice(TID_DIGITS + 16, TID_DIGITS + 18), 16)
  const mark = text[TID_DIGITS + 18]
  const bar = text.indexOf('|', TID_DIGITS + 19)
  const idx = Number(text.slice(TID_DIGITS + 19, bar < 0 ? undefined : bar))
  if (
    !Number.isSafeInteger(tid) ||
    tid < 1 ||
    !isHlc(ts) ||
    !(dc >= 0 && dc < regions) ||
    (mark !== '-' && mark !== '=') ||
    !Number.isSafeInteger(idx) ||
    idx < 1
  )
    throw new CausewayError(
      'INVALID_REQUEST',
      `malformed version ${JSON.stringify(text.slice(0, 48))}`,
    )
  const version: TxStoredVersion = { tid, ts, dc, deleted: mark === '-', idx }
  if (bar >= 0) version.value = text.slice(bar + 1)
  return version
}
