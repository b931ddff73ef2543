/**
 * Sets offline: this device's view of a set (its cached entry with its queued writes laid over
 * it), whole scans from it, and the contexts a remove made offline carries (add wins).
 */
import type { SetElement } from '../set.js'
import type { StoredOp } from './outbox-types.js'
import type { SetEntry } from './read-cache.js'

/** A set's entry with queued set writes `ops` laid over it (undefined when nothing is known). */
export function setView(
  entry: SetEntry | undefined,
  ops: readonly StoredOp[],
): SetEntry | undefined {
  if (entry === undefined && ops.length === 0) return undefined
  let next: SetEntry = entry ?? { t: 's', complete: false, members: {}, absent: [] }
  for (const op of ops) {
    const elements = (op.elements ?? []).map((e) => (typeof e === 'string' ? e : e.element))
    next = {
      t: 's',
      complete: next.complete,
      members: { ...next.members },
      absent: next.absent.filter((e) => !elements.includes(e)),
    }
    for (const e of elements) {
      // A queued add's insertion has no context yet: a remove of it goes without one.
      if (op.kind === 'set-add') next.members[e] = null
      else {
        delete next.members[e]
        if (!next.complete) next.absent.push(e)
      }
    }
  }
  return next
}

/** Code point order, the order of a set's elements. */
export function byCodePoint(a: string, b: string): number {
  if (a === b) return 0
  const x = [...a]
  const y = [...b]
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!
    if (d !== 0) return d
  }
  return x.length - y.length
}

/** The elements of a complete view, in order, from/after a bound, at most `total`. */
export function* scanView(
  view: SetEntry,
  range: {
    from?: string | undefined
    after?: string | undefined
    total: number
    withContext: boolean
  },
): Generator<string | SetElement> {
  let elements = Object.keys(view.members).sort(byCodePoint)
  if (range.from !== undefined) elements = elements.filter((e) => byCodePoint(e, range.from!) >= 0)
  if (range.after !== undefined) elements = elements.filter((e) => byCodePoint(e, range.after!) > 0)
  let returned = 0
  for (const element of elements) {
    if (returned++ >= range.total) return
    if (!range.withContext) yield element
    else yield { element, ctx: view.members[element] ?? '' }
  }
}

/**
 * Add wins, offline too: a remove of a plain element carries the context this device observed
 * of it (from `has` or a scan), so it removes exactly those insertions and a concurrent add made
 * elsewhere survives. An element this device added itself and has not read since goes without
 * one (the leader removes what it holds, as online).
 */
export function withObservedContexts(
  view: SetEntry | undefined,
  chunk: readonly (string | SetElement)[],
): (string | SetElement)[] {
  return chunk.map((e) => {
    if (typeof e !== 'string') return e
    const ctx = view?.members[e]
    return typeof ctx === 'string' && ctx !== '' ? { element: e, ctx } : e
  })
}
