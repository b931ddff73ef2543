/**
 * A reference ORSWOT for the tests: riak_dt's `riak_dt_orswot` semantics (add-wins observed
 * remove; merge keeps the common dots plus each side's dots the other side's clock has not
 * seen), written as plainly as possible with sets of dot names, independent of the bigset code.
 *
 * riak_dt keeps a version vector plus a list of deferred removes for contexts it has not yet
 * seen; here the causal context is a plain set of dots, which records such a remove directly
 * (the same trick as the bigset's dot cloud) with the same observable behaviour. Deltas are
 * states too (delta-state CRDT), so a replica applies a delta by merging it.
 */
import type { Dot } from '../../src/bigset/dot.js'
import { compareElements } from '../../src/bigset/element.js'

const nameOf = (d: Dot) => `${d.actor}.${d.counter}`
const dotOf = (n: string): Dot => {
  const [actor, counter] = n.split('.').map(Number) as [number, number]
  return { actor, counter }
}

export class OrswotModel {
  /** Every dot this replica has seen (riak's clock plus deferred contexts). */
  readonly cc = new Set<string>()
  /** Element -> its live dots. */
  readonly entries = new Map<string, Set<string>>()

  /** riak `update({add, E}, Actor)`: a new dot; `replaceLocal` drops E's dots seen here, as riak does. */
  add(
    actor: number,
    element: string,
    ctx: readonly Dot[] = [],
    replaceLocal = false,
  ): { dot: Dot; delta: OrswotModel } {
    let counter = 1
    while (this.cc.has(`${actor}.${counter}`)) counter++
    for (const n of this.cc) {
      const d = dotOf(n)
      if (d.actor === actor && d.counter >= counter) counter = d.counter + 1
    }
    const dot = { actor, counter }
    const delta = new OrswotModel()
    const superseded = [
      ...ctx.map(nameOf),
      ...(replaceLocal ? (this.entries.get(element) ?? []) : []),
    ]
    for (const n of [...superseded, nameOf(dot)]) delta.cc.add(n)
    delta.entries.set(element, new Set([nameOf(dot)]))
    this.merge(delta)
    return { dot, delta }
  }

  /** riak `update({remove, E}, Actor, Ctx)` with a per-element context: removes only those dots. */
  remove(element: string, ctx: readonly Dot[]): OrswotModel {
    const delta = new OrswotModel()
    for (const d of ctx) delta.cc.add(nameOf(d))
    void element // a remove delta names no element: its context says it all
    this.merge(delta)
    return delta
  }

  /** riak `merge/2`. */
  merge(other: OrswotModel): void {
    const elements = new Set([...this.entries.keys(), ...other.entries.keys()])
    for (const e of elements) {
      const mine = this.entries.get(e) ?? new Set<string>()
      const theirs = other.entries.get(e) ?? new Set<string>()
      const kept = new Set<string>()
      for (const n of mine) if (theirs.has(n) || !other.cc.has(n)) kept.add(n)
      for (const n of theirs) if (mine.has(n) || !this.cc.has(n)) kept.add(n)
      if (kept.size > 0) this.entries.set(e, kept)
      else this.entries.delete(e)
    }
    for (const n of other.cc) this.cc.add(n)
  }

  /** riak `value/1`: the members, in element order. */
  value(): string[] {
    return [...this.entries.keys()].sort(compareElements)
  }

  /** The element's dots, sorted (its context). */
  dotsOf(element: string): Dot[] {
    return [...(this.entries.get(element) ?? [])]
      .map(dotOf)
      .sort((a, b) => a.actor - b.actor || a.counter - b.counter)
  }

  /** Every element with its dots, in element order. */
  state(): { element: string; dots: Dot[] }[] {
    return this.value().map((element) => ({ element, dots: this.dotsOf(element) }))
  }

  /** The causal context as dots. */
  contextDots(): Dot[] {
    return [...this.cc].map(dotOf)
  }

  clone(): OrswotModel {
    const c = new OrswotModel()
    for (const n of this.cc) c.cc.add(n)
    for (const [e, dots] of this.entries) c.entries.set(e, new Set(dots))
    return c
  }
}
