/**
 * Bigset clocks (Bigsets paper, section 4.1): a base version vector plus a "dot cloud" holding,
 * per actor, the events seen that are not contiguous with the base. Both the set-clock (events
 * seen) and the set-tombstone (events removed but whose keys may still exist) are such clocks.
 *
 * Values are immutable: every operation returns a new clock (or the same object when nothing
 * changed, so callers can skip a write with `===`). Clocks hold one entry per actor and the
 * clouds only hold out-of-order events, so they stay small however big the set grows.
 */
import { CausewayError } from '../errors.js'
import { isActor, isCounter, type Actor, type Dot } from './dot.js'
import { lowerBound } from './sorted-search.js'

/** A version vector plus a dot cloud. Normalised: see {@link clockFromJSON} for the invariants. */
export interface DotClock {
  /** Per actor, the highest `n` such that events `1..n` were all seen; only `n > 0` is stored. */
  readonly vv: ReadonlyMap<Actor, number>
  /** Per actor, the seen events above `vv + 1`, ascending and non-empty. */
  readonly cloud: ReadonlyMap<Actor, readonly number[]>
}

/** A clock on the wire: `{ vv: [[actor, n]], cloud: [[actor, [counters]]] }`, sorted by actor. */
export interface DotClockJSON {
  vv: [actor: number, counter: number][]
  cloud: [actor: number, counters: number[]][]
}

const NO_COUNTERS: readonly number[] = Object.freeze([])
const EMPTY_CLOCK: DotClock = Object.freeze({
  vv: new Map<Actor, number>(),
  cloud: new Map<Actor, readonly number[]>(),
})

/** The clock that has seen nothing. */
export function freshClock(): DotClock {
  return EMPTY_CLOCK
}

/** True when the clock has seen no event. */
export function isEmptyClock(clock: DotClock): boolean {
  return clock.vv.size === 0 && clock.cloud.size === 0
}

/** True when `clock` has seen `d`. */
export function hasSeen(clock: DotClock, d: Dot): boolean {
  if (d.counter <= (clock.vv.get(d.actor) ?? 0)) return true
  const cloud = clock.cloud.get(d.actor)
  return cloud !== undefined && cloud[lowerBound(cloud, d.counter)] === d.counter
}

/** The dots of `dots` that `clock` has not seen (riak's `subtract_seen`). */
export function unseenDots(clock: DotClock, dots: readonly Dot[]): Dot[] {
  return dots.filter((d) => !hasSeen(clock, d))
}

/** The highest event of `actor` the clock has seen (0 for none). */
export function maxCounter(clock: DotClock, actor: Actor): number {
  const cloud = clock.cloud.get(actor)
  return cloud !== undefined ? cloud[cloud.length - 1]! : (clock.vv.get(actor) ?? 0)
}

/**
 * Adds one event, folding the cloud into the base when it becomes contiguous (riak's `add_dot`).
 * Returns `clock` itself when the event was already seen.
 */
export function addDot(clock: DotClock, d: Dot): DotClock {
  const base = clock.vv.get(d.actor) ?? 0
  if (d.counter <= base) return clock
  const cloud = clock.cloud.get(d.actor) ?? NO_COUNTERS
  if (d.counter === base + 1) {
    let top = d.counter
    let i = 0
    while (i < cloud.length && cloud[i] === top + 1) {
      top++
      i++
    }
    return withActor(clock, d.actor, top, i === 0 ? cloud : cloud.slice(i))
  }
  const at = lowerBound(cloud, d.counter)
  if (cloud[at] === d.counter) return clock
  const next = cloud.slice()
  next.splice(at, 0, d.counter)
  return withActor(clock, d.actor, base, next)
}

/** Adds several events (riak's `add_dots`). */
export function addDots(clock: DotClock, dots: readonly Dot[]): DotClock {
  let out = clock
  for (const d of dots) out = addDot(out, d)
  return out
}

/**
 * Mints the next event of `actor`: one above the highest it has seen, so a dot is never reused
 * even if the actor's own events arrived back out of order.
 */
export function incrementClock(clock: DotClock, actor: Actor): { dot: Dot; clock: DotClock } {
  const d: Dot = { actor, counter: maxCounter(clock, actor) + 1 }
  return { dot: d, clock: addDot(clock, d) }
}

/** The join of two clocks: every event either has seen. */
export function mergeClocks(a: DotClock, b: DotClock): DotClock {
  if (isEmptyClock(b)) return a
  if (isEmptyClock(a)) return b
  const vv = new Map<Actor, number>()
  const cloud = new Map<Actor, readonly number[]>()
  for (const actor of actorsOf(a, b)) {
    const base = Math.max(a.vv.get(actor) ?? 0, b.vv.get(actor) ?? 0)
    const counters = unionSorted(
      a.cloud.get(actor) ?? NO_COUNTERS,
      b.cloud.get(actor) ?? NO_COUNTERS,
    )
    setNormalised(vv, cloud, actor, base, counters)
  }
  return { vv, cloud }
}

/**
 * Forgets the given events (used to trim a tombstone once their keys are gone). An event inside
 * the base splits it: the events above it move to the cloud, so trim a large base in one go
 * with {@link subtractClock} rather than dot by dot.
 */
export function removeDots(clock: DotClock, dots: readonly Dot[]): DotClock {
  const byActor = new Map<Actor, number[]>()
  for (const d of dots) {
    if (!hasSeen(clock, d)) continue
    let list = byActor.get(d.actor)
    if (list === undefined) byActor.set(d.actor, (list = []))
    list.push(d.counter)
  }
  if (byActor.size === 0) return clock
  const vv = new Map(clock.vv)
  const cloud = new Map(clock.cloud)
  for (const [actor, list] of byActor) {
    const removed = new Set(list)
    const base = clock.vv.get(actor) ?? 0
    let lowest = base + 1
    for (const c of list) if (c < lowest) lowest = c
    const counters: number[] = []
    // Events of the old base above the lowest removed one can no longer stay in the base.
    for (let c = lowest + 1; c <= base; c++) if (!removed.has(c)) counters.push(c)
    for (const c of clock.cloud.get(actor) ?? NO_COUNTERS) if (!removed.has(c)) counters.push(c)
    setNormalised(vv, cloud, actor, Math.min(base, lowest - 1), counters)
  }
  return { vv, cloud }
}

/**
 * The events of `a` that `b` has not seen. Used to trim a tombstone after a full compaction
 * pass: `subtractClock(current, atPassStart)`.
 */
export function subtractClock(a: DotClock, b: DotClock): DotClock {
  if (isEmptyClock(a) || isEmptyClock(b)) return a
  const vv = new Map<Actor, number>()
  const cloud = new Map<Actor, readonly number[]>()
  for (const actor of actorsOf(a)) {
    const baseA = a.vv.get(actor) ?? 0
    const cloudA = a.cloud.get(actor) ?? NO_COUNTERS
    const baseB = b.vv.get(actor) ?? 0
    const cloudB = b.cloud.get(actor) ?? NO_COUNTERS
    const inB = (c: number) => c <= baseB || cloudB[lowerBound(cloudB, c)] === c
    let base = 0
    let from = baseB + 1
    if (baseB === 0) {
      // The base survives up to the first event of b's cloud inside it.
      const firstHole = cloudB.length > 0 ? cloudB[0]! : Infinity
      base = Math.min(baseA, firstHole - 1)
      from = base + 2
    }
    const counters: number[] = []
    for (let c = from; c <= baseA; c++) if (!inB(c)) counters.push(c)
    for (const c of cloudA) if (!inB(c)) counters.push(c)
    setNormalised(vv, cloud, actor, base, counters)
  }
  return { vv, cloud }
}

/** True when `a` has seen every event `b` has seen. */
export function clockDescends(a: DotClock, b: DotClock): boolean {
  for (const [actor, baseB] of b.vv) {
    const baseA = a.vv.get(actor) ?? 0
    if (baseB <= baseA) continue
    // Every event in (baseA, baseB] must be in a's cloud.
    const cloudA = a.cloud.get(actor) ?? NO_COUNTERS
    const inRange = lowerBound(cloudA, baseB + 1) - lowerBound(cloudA, baseA + 1)
    if (inRange !== baseB - baseA) return false
  }
  for (const [actor, counters] of b.cloud) {
    for (const counter of counters) if (!hasSeen(a, { actor, counter })) return false
  }
  return true
}

/** True when both clocks have seen exactly the same events. */
export function clocksEqual(a: DotClock, b: DotClock): boolean {
  if (a.vv.size !== b.vv.size || a.cloud.size !== b.cloud.size) return false
  for (const [actor, n] of a.vv) if (b.vv.get(actor) !== n) return false
  for (const [actor, counters] of a.cloud) {
    const other = b.cloud.get(actor)
    if (other === undefined || other.length !== counters.length) return false
    for (let i = 0; i < counters.length; i++) if (other[i] !== counters[i]) return false
  }
  return true
}

/** Number of events held in the cloud: what a clock costs beyond its version vector. */
export function cloudSize(clock: DotClock): number {
  let n = 0
  for (const counters of clock.cloud.values()) n += counters.length
  return n
}

/** Every actor the clock mentions, ascending. */
export function clockActors(clock: DotClock): Actor[] {
  return actorsOf(clock)
}

/** The wire form, sorted by actor, so equal clocks have equal JSON. */
export function clockToJSON(clock: DotClock): DotClockJSON {
  const vv = [...clock.vv].sort((x, y) => x[0] - y[0])
  const cloud = [...clock.cloud]
    .sort((x, y) => x[0] - y[0])
    .map(([a, c]) => [a, [...c]] as [number, number[]])
  return { vv, cloud }
}

/**
 * Parses a clock from untrusted input and normalises it (cloud events at or below the base are
 * dropped, contiguous ones folded into it). Throws `INVALID_REQUEST` when malformed.
 */
export function clockFromJSON(json: unknown): DotClock {
  const bad = (why: string) => new CausewayError('INVALID_REQUEST', `invalid clock: ${why}`)
  if (typeof json !== 'object' || json === null) throw bad('must be an object')
  const { vv: vvJson, cloud: cloudJson } = json as Partial<Record<string, unknown>>
  if (!Array.isArray(vvJson) || !Array.isArray(cloudJson)) throw bad('needs vv and cloud arrays')
  const bases = new Map<Actor, number>()
  for (const entry of vvJson as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2)
      throw bad('a vv entry must be [actor, counter]')
    const [actor, n] = entry as unknown[]
    if (!isActor(actor) || !isCounter(n)) throw bad('a vv entry is out of range')
    if (bases.has(actor)) throw bad(`actor ${actor} appears twice in vv`)
    bases.set(actor, n)
  }
  const clouds = new Map<Actor, number[]>()
  for (const entry of cloudJson as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2 || !Array.isArray(entry[1])) {
      throw bad('a cloud entry must be [actor, [counters]]')
    }
    const [actor, counters] = entry as [unknown, unknown[]]
    if (!isActor(actor) || !counters.every(isCounter)) throw bad('a cloud entry is out of range')
    if (clouds.has(actor)) throw bad(`actor ${actor} appears twice in cloud`)
    clouds.set(
      actor,
      [...new Set(counters)].sort((x, y) => x - y),
    )
  }
  const vv = new Map<Actor, number>()
  const cloud = new Map<Actor, readonly number[]>()
  for (const actor of new Set([...bases.keys(), ...clouds.keys()])) {
    setNormalised(vv, cloud, actor, bases.get(actor) ?? 0, clouds.get(actor) ?? [])
  }
  return { vv, cloud }
}

/**
 * Builds a clock from trusted parts (as riak's test vectors write them); normalises like
 * {@link clockFromJSON}.
 */
export function clockOf(
  vv: Iterable<readonly [Actor, number]>,
  cloud: Iterable<readonly [Actor, readonly number[]]> = [],
): DotClock {
  return clockFromJSON({
    vv: [...vv].map(([a, n]) => [a, n]),
    cloud: [...cloud].map(([a, c]) => [a, [...c]]),
  })
}

// Stores one actor's entry, dropping cloud events covered by the base and folding in the
// contiguous ones. `counters` must be ascending and may contain duplicates.
function setNormalised(
  vv: Map<Actor, number>,
  cloud: Map<Actor, readonly number[]>,
  actor: Actor,
  base: number,
  counters: readonly number[],
): void {
  let top = base
  const rest: number[] = []
  for (const c of counters) {
    if (c <= top) continue
    if (c === top + 1 && rest.length === 0) top = c
    else if (rest[rest.length - 1] !== c) rest.push(c)
  }
  if (top > 0) vv.set(actor, top)
  else vv.delete(actor)
  if (rest.length > 0) cloud.set(actor, rest)
  else cloud.delete(actor)
}

function withActor(
  clock: DotClock,
  actor: Actor,
  base: number,
  counters: readonly number[],
): DotClock {
  const vv = new Map(clock.vv)
  if (base > 0) vv.set(actor, base)
  else vv.delete(actor)
  let cloud = clock.cloud
  if (counters !== clock.cloud.get(actor)) {
    const next = new Map(clock.cloud)
    if (counters.length > 0) next.set(actor, counters)
    else next.delete(actor)
    cloud = next
  }
  return { vv, cloud }
}

function actorsOf(...clocks: DotClock[]): Actor[] {
  const actors = new Set<Actor>()
  for (const c of clocks) {
    for (const a of c.vv.keys()) actors.add(a)
    for (const a of c.cloud.keys()) actors.add(a)
  }
  return [...actors].sort((x, y) => x - y)
}

function unionSorted(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const x = i < a.length ? a[i]! : Infinity
    const y = j < b.length ? b[j]! : Infinity
    if (x <= y) {
      out.push(x)
      i++
      if (x === y) j++
    } else {
      out.push(y)
      j++
    }
  }
  return out
}
