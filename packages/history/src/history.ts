/**
 * The model of a recorded history: what concurrent clients asked, when, and what they were told,
 * plus the state every region converged to at the end. Plain data, so a failing history can be
 * dumped as JSON and replayed through the checker.
 */
import {
  isErrorCode,
  isReadLevel,
  isWriteLevel,
  type Durability,
  type ReadLevel,
  type WriteLevel,
} from '@causeway/core'
import { maxVersion, type Version } from './version.js'

/** Names one logical client (one session). */
export type ClientId = string | number

/** One version a read of a siblings key returned. */
export interface SiblingRecord {
  ts: string
  dc: number
  /** True for a tombstone. */
  deleted: boolean
  value?: unknown
}

/**
 * What a read returned. `ts` and `dc` name the version read, tombstones included (for a key of a
 * siblings namespace, the newest sibling).
 */
export interface ReadReplyRecord {
  found: boolean
  value?: unknown
  ts?: string
  dc?: number
  /** Siblings namespaces: every version the read returned (a read returns a set of versions). */
  siblings?: SiblingRecord[]
  /** Siblings namespaces: the causal context the read returned. */
  context?: string
}

/** What a put or delete returned: the version it created. */
export interface WriteReplyRecord {
  ts: string
  dc: number
  idx: number
  /** Siblings namespaces: the context of what the write superseded plus itself, if given. */
  context?: string
}

/** Why an operation failed. */
export interface OperationError {
  /** A Causeway error code (`SESSION_NOT_AVAILABLE`, `TIMEOUT`, ...) or the error's name. */
  code: string
  message?: string
}

interface OperationBase {
  client: ClientId
  key: string
  /** The region the operation was sent to. */
  region: number
  /** When the call was made, in monotonic milliseconds (`performance.now()`). */
  invokedAt: number
  /** When its promise settled, on the same clock. */
  completedAt: number
  /** True when the call resolved; then `reply` is set, otherwise `error`. */
  ok: boolean
  error?: OperationError
}

/** A `get`. */
export interface ReadOperation extends OperationBase {
  op: 'get'
  level: ReadLevel
  reply?: ReadReplyRecord
}

/** A `put`. `value` is what was written, when recorded, so reads can be matched against it. */
export interface PutOperation extends OperationBase {
  op: 'put'
  level: WriteLevel
  /** The durability asked for, when the call named one. */
  durability?: Durability
  value?: unknown
  /**
   * Siblings namespaces: the causal context sent with the write (from a read, or an earlier
   * write's reply). The write supersedes what that read returned; without one it is blind.
   */
  context?: string
  reply?: WriteReplyRecord
}

/** A `delete`: a write of a tombstone version. */
export interface DeleteOperation extends OperationBase {
  op: 'delete'
  level: WriteLevel
  /** The durability asked for, when the call named one. */
  durability?: Durability
  /** As for {@link PutOperation.context}. */
  context?: string
  reply?: WriteReplyRecord
}

/** A write: it creates a version. */
export type WriteOperation = PutOperation | DeleteOperation

/** One recorded call. */
export type Operation = ReadOperation | WriteOperation

/**
 * For each key, the winning version each region holds at the end (index = region id), read
 * after the cluster converged. `undefined` (or `null`, after a JSON round trip): no version.
 */
export type FinalState = Record<string, ReadonlyArray<Version | null | undefined>>

/**
 * For each key of a siblings namespace, the versions (siblings, tombstones included) each region
 * holds at the end, by region id, sorted by `(ts, dc)`.
 */
export type FinalSiblings = Record<string, ReadonlyArray<readonly Version[]>>

/** A recorded history. Without `final`, the checks that need the converged state are skipped. */
export interface History {
  operations: readonly Operation[]
  final?: FinalState
  /** The converged siblings of the siblings-namespace keys (their `final` is not used). */
  finalSiblings?: FinalSiblings
}

/** An operation and its position in the history, which reports use to name it. */
export interface OperationRef<T extends Operation = Operation> {
  index: number
  operation: T
}

/**
 * Error codes after which a write may or may not have taken effect (as may any error that is not
 * a Causeway one): the checker accepts a version it cannot attribute to an acknowledged write
 * only if such a write could have made it.
 */
export const INDETERMINATE_CODES: readonly string[] = [
  'TIMEOUT',
  'NETWORK_ERROR',
  'INTERNAL',
  'SHUTTING_DOWN',
  'BACKEND_UNAVAILABLE',
]

/** True for a put or delete. */
export function isWrite(op: Operation): op is WriteOperation {
  return op.op !== 'get'
}

/** True for a get. */
export function isRead(op: Operation): op is ReadOperation {
  return op.op === 'get'
}

/** The version a successful operation read or created; `undefined` if none or if it failed. */
export function versionOf(op: Operation): Version | undefined {
  if (!op.ok || op.reply === undefined) return undefined
  const { ts, dc } = op.reply
  return ts === undefined || dc === undefined ? undefined : { ts, dc }
}

/**
 * The versions a successful read returned: every sibling for a read of a siblings key, otherwise
 * its one version (or none).
 */
export function versionsRead(op: ReadOperation): Version[] {
  if (!op.ok || op.reply === undefined) return []
  if (op.reply.siblings !== undefined) return op.reply.siblings.map(({ ts, dc }) => ({ ts, dc }))
  const version = versionOf(op)
  return version === undefined ? [] : [version]
}

/**
 * The keys of siblings namespaces in `history`: those a read returned siblings for, or that have
 * a converged sibling state.
 */
export function siblingKeys(history: History): Set<string> {
  const keys = new Set(Object.keys(history.finalSiblings ?? {}))
  for (const op of history.operations)
    if (op.op === 'get' && op.reply?.siblings !== undefined) keys.add(op.key)
  return keys
}

/** True for a write that failed in a way that may still have created a version. */
export function isIndeterminateWrite(op: Operation): op is WriteOperation {
  if (!isWrite(op) || op.ok) return false
  const code = op.error?.code
  return code === undefined || !isErrorCode(code) || INDETERMINATE_CODES.includes(code)
}

/**
 * Real-time order within one session: `a` precedes `b` when `a` had settled before `b` was
 * called. Operations whose intervals overlap are concurrent and constrain each other in no way.
 * A tie (`a` settled at the very instant `b` was called) goes to history order, which is the
 * order a recorder appends settled calls in.
 */
export function precedes(a: OperationRef, b: OperationRef): boolean {
  const ta = a.operation.completedAt
  const tb = b.operation.invokedAt
  return ta < tb || (ta === tb && a.index < b.index)
}

/** The newest acknowledged version of each key written in `operations`. */
export function newestAcknowledged(operations: readonly Operation[]): Map<string, Version> {
  const newest = new Map<string, Version>()
  for (const op of operations) {
    const version = isWrite(op) ? versionOf(op) : undefined
    if (version !== undefined) newest.set(op.key, maxVersion(newest.get(op.key), version)!)
  }
  return newest
}

/** The winners of `key` in the final state, `null`s read as `undefined`. */
export function finalWinners(
  final: FinalState,
  key: string,
): ReadonlyArray<Version | undefined> | undefined {
  const winners = final[key]
  return winners?.map((w) => w ?? undefined)
}

const HLC = /^[0-9a-f]{16}$/

/**
 * Throws a `TypeError` naming the first malformed operation, so a mistake in a hand-made or
 * recorded history is not mistaken for a guarantee being kept (or broken).
 */
export function validateHistory(history: History): void {
  history.operations.forEach((op, index) => {
    const fail = (why: string): never => {
      throw new TypeError(`history operation #${index}: ${why}`)
    }
    const kind: unknown = op.op
    if (kind !== 'get' && kind !== 'put' && kind !== 'delete') fail(`unknown op ${String(kind)}`)
    if (typeof op.key !== 'string') fail('key must be a string')
    if (!Number.isInteger(op.region) || op.region < 0) fail('region must be a region id')
    if (op.op === 'get' ? !isReadLevel(op.level) : !isWriteLevel(op.level))
      fail(`level ${String(op.level)} is not a ${op.op === 'get' ? 'read' : 'write'} level`)
    if (!Number.isFinite(op.invokedAt) || !Number.isFinite(op.completedAt))
      fail('invokedAt and completedAt must be numbers')
    if (op.completedAt < op.invokedAt) fail('completedAt is before invokedAt')
    if (!op.ok) {
      if (op.error === undefined) fail('a failed operation needs its error')
      return
    }
    const reply = op.reply
    if (reply === undefined) return fail('a successful operation needs its reply')
    const hasTs = reply.ts !== undefined
    if (hasTs !== (reply.dc !== undefined)) fail('a reply carries both ts and dc or neither')
    if (hasTs && !HLC.test(reply.ts ?? '')) fail(`ts ${String(reply.ts)} is not a 16-hex HLC`)
    if (reply.dc !== undefined && (!Number.isInteger(reply.dc) || reply.dc < 0))
      fail('dc must be a region id')
    if (op.op === 'get') {
      if (typeof op.reply?.found !== 'boolean') fail('a read reply needs found')
      if (op.reply?.found === true && !hasTs) fail('a found read must name its version (ts, dc)')
      const siblings = op.reply?.siblings
      if (siblings !== undefined) {
        if (!Array.isArray(siblings)) fail('siblings must be an array')
        siblings.forEach((s, i) => {
          if (!HLC.test(s.ts) || !Number.isInteger(s.dc) || typeof s.deleted !== 'boolean')
            fail(`sibling ${i} is not a version { ts, dc, deleted }`)
        })
        if (op.reply?.found !== siblings.some((s) => !s.deleted))
          fail('a siblings read is found exactly when a sibling holds a value')
      }
    } else if (!hasTs) fail('a write reply needs ts and dc')
  })
  for (const [key, sets] of Object.entries(history.finalSiblings ?? {})) {
    if (!Array.isArray(sets)) throw new TypeError(`final siblings of ${key}: not an array`)
    sets.forEach((set, region) => {
      if (!Array.isArray(set) || set.some((v) => !HLC.test(v.ts) || !Number.isInteger(v.dc)))
        throw new TypeError(`final siblings of ${key} in region ${region}: not a list of versions`)
    })
  }
  for (const [key, winners] of Object.entries(history.final ?? {})) {
    if (!Array.isArray(winners)) throw new TypeError(`final state of ${key}: not an array`)
    winners.forEach((w, region) => {
      if (w != null && (!HLC.test(w.ts) || !Number.isInteger(w.dc)))
        throw new TypeError(`final state of ${key} in region ${region}: not a version`)
    })
  }
}
