/**
 * The input rules of the storage contract, checked once, by the public methods of
 * `AbstractPartitionReplica` and `AbstractSetReplica`, before a backend's `_method` sees anything:
 * so every backend refuses the same input with the same code, and a backend never validates.
 */
import {
  CausewayError,
  checkElement,
  checkKey,
  isHlc,
  isRegionId,
  isSafeCounter,
  type Hlc,
} from '@causeway/core'
import type { ReplicaWrite } from './op-records.js'
import type { TxCommit } from './partition-replica.js'
import type { SetScanOptions } from './set-replica.js'
import { checkSetWrite } from './set-writes.js'
import { checkContext } from './sibling-set.js'

/** Throws `INVALID_KEY` unless `key` is a non-empty string of valid Unicode. */
export function checkStoredKey(key: unknown): asserts key is string {
  // On every read and write, so without encoding it: its length in bytes is the HTTP layer's
  // limit (limits.maxKeyBytes, core's checkKey), not the store's.
  if (typeof key === 'string' && key.length > 0 && key.isWellFormed()) return
  checkKey(key) // says which rule it breaks
  throw new CausewayError('INVALID_KEY', 'key must be a non-empty string of valid Unicode')
}

/** Throws `INVALID_KEY` unless `name` is a usable set name (as a key). */
export function checkSetName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || !name.isWellFormed())
    throw new CausewayError('INVALID_KEY', 'a set name must be a non-empty string of valid Unicode')
}

/** Throws `INVALID_VALUE` unless `value` is JSON text (non-empty) or undefined (a tombstone). */
export function checkWrittenValue(value: unknown): asserts value is string | undefined {
  if (value === undefined) return
  if (typeof value !== 'string' || value.length === 0)
    throw new CausewayError('INVALID_VALUE', 'a value must be JSON text, or undefined to delete')
}

/** Throws `INVALID_HLC` unless `dt` is an HLC. */
export function checkDependencyTime(dt: unknown): asserts dt is Hlc {
  if (!isHlc(dt)) throw new CausewayError('INVALID_HLC', `invalid dependency time ${String(dt)}`)
}

/**
 * Checks a leader write of a cluster of `regions` regions: its key (or set name), value, causal
 * context, set write. Throws `INVALID_KEY`, `INVALID_VALUE`, `INVALID_CONTEXT`,
 * `INVALID_ELEMENT` or `INVALID_REQUEST`.
 */
export function checkReplicaWrite(write: ReplicaWrite, regions: number): void {
  if (typeof write !== 'object' || write === null)
    throw new CausewayError('INVALID_REQUEST', 'a write must be an object')
  switch (write.kind) {
    case 'kv':
      checkStoredKey(write.key)
      checkWrittenValue(write.value)
      return
    case 'sibling':
      checkStoredKey(write.key)
      checkWrittenValue(write.value)
      checkContext(write.context, regions)
      return
    case 'set':
      checkSetName(write.name)
      checkSetWrite(write.write)
      return
    default:
      throw new CausewayError(
        'INVALID_REQUEST',
        `unknown write kind ${JSON.stringify((write as { kind?: unknown }).kind)}`,
      )
  }
}

/** Throws `INVALID_REQUEST` unless the arguments of `readLog` are usable. */
export function checkLogRead(
  origin: unknown,
  afterIdx: unknown,
  limit: unknown,
  regions: number,
): void {
  if (!isRegionId(origin, regions))
    throw new CausewayError('INVALID_REQUEST', `no region ${String(origin)} in ${regions}`)
  if (!Number.isSafeInteger(afterIdx) || (afterIdx as number) < 0)
    throw new CausewayError('INVALID_REQUEST', 'afterIdx must be a non-negative integer')
  if (!Number.isSafeInteger(limit) || (limit as number) < 0)
    throw new CausewayError('INVALID_REQUEST', 'limit must be a non-negative integer')
}

/** Throws `INVALID_VECTOR` unless `need` has one non-negative integer per region. */
export function checkNeedVector(need: unknown, regions: number): asserts need is number[] {
  if (
    !Array.isArray(need) ||
    need.length !== regions ||
    need.some((idx) => !Number.isSafeInteger(idx) || (idx as number) < 0)
  )
    throw new CausewayError(
      'INVALID_VECTOR',
      `a vector has one non-negative integer per region (${regions})`,
    )
}

/** Throws `INVALID_OPTION` unless `deadline` is a time (epoch ms). */
export function checkDeadline(deadline: unknown): asserts deadline is number {
  if (typeof deadline !== 'number' || Number.isNaN(deadline))
    throw new CausewayError('INVALID_OPTION', 'a deadline is a time in epoch ms')
}

/** Throws `INVALID_OPTION` or `INVALID_ELEMENT` unless `options` are usable scan options. */
export function checkScanOptions(options: SetScanOptions): void {
  if (typeof options !== 'object' || options === null)
    throw new CausewayError('INVALID_OPTION', 'scan options must be an object')
  if (options.from !== undefined && options.after !== undefined)
    throw new CausewayError('INVALID_OPTION', 'a scan takes from or after, not both', {
      option: 'after',
    })
  if (options.from !== undefined) checkElement(options.from)
  if (options.after !== undefined) checkElement(options.after)
  const { limit } = options
  // Any count: callers ask for one more than they will return, or for everything (Infinity).
  const count =
    typeof limit === 'number' && limit >= 0 && (Number.isInteger(limit) || limit === Infinity)
  if (limit !== undefined && !count)
    throw new CausewayError('INVALID_OPTION', 'limit must be a non-negative integer', {
      option: 'limit',
    })
}

/** Throws `INVALID_REQUEST` unless `tid` is a position of a transaction log (0 = before any). */
export function checkTid(tid: unknown): asserts tid is number {
  if (!(tid === 0 || isSafeCounter(tid)))
    throw new CausewayError('INVALID_REQUEST', 'a tid is a non-negative integer')
}

/**
 * Checks a leader's transaction commits: an array of commits in strictly increasing tid order,
 * each with an HLC, at least one write, keys valid and strictly ascending, values JSON text or
 * undefined, and a relay (if any) of another region. Throws `INVALID_REQUEST`, `INVALID_KEY`,
 * `INVALID_VALUE` or `INVALID_HLC`.
 */
export function checkTxCommits(
  commits: readonly TxCommit[],
  region: number,
  regions: number,
): void {
  if (!Array.isArray(commits))
    throw new CausewayError('INVALID_REQUEST', 'commits must be an array')
  let tid = 0
  for (const commit of commits) {
    if (typeof commit !== 'object' || commit === null)
      throw new CausewayError('INVALID_REQUEST', 'a commit must be an object')
    if (!isSafeCounter(commit.tid) || commit.tid <= tid)
      throw new CausewayError('INVALID_REQUEST', 'commits need tids in strictly increasing order')
    tid = commit.tid
    if (!isHlc(commit.ts))
      throw new CausewayError('INVALID_HLC', `invalid commit ts ${String(commit.ts)}`)
    if (!Array.isArray(commit.writes) || commit.writes.length === 0)
      throw new CausewayError('INVALID_REQUEST', 'a commit writes at least one key')
    let previous: string | undefined
    for (const write of commit.writes) {
      if (!Array.isArray(write) || write.length !== 2)
        throw new CausewayError('INVALID_REQUEST', 'a write is [key, value | undefined]')
      checkStoredKey(write[0])
      checkWrittenValue(write[1])
      if (previous !== undefined && !(previous < write[0]))
        throw new CausewayError('INVALID_REQUEST', 'a commit’s keys are distinct and in order')
      previous = write[0]
    }
    const relay = commit.relay
    if (
      relay !== undefined &&
      (!Array.isArray(relay) ||
        relay.length !== 3 ||
        !isRegionId(relay[0], regions) ||
        relay[0] === region ||
        !isSafeCounter(relay[1]) ||
        !isSafeCounter(relay[2]))
    )
      throw new CausewayError('INVALID_REQUEST', 'a relay is [another region, tid, idx]')
  }
}

/** Throws `INVALID_KEY` unless `keys` is an array of keys (see {@link checkStoredKey}). */
export function checkStoredKeys(keys: unknown): asserts keys is string[] {
  if (!Array.isArray(keys)) throw new CausewayError('INVALID_KEY', 'keys must be an array')
  for (const key of keys) checkStoredKey(key)
}
