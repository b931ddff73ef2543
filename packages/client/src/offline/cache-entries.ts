/**
 * The read-cache entries that a remote read and an applied write leave (pure: entries in,
 * entries out), and where each op's entry is kept.
 */
import type { ConflictMode, ReadReply } from '@causeway/core'
import type { WriteResult } from '../client.js'
import type { StoredOp } from './outbox-types.js'
import {
  type KeyEntry,
  type SetEntry,
  isAtLeastAsNew,
  keyEntryId,
  setEntryId,
  setWithAdds,
  setWithRemoves,
} from './read-cache.js'

/** The cache id of the key or set an op writes. */
export function cacheIdOf(op: StoredOp): string {
  return op.kind === 'put' || op.kind === 'delete' ? keyEntryId(op.key) : setEntryId(op.key)
}

/** The cache entry after `op` was applied with `result`. */
export function entryAfter(
  old: unknown,
  op: StoredOp,
  result: WriteResult,
  mode: ConflictMode,
): unknown {
  if (op.kind === 'set-add' || op.kind === 'set-remove') {
    const elements = (op.elements ?? []).map((e) => (typeof e === 'string' ? e : e.element))
    const set = (old as SetEntry | undefined)?.t === 's' ? (old as SetEntry) : undefined
    return op.kind === 'set-add' ? setWithAdds(set, elements) : setWithRemoves(set, elements)
  }
  const prev = (old as KeyEntry | undefined)?.t === 'k' ? (old as KeyEntry) : undefined
  const put = op.kind === 'put'
  if (mode !== 'siblings') {
    // Built field by field: this runs for every write a persisted client makes.
    const next: KeyEntry = {
      t: 'k',
      found: put,
      ts: result.ts,
      dc: result.dc,
      idx: result.idx,
      epoch: result.epoch,
      region: result.region,
      replica: 0,
    }
    if (put) next.value = op.value
    return isAtLeastAsNew(prev, next) ? next : prev
  }
  const version = {
    ...(put ? { value: op.value } : {}),
    deleted: !put,
    ts: result.ts,
    dc: result.dc,
  }
  const base = { t: 'k' as const, epoch: result.epoch, region: result.region, replica: 0 }
  // Exact when the write superseded what the cache holds: then it is the only version. Otherwise
  // it is one more, and the sync reads the key again to learn the rest.
  const exact = result.context !== undefined && (prev === undefined || prev.context === op.context)
  const versions = exact ? [version] : [...(prev?.versions ?? []), version]
  const live = versions.filter((v) => !v.deleted)
  const next: KeyEntry = {
    ...base,
    found: live.length > 0,
    ...(live.length === 1 ? { value: live[0]!.value } : {}),
    ts: result.ts,
    dc: result.dc,
    versions,
  }
  const context = exact ? result.context : prev?.context
  if (context !== undefined) next.context = context
  return next
}

/** A read reply as a read-cache entry. */
export function entryOfRead(reply: ReadReply): KeyEntry {
  const entry: KeyEntry = {
    t: 'k',
    found: reply.found,
    epoch: reply.epoch,
    region: reply.region,
    replica: reply.replica,
  }
  if (reply.found) entry.value = reply.value
  if (reply.ts !== undefined) entry.ts = reply.ts
  if (reply.dc !== undefined) entry.dc = reply.dc
  if (reply.idx !== undefined) entry.idx = reply.idx
  if (reply.context !== undefined) entry.context = reply.context
  if (reply.siblings !== undefined)
    entry.versions = reply.siblings.map((s) => ({
      ...('value' in s ? { value: s.value } : {}),
      deleted: !('value' in s),
      ts: s.ts,
      dc: s.dc,
    }))
  return entry
}
