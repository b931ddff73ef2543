/**
 * What both backends do the same way around a set write: validating it before the leader takes
 * an idx, planning a local write (Algorithm 1 with the leader's observation filled in), and
 * parsing a shipped delta.
 */
import {
  CausewayError,
  MAX_CONTEXT_DOTS,
  MAX_DELTA_OPS,
  MAX_SET_WRITE_ELEMENTS,
  checkElement,
  deltaFromJSON,
  isActor,
  isCounter,
  normalizeDots,
  planInsert,
  planRemove,
  type BigsetClocks,
  type BigsetDelta,
  type BigsetKeys,
  type Dot,
  type ElementOp,
  type PlanOptions,
  type WritePlan,
} from '@causeway/core'
import type { SetWrite } from './set-replica.js'

/**
 * Validates a set write before the leader takes an idx for it. Throws `INVALID_ELEMENT` for a bad
 * element or too many of them, `INVALID_REQUEST` for anything else.
 */
export function checkSetWrite(write: SetWrite): void {
  if (write.op !== 'add' && write.op !== 'remove')
    throw new CausewayError('INVALID_REQUEST', `unknown set operation ${String(write.op)}`)
  if (!Array.isArray(write.elements) || write.elements.length === 0)
    throw new CausewayError('INVALID_ELEMENT', 'a set write needs at least one element')
  if (write.elements.length > MAX_SET_WRITE_ELEMENTS)
    throw new CausewayError(
      'INVALID_ELEMENT',
      `a set write takes at most ${MAX_SET_WRITE_ELEMENTS} elements (got ${write.elements.length})`,
      { limit: MAX_SET_WRITE_ELEMENTS, got: write.elements.length },
    )
  for (const e of write.elements) {
    checkElement(e.element)
    if (e.ctx === undefined) continue
    if (!Array.isArray(e.ctx) || e.ctx.length > MAX_CONTEXT_DOTS)
      throw new CausewayError('INVALID_CONTEXT', 'a set element context is malformed')
    for (const d of e.ctx)
      if (!isActor(d.actor) || !isCounter(d.counter))
        throw new CausewayError('INVALID_CONTEXT', 'a set element context holds a bad dot')
  }
}

/** Parses the delta of a shipped set entry; throws `INVALID_REQUEST` when malformed. */
export function parseSetDelta(text: string): BigsetDelta {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new CausewayError('INVALID_REQUEST', 'a set entry carries a delta that is not JSON')
  }
  const delta = deltaFromJSON(json)
  if (delta.adds.length + delta.removes.length > MAX_DELTA_OPS)
    throw new CausewayError('INVALID_REQUEST', 'a set delta is too large')
  return delta
}

/** The elements a delta touches (adds and removes), each once. */
export function deltaElements(delta: BigsetDelta): string[] {
  return [...new Set([...delta.adds.map((a) => a.element), ...delta.removes.map((r) => r.element)])]
}

/**
 * Plans a leader's write. `live` holds the live dots at the leader of every element of the
 * write. An add supersedes the element's live dots (and any context given), so re-adding an
 * element keeps one key for it, as `SADD` keeps one member; a remove removes the context given
 * (what the client observed) or, without one, what is live at the leader.
 */
export function planLocalWrite(
  keys: BigsetKeys,
  clocks: BigsetClocks,
  write: SetWrite,
  live: ReadonlyMap<string, readonly Dot[]>,
  actor: number,
  options: Omit<PlanOptions, 'live'> = {},
): WritePlan & { delta: BigsetDelta } {
  const planOptions: PlanOptions = { ...options, live }
  if (write.op === 'add') {
    const ops: ElementOp[] = write.elements.map((e) => ({
      element: e.element,
      ctx: normalizeDots([...(e.ctx ?? []), ...(live.get(e.element) ?? [])]),
    }))
    return planInsert(keys, clocks, actor, ops, planOptions)
  }
  const ops: ElementOp[] = write.elements.map((e) => ({
    element: e.element,
    ctx: e.ctx ?? live.get(e.element) ?? [],
  }))
  return planRemove(keys, clocks, ops, planOptions)
}
