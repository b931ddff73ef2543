/**
 * The DVVSet README's Riak experiment (`sib.erl`): 101 interleaved writes to one key on one
 * server, in two scenarios, then count the siblings.
 *
 * - Scenario 1: client C1 writes (with the context of its last read) and reads; another client
 *   writes blind (no context); repeat.
 * - Scenario 2: client A writes (with the context of its last read) and reads; client B does the
 *   same; repeat.
 *
 * Every write that carries a context saw every value but the one written since its read, so a
 * store that tracks causality exactly ends with 2 siblings. Riak's version vectors of the time
 * (one entry per server, merged when writes conflict) end with one sibling per write: 101.
 */
import { DvvSet, type CausalContext } from '@causeway/core'
import { EMPTY_OBJECT, type Vv, advance, descends, mergeVv, writeObject } from './vv-clock.js'

/** One key of a store, as the experiment uses it; `C` is the store's context. */
export interface InterleavedStore<C> {
  put(client: number, value: string, context: C | undefined): Promise<void>
  get(): Promise<{ values: readonly string[]; context: C }>
}

/** Scenario 1 (see the module comment); resolves to the number of siblings at the end. */
export async function scenarioOne<C>(store: InterleavedStore<C>, writes = 101): Promise<number> {
  let context: C | undefined
  for (let i = 1; i <= writes; i++) {
    if (i % 2 === 1) {
      await store.put(1, `v${i}`, context)
      context = (await store.get()).context
    } else {
      await store.put(2, `v${i}`, undefined)
    }
  }
  return (await store.get()).values.length
}

/** Scenario 2 (see the module comment); resolves to the number of siblings at the end. */
export async function scenarioTwo<C>(store: InterleavedStore<C>, writes = 101): Promise<number> {
  const contexts = new Map<number, C>()
  for (let i = 1; i <= writes; i++) {
    const client = i % 2 === 1 ? 1 : 2
    await store.put(client, `v${i}`, contexts.get(client))
    contexts.set(client, (await store.get()).context)
  }
  return (await store.get()).values.length
}

/** DVVSet (`@causeway/core`), the server as the only actor: what Causeway does per region. */
export function dvvSetStore(): InterleavedStore<CausalContext> {
  let set: DvvSet<string> = { entries: [], anonymous: [] }
  return {
    async put(_client, value, context) {
      set = DvvSet.update(DvvSet.new(context ?? [], value), set, 0)
    },
    async get() {
      return { values: DvvSet.values(set), context: DvvSet.join(set) }
    },
  }
}

/**
 * Version vectors with one entry per server, merged on conflict (Riak's vnode vclocks; the
 * README's "VV with server ids #2"): a write whose context does not descend the stored clock is
 * kept beside every stored value, and the clocks merge, so no value can ever be told apart again.
 */
export function serverIdVvStore(): InterleavedStore<Vv> {
  let clock: Vv = []
  let values: string[] = []
  let counter = 0
  return {
    async put(_client, value, context) {
      const seen = context ?? []
      const descends = clock.every(([id, n]) => (seen.find((e) => e[0] === id)?.[1] ?? 0) >= n)
      values = descends ? [value] : [...values, value]
      counter = Math.max(counter, ...seen.map((e) => e[1])) + 1
      clock = [[0, counter, 0]]
    },
    async get() {
      return { values, context: clock }
    },
  }
}

/** Riak's objects with client-id version vectors (the `dvv` suite's baseline; no pruning here). */
export function clientIdVvStore(): InterleavedStore<Vv> {
  let object = EMPTY_OBJECT
  const counters = new Map<number, number>()
  return {
    async put(client, value, context) {
      const seq = (counters.get(client) ?? 0) + 1
      counters.set(client, seq)
      object = writeObject(object, value, context ?? [], client, seq, 0)
    },
    async get() {
      return { values: object.values, context: object.clock }
    },
  }
}

/**
 * Client-id version vectors with a clock per value (each write's own clock kept, values
 * dominated by a write's clock dropped): exact, at the price of clocks that grow with the
 * clients (the README's "VV with client ids").
 */
export function clientIdPerValueVvStore(): InterleavedStore<Vv> {
  let siblings: { value: string; clock: Vv }[] = []
  const counters = new Map<number, number>()
  return {
    async put(client, value, context) {
      const seq = (counters.get(client) ?? 0) + 1
      counters.set(client, seq)
      const clock = advance(context ?? [], client, seq, 0)
      if (siblings.some((s) => descends(s.clock, clock))) return
      siblings = [...siblings.filter((s) => !descends(clock, s.clock)), { value, clock }]
    },
    async get() {
      return {
        values: siblings.map((s) => s.value),
        context: siblings.reduce<Vv>((acc, s) => mergeVv(acc, s.clock), []),
      }
    },
  }
}
