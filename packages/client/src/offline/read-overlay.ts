/**
 * A key's read result as this device sees it: its cache entry (or a remote read) with the key's
 * queued writes laid over it, so read-your-writes holds locally (pure).
 */
import { HLC_ZERO } from '@causeway/core'
import type { ReadResult, Sibling } from '../client.js'
import type { StoredOp } from './outbox-types.js'
import type { KeyEntry } from './read-cache.js'

/** How to lay the ops over the entry. */
export interface OverlayOptions<T> {
  /** Whether the key is of a siblings namespace. */
  siblings: boolean
  source: 'local' | 'remote'
  /** The remote read the entry came from, when it did (its region, replica, wait, attempts). */
  base?: ReadResult<T> | undefined
  /** The region an entry without one is shown from (the client's home). */
  homeRegion: number
}

/** `entry` with `ops` laid over it, as a read result. */
export function overlay<T>(
  entry: KeyEntry | undefined,
  ops: readonly StoredOp[],
  { siblings, source, base, homeRegion }: OverlayOptions<T>,
): ReadResult<T> {
  let found = entry?.found ?? false
  let value = entry?.value
  let versions: Sibling<T>[] | undefined = siblings
    ? (entry?.versions ?? []).map((v) => ({
        value: v.value as T | undefined,
        deleted: v.deleted,
        ts: v.ts ?? HLC_ZERO,
        dc: v.dc ?? -1,
      }))
    : undefined
  let context = entry?.context ?? (siblings ? undefined : undefined)
  let ts = entry?.ts
  let dc = entry?.dc
  for (const op of ops) {
    ts = undefined
    dc = undefined
    const over = op.afterOp !== undefined || (op.context !== undefined && op.context === context)
    if (siblings) {
      const next: Sibling<T> = {
        value: op.kind === 'put' ? (op.value as T) : undefined,
        deleted: op.kind === 'delete',
        ts: HLC_ZERO,
        dc: -1,
      }
      versions = over || op.context !== undefined ? [next] : [...(versions ?? []), next]
      context = '~' + op.opId
    }
    found = op.kind === 'put'
    value = op.kind === 'put' ? op.value : undefined
  }
  let live: T[] | undefined
  if (siblings && versions !== undefined) {
    live = versions.filter((v) => !v.deleted).map((v) => v.value as T)
    found = live.length > 0
    value = live.length === 1 ? live[0] : undefined
  }
  return {
    found,
    value: found ? (value as T) : undefined,
    siblings: live,
    versions,
    context,
    ts,
    dc,
    idx: ops.length === 0 ? entry?.idx : undefined,
    epoch: base?.epoch ?? entry?.epoch ?? 1,
    region: base?.region ?? entry?.region ?? homeRegion,
    replica: base?.replica ?? entry?.replica ?? 0,
    waitedMs: base?.waitedMs ?? 0,
    attempts: base?.attempts ?? 0,
    source,
    pending: ops.length > 0,
  }
}
