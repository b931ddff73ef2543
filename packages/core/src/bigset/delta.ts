/**
 * Bigset deltas: what one write ships to the other replicas (section 4.3). An add is the new
 * element key, `(element, dot)`, with the context it superseded; a remove is the element with
 * the dots the client observed. Applying a delta is idempotent and commutes with every other.
 */
import { CausewayError } from '../errors.js'
import { dotsToJSON, parseDot, parseDots, type Dot, type DotJSON } from './dot.js'
import { checkElement } from './element.js'

/** One insertion: the element key that ships, and the dots it supersedes. */
export interface ElementAdd {
  readonly element: string
  /** The dot minted for this insertion by the coordinating actor. */
  readonly dot: Dot
  /** The element's dots the insertion replaces (its context); may be empty. */
  readonly ctx: readonly Dot[]
}

/** One removal: the element and the dots it removes (its observed context). */
export interface ElementRemove {
  readonly element: string
  readonly ctx: readonly Dot[]
}

/** The replicated part of one write to one set. */
export interface BigsetDelta {
  readonly adds: readonly ElementAdd[]
  readonly removes: readonly ElementRemove[]
}

/** A delta on the wire (JSON, e.g. in a partition-log entry). */
export interface BigsetDeltaJSON {
  v: 1
  adds: { e: string; dot: DotJSON; ctx: DotJSON[] }[]
  removes: { e: string; ctx: DotJSON[] }[]
}

/** Most operations (adds plus removes) one delta may carry. */
export const MAX_DELTA_OPS = 10_000

/** True when the delta changes nothing anywhere. */
export function isEmptyDelta(delta: BigsetDelta): boolean {
  return delta.adds.length === 0 && delta.removes.length === 0
}

/** The wire form of a delta. */
export function deltaToJSON(delta: BigsetDelta): BigsetDeltaJSON {
  return {
    v: 1,
    adds: delta.adds.map((a) => ({
      e: a.element,
      dot: [a.dot.actor, a.dot.counter],
      ctx: dotsToJSON(a.ctx),
    })),
    removes: delta.removes.map((r) => ({ e: r.element, ctx: dotsToJSON(r.ctx) })),
  }
}

/** Parses and validates a delta from the wire; throws `INVALID_REQUEST` when malformed. */
export function deltaFromJSON(json: unknown): BigsetDelta {
  const bad = (why: string) => new CausewayError('INVALID_REQUEST', `invalid set delta: ${why}`)
  if (typeof json !== 'object' || json === null) throw bad('must be an object')
  const { v, adds, removes } = json as Partial<Record<string, unknown>>
  if (v !== 1) throw bad(`unknown version ${String(v)}`)
  if (!Array.isArray(adds) || !Array.isArray(removes)) throw bad('needs adds and removes arrays')
  if (adds.length + removes.length > MAX_DELTA_OPS)
    throw bad(`more than ${MAX_DELTA_OPS} operations`)
  const record = (item: unknown) => {
    if (typeof item !== 'object' || item === null) throw bad('an operation must be an object')
    return item as Partial<Record<string, unknown>>
  }
  // A delta is not client input: a bad element in one is a malformed delta, not a bad element.
  const element = (e: unknown): string => {
    try {
      checkElement(e)
    } catch (error) {
      throw bad((error as Error).message)
    }
    return e
  }
  return {
    adds: (adds as unknown[]).map((item) => {
      const op = record(item)
      return { element: element(op.e), dot: parseDot(op.dot), ctx: parseDots(op.ctx ?? []) }
    }),
    removes: (removes as unknown[]).map((item) => {
      const op = record(item)
      return { element: element(op.e), ctx: parseDots(op.ctx) }
    }),
  }
}
