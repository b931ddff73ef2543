/**
 * The read cache: what this device last knew of each key (and set) it read or wrote, kept in the
 * local store so reads can be answered offline. Pure: entries in, entries out; the store and the
 * engine decide when to keep them.
 *
 * An entry is only ever replaced by one at least as new (a last-writer-wins key by `(ts, dc)`, a
 * siblings key by its causal context), so a late reply or an eventual read never takes the cache
 * back in time.
 */
import { type Hlc, decodeCausalContext } from '@causeway/core'

/** One version of a siblings key, as cached. */
export interface CachedVersion {
  value?: unknown
  deleted: boolean
  ts?: Hlc
  dc?: number
}

/** A key as last read or written. */
export interface KeyEntry {
  t: 'k'
  found: boolean
  value?: unknown
  ts?: Hlc
  dc?: number
  idx?: number
  epoch: number
  region: number
  replica: number
  /** Siblings namespaces: every version (tombstones included), oldest first. */
  versions?: CachedVersion[]
  /** Siblings namespaces: the causal context of `versions`. */
  context?: string
}

/** A set as this device knows it. */
export interface SetEntry {
  t: 's'
  /** `members` is the whole set (as of a full scan, plus what was written or seen since). */
  complete: boolean
  /** Elements known present, with the context to remove them by (null when unknown). */
  members: Record<string, string | null>
  /** Elements known absent (only kept while `complete` is false). */
  absent: string[]
}

/** The store key of a key's entry and of a set's. */
export const keyEntryId = (key: string): string => 'k:' + key
export const setEntryId = (name: string): string => 's:' + name

/** `a` compared with `b` by `(ts, dc)`: the last-writer-wins order. */
function compareVersion(a: { ts?: Hlc; dc?: number }, b: { ts?: Hlc; dc?: number }): number {
  const at = a.ts ?? ''
  const bt = b.ts ?? ''
  if (at !== bt) return at < bt ? -1 : 1
  return (a.dc ?? -1) - (b.dc ?? -1)
}

/** The version vector of a context as a map, or undefined when it cannot be read. */
function vectorOf(context: string | undefined): Map<number, number> | undefined {
  if (context === undefined || context.startsWith('~')) return undefined
  try {
    return new Map(decodeCausalContext(context))
  } catch {
    return undefined
  }
}

/** True when vector `a` covers `b` and differs from it. */
function strictlyCovers(a: Map<number, number>, b: Map<number, number>): boolean {
  for (const [actor, counter] of b) if ((a.get(actor) ?? 0) < counter) return false
  for (const [actor, counter] of a) if (counter > (b.get(actor) ?? 0)) return true
  return false
}

/**
 * Whether `next` may replace `old`: it is at least as new. Siblings entries compare their
 * contexts (one strictly covering the other wins; concurrent ones take the newer reply), others
 * their `(ts, dc)`.
 */
export function isAtLeastAsNew(old: KeyEntry | undefined, next: KeyEntry): boolean {
  if (old === undefined) return true
  if (old.context !== undefined || next.context !== undefined) {
    const o = vectorOf(old.context)
    const n = vectorOf(next.context)
    if (o === undefined || n === undefined) return true
    return !strictlyCovers(o, n)
  }
  if (next.ts === undefined) return old.ts === undefined
  return compareVersion(next, old) >= 0
}

/** The set entry after `elements` were added (their contexts unknown until read again). */
export function setWithAdds(entry: SetEntry | undefined, elements: readonly string[]): SetEntry {
  const next: SetEntry = entry
    ? { t: 's', complete: entry.complete, members: { ...entry.members }, absent: [...entry.absent] }
    : { t: 's', complete: false, members: {}, absent: [] }
  for (const e of elements) {
    if (!(e in next.members)) next.members[e] = null
  }
  if (next.absent.length > 0) next.absent = next.absent.filter((e) => !elements.includes(e))
  return next
}

/** The set entry after `elements` were removed. */
export function setWithRemoves(entry: SetEntry | undefined, elements: readonly string[]): SetEntry {
  const next: SetEntry = entry
    ? { t: 's', complete: entry.complete, members: { ...entry.members }, absent: [...entry.absent] }
    : { t: 's', complete: false, members: {}, absent: [] }
  for (const e of elements) delete next.members[e]
  if (!next.complete) for (const e of elements) if (!next.absent.includes(e)) next.absent.push(e)
  return next
}

/** The set entry after a `has` reply about one element. */
export function setWithHas(
  entry: SetEntry | undefined,
  element: string,
  found: boolean,
  ctx: string | undefined,
): SetEntry {
  if (!found) return setWithRemoves(entry, [element])
  const next = setWithAdds(entry, [element])
  next.members[element] = ctx ?? null
  return next
}

/** The whole set, from a complete scan. */
export function setFromScan(elements: ReadonlyArray<{ element: string; ctx?: string }>): SetEntry {
  const members: Record<string, string | null> = {}
  for (const e of elements) members[e.element] = e.ctx ?? null
  return { t: 's', complete: true, members, absent: [] }
}
