/**
 * Dots: the unique names of element insertions. A dot `(actor, counter)` is the `counter`-th
 * event minted by `actor`; in Causeway the actor is a region id (a small integer), so clocks stay
 * bounded by the number of regions rather than the number of clients.
 */
import { CausewayError } from '../errors.js'

/** An actor id: a region id (or any id a backend mints dots under), an unsigned 32-bit integer. */
export type Actor = number

/** One event of one actor. */
export interface Dot {
  readonly actor: Actor
  /** 1-based event number of `actor`. */
  readonly counter: number
}

/** A dot on the wire: `[actor, counter]`. */
export type DotJSON = readonly [actor: number, counter: number]

/** Largest actor id: actors are encoded in 4 bytes of the element keys. */
export const MAX_ACTOR = 0xffff_ffff

/** Largest dot counter; counters are encoded in 8 bytes but must stay exact in a JS number. */
export const MAX_COUNTER = Number.MAX_SAFE_INTEGER

/** True when `value` is a valid actor id. */
export function isActor(value: unknown): value is Actor {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_ACTOR
}

/** True when `value` is a valid dot counter. */
export function isCounter(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_COUNTER
}

/** Builds a dot; throws a `RangeError` (a bug, not bad input) when a part is out of range. */
export function makeDot(actor: Actor, counter: number): Dot {
  if (!isActor(actor)) throw new RangeError(`dot actor out of range: ${actor}`)
  if (!isCounter(counter)) throw new RangeError(`dot counter out of range: ${counter}`)
  return { actor, counter }
}

/** Orders dots by actor, then counter. */
export function compareDots(a: Dot, b: Dot): number {
  return a.actor - b.actor || a.counter - b.counter
}

/** True when both name the same event. */
export function sameDot(a: Dot, b: Dot): boolean {
  return a.actor === b.actor && a.counter === b.counter
}

/** The dots sorted and without duplicates: the canonical form of a context. */
export function normalizeDots(dots: readonly Dot[]): Dot[] {
  const sorted = [...dots].sort(compareDots)
  const out: Dot[] = []
  for (const d of sorted) {
    const last = out[out.length - 1]
    if (last === undefined || !sameDot(last, d)) out.push(d)
  }
  return out
}

/** The wire form of a list of dots. */
export function dotsToJSON(dots: readonly Dot[]): DotJSON[] {
  return dots.map((d) => [d.actor, d.counter] as const)
}

/** Longest context accepted from the wire, in dots. */
export const MAX_CONTEXT_DOTS = 1024

/**
 * Parses a context (a list of `[actor, counter]`) from untrusted input into its canonical form.
 * Throws `INVALID_REQUEST` on anything malformed.
 */
export function parseDots(json: unknown, what = 'context'): Dot[] {
  if (!Array.isArray(json)) throw invalidDots(what, 'must be an array of [actor, counter]')
  if (json.length > MAX_CONTEXT_DOTS)
    throw invalidDots(what, `has more than ${MAX_CONTEXT_DOTS} dots`)
  const dots: Dot[] = []
  for (const item of json as unknown[]) dots.push(parseDot(item, what))
  return normalizeDots(dots)
}

/** Parses one `[actor, counter]`; throws `INVALID_REQUEST` when malformed. */
export function parseDot(json: unknown, what = 'dot'): Dot {
  if (!Array.isArray(json) || json.length !== 2)
    throw invalidDots(what, 'a dot must be [actor, counter]')
  const [actor, counter] = json as unknown[]
  if (!isActor(actor)) throw invalidDots(what, `actor must be an integer in 0..${MAX_ACTOR}`)
  if (!isCounter(counter)) throw invalidDots(what, 'counter must be a positive safe integer')
  return { actor, counter }
}

function invalidDots(what: string, why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `invalid ${what}: ${why}`)
}
