/**
 * riak_dt's ORSWOT (`riak_dt_orswot`, the state behind Riak sets) as one stored value: the
 * baseline the `bigsets` suite judges the decomposed set against. State, as riak_dt keeps it: a
 * version vector (the set clock), per element the dots that added it, and removes deferred until
 * the clock has seen their context.
 *
 * - add: increment the actor's clock entry; that entry is the element's new dot, and it replaces
 *   every dot the element had (a re-add keeps one entry);
 * - remove without a context: drop the element (riak_dt answers a precondition error when it is
 *   absent; here `false`); with a context: drop the element's dots the context has seen, and
 *   defer the remove when the set clock does not descend the context;
 * - merge: join the clocks; per element keep the common dots and each side's dots the other
 *   side's clock has not seen; then apply the deferred removes.
 *
 * The stored form is JSON (see {@link OrswotJson}): compact (dots name their actor by position in
 * the clock, entries are flat arrays) and nothing else, no padding. {@link Orswot.fromJSON}
 * adopts a freshly parsed value after checking it, instead of copying it, and
 * {@link Orswot.toJSON} hands back the same arrays: a whole-value insert then costs what it must
 * (parse, check, one binary search and splice, stringify) and no more.
 */

/** One event: an actor (a region) and its counter. */
export interface Dot {
  actor: string
  counter: number
}

/** A version vector: one `[actor, counter]` per actor. */
export type VersionVector = [actor: string, counter: number][]

/** An element and its dots, as `(actor's index in the clock, counter)` pairs, flattened. */
export type OrswotEntry = [element: string, ...dots: number[]]

/** The stored form of an ORSWOT. */
export interface OrswotJson {
  /** The set clock, actors in the order they first wrote (dots refer to them by index). */
  clock: VersionVector
  /** One entry per element, in ascending element order (UTF-16 code units), no duplicates. */
  entries: OrswotEntry[]
  /** Removes waiting for their context; absent when there are none. */
  deferred?: [context: VersionVector, elements: string[]][]
}

const isCounter = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) > 0

function fail(why: string): never {
  throw new TypeError(`not an ORSWOT: ${why}`)
}

function checkVector(value: unknown, what: string): VersionVector {
  if (!Array.isArray(value)) fail(`${what} is not an array`)
  const actors = new Set<string>()
  for (const entry of value as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2) fail(`${what} has an entry that is not a pair`)
    const [actor, counter] = entry as unknown[]
    if (typeof actor !== 'string' || !isCounter(counter))
      fail(`${what} has an entry that is not [actor, counter]`)
    if (actors.has(actor)) fail(`${what} names actor ${JSON.stringify(actor)} twice`)
    actors.add(actor)
  }
  return value as VersionVector
}

/** The counter of `actor` in `vv` (0 when absent). */
function counterOf(vv: VersionVector, actor: string): number {
  for (const [a, c] of vv) if (a === actor) return c
  return 0
}

/** `a` has seen every event of `b`. */
function descends(a: VersionVector, b: VersionVector): boolean {
  return b.every(([actor, counter]) => counterOf(a, actor) >= counter)
}

/** Index of `element` in sorted `entries`, or `-(insertion point) - 1`. */
function search(entries: readonly OrswotEntry[], element: string): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const e = entries[mid]![0]
    if (e < element) lo = mid + 1
    else if (e > element) hi = mid
    else return mid
  }
  return -lo - 1
}

/** An ORSWOT (see the module comment). Mutable: updates change it in place. */
export class Orswot {
  #clock: VersionVector
  #entries: OrswotEntry[]
  #deferred: [VersionVector, string[]][]

  private constructor(
    clock: VersionVector,
    entries: OrswotEntry[],
    deferred: [VersionVector, string[]][],
  ) {
    this.#clock = clock
    this.#entries = entries
    this.#deferred = deferred
  }

  /** The empty set. */
  static empty(): Orswot {
    return new Orswot([], [], [])
  }

  /**
   * The set `actor` makes by adding `elements` one after the other to an empty set (the same
   * state as calling {@link add} for each), built in O(n log n) for large sets.
   */
  static ofAdds(actor: string, elements: readonly string[]): Orswot {
    const last = new Map<string, number>()
    elements.forEach((e, i) => last.set(e, i + 1))
    const entries = [...last]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([e, counter]): OrswotEntry => [e, 0, counter])
    return new Orswot(elements.length > 0 ? [[actor, elements.length]] : [], entries, [])
  }

  /**
   * Adopts a stored value (as `JSON.parse` returned it) after checking that it is a well-formed
   * ORSWOT: the value's arrays become this set's state, so the caller must not keep using them.
   */
  static fromJSON(value: unknown): Orswot {
    if (typeof value !== 'object' || value === null) fail('not an object')
    const { clock, entries, deferred } = value as Record<string, unknown>
    const vv = checkVector(clock, 'the clock')
    if (!Array.isArray(entries)) fail('entries is not an array')
    const seenActors = new Array<boolean>(vv.length)
    let previous: string | undefined
    for (const entry of entries as unknown[]) {
      if (!Array.isArray(entry) || entry.length < 3 || entry.length % 2 === 0)
        fail('an entry is not [element, actor, counter, ...]')
      const element: unknown = entry[0]
      if (typeof element !== 'string') fail('an element is not a string')
      if (previous !== undefined && !(previous < element))
        fail(`entries are not in strictly ascending order at ${JSON.stringify(element)}`)
      previous = element
      seenActors.fill(false)
      for (let i = 1; i < entry.length; i += 2) {
        const actor: unknown = entry[i]
        const counter: unknown = entry[i + 1]
        if (!Number.isInteger(actor) || (actor as number) < 0 || (actor as number) >= vv.length)
          fail(`a dot of ${JSON.stringify(element)} names no actor of the clock`)
        if (!isCounter(counter) || counter > vv[actor as number]![1])
          fail(`a dot of ${JSON.stringify(element)} is not covered by the clock`)
        if (seenActors[actor as number])
          fail(`${JSON.stringify(element)} has two dots of one actor`)
        seenActors[actor as number] = true
      }
    }
    const pending: [VersionVector, string[]][] = []
    if (deferred !== undefined) {
      if (!Array.isArray(deferred)) fail('deferred is not an array')
      for (const item of deferred as unknown[]) {
        if (!Array.isArray(item) || item.length !== 2) fail('a deferred remove is not a pair')
        const ctx = checkVector(item[0], 'a deferred context')
        const elements: unknown = item[1]
        if (!Array.isArray(elements) || !elements.every((e) => typeof e === 'string'))
          fail('a deferred remove has elements that are not strings')
        pending.push([ctx, elements as string[]])
      }
    }
    return new Orswot(vv, entries as OrswotEntry[], pending)
  }

  /** The stored form: this set's own arrays (valid until its next update). */
  toJSON(): OrswotJson {
    const json: OrswotJson = { clock: this.#clock, entries: this.#entries }
    if (this.#deferred.length > 0) json.deferred = this.#deferred
    return json
  }

  /** Number of elements. */
  get size(): number {
    return this.#entries.length
  }

  /** The set clock, as a copy. */
  get clock(): VersionVector {
    return this.#clock.map(([a, c]) => [a, c])
  }

  /** The removes waiting for their context, as a copy. */
  get deferred(): [VersionVector, string[]][] {
    return this.#deferred.map(([ctx, els]) => [ctx.map(([a, c]) => [a, c]), [...els]])
  }

  /** Whether `element` is in the set. */
  has(element: string): boolean {
    return search(this.#entries, element) >= 0
  }

  /** The dots of `element` (empty when absent): its context. */
  dotsOf(element: string): Dot[] {
    const at = search(this.#entries, element)
    return at < 0 ? [] : this.#dotsAt(at)
  }

  /** The elements, in ascending order. */
  value(): string[] {
    return this.#entries.map((e) => e[0])
  }

  /** riak_dt `update({add, E}, Actor)`: a new dot from `actor`'s clock entry, replacing E's dots. */
  add(actor: string, element: string): Dot {
    let index = this.#clock.findIndex(([a]) => a === actor)
    if (index < 0) index = this.#clock.push([actor, 0]) - 1
    const slot = this.#clock[index]!
    const counter = ++slot[1]
    const entry: OrswotEntry = [element, index, counter]
    const at = search(this.#entries, element)
    if (at >= 0) this.#entries[at] = entry
    else this.#entries.splice(-at - 1, 0, entry)
    return { actor, counter }
  }

  /**
   * riak_dt `update({remove, E}, Actor[, Ctx])`. Without `context`: removes `element` and answers
   * whether it was there. With a context (a version vector, such as another replica's clock): drops
   * the element's dots the context has seen, and keeps the remove for later when this set's clock
   * has not seen all of the context (so an add it observed elsewhere is removed once it arrives).
   */
  remove(element: string, context?: VersionVector): boolean {
    const at = search(this.#entries, element)
    if (context === undefined) {
      if (at < 0) return false
      this.#entries.splice(at, 1)
      return true
    }
    const ctx = checkVector(
      context.map(([a, c]) => [a, c]),
      'the context',
    )
    const removed = at >= 0 && this.#removeSeen(at, ctx)
    if (!descends(this.#clock, ctx)) this.#defer(ctx, element)
    return removed
  }

  /** riak_dt `merge/2`: this set becomes the join of itself and `other` (which is not changed). */
  merge(other: Orswot): void {
    // Actors of the other side keep their names; their positions are this clock's.
    const clock: VersionVector = this.#clock.map(([a, c]) => [a, c])
    const index = (actor: string): number => {
      const i = clock.findIndex(([a]) => a === actor)
      return i >= 0 ? i : clock.push([actor, 0]) - 1
    }
    const mineSeen = (d: Dot) => counterOf(this.#clock, d.actor) >= d.counter
    const theirsSeen = (d: Dot) => counterOf(other.#clock, d.actor) >= d.counter
    const same = (a: Dot, b: Dot) => a.actor === b.actor && a.counter === b.counter

    const entries: OrswotEntry[] = []
    const keep = (element: string, mine: Dot[], theirs: Dot[]): void => {
      const kept = [
        ...mine.filter((d) => theirs.some((t) => same(d, t)) || !theirsSeen(d)),
        ...theirs.filter((t) => !mine.some((d) => same(d, t)) && !mineSeen(t)),
      ]
      if (kept.length === 0) return
      const entry: OrswotEntry = [element]
      for (const d of kept) entry.push(index(d.actor), d.counter)
      entries.push(entry)
    }
    let i = 0
    let j = 0
    const a = this.#entries
    const b = other.#entries
    while (i < a.length || j < b.length) {
      const x = a[i]?.[0]
      const y = b[j]?.[0]
      if (y === undefined || (x !== undefined && x < y)) keep(x!, this.#dotsAt(i++), [])
      else if (x === undefined || y < x) keep(y, [], other.#dotsAt(j++))
      else keep(x, this.#dotsAt(i++), other.#dotsAt(j++))
    }
    for (const [actor, counter] of other.#clock) {
      const slot = clock[index(actor)]!
      slot[1] = Math.max(slot[1], counter)
    }
    this.#clock = clock
    this.#entries = entries
    const pending = [...this.#deferred, ...other.#deferred]
    this.#deferred = []
    for (const [ctx, elements] of pending) for (const element of elements) this.remove(element, ctx)
  }

  /** A deep copy. */
  clone(): Orswot {
    return new Orswot(
      this.clock,
      this.#entries.map((e) => [...e]),
      this.deferred,
    )
  }

  #dotsAt(at: number): Dot[] {
    const entry = this.#entries[at]!
    const dots: Dot[] = []
    for (let i = 1; i < entry.length; i += 2)
      dots.push({ actor: this.#clock[entry[i] as number]![0], counter: entry[i + 1] as number })
    return dots
  }

  /** Drops the dots of entry `at` that `ctx` has seen; true when any went. */
  #removeSeen(at: number, ctx: VersionVector): boolean {
    const entry = this.#entries[at]!
    const left: OrswotEntry = [entry[0]]
    for (let i = 1; i < entry.length; i += 2) {
      const actor = this.#clock[entry[i] as number]![0]
      if (counterOf(ctx, actor) < (entry[i + 1] as number)) left.push(entry[i]!, entry[i + 1]!)
    }
    if (left.length === entry.length) return false
    if (left.length === 1) this.#entries.splice(at, 1)
    else this.#entries[at] = left
    return true
  }

  #defer(ctx: VersionVector, element: string): void {
    const key = JSON.stringify([...ctx].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    const same = this.#deferred.find(
      ([c]) => JSON.stringify([...c].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) === key,
    )
    if (same === undefined) this.#deferred.push([ctx, [element]])
    else if (!same[1].includes(element)) same[1].push(element)
  }
}
