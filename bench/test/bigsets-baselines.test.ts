/** The `bigsets` suite's whole-value baselines: riak_dt's ORSWOT as one value, and the array. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Orswot, type OrswotJson } from '../src/bigsets/orswot.js'
import {
  type ValueStore,
  grownValue,
  insertIntoArray,
  insertIntoOrswot,
  sortedInsert,
} from '../src/bigsets/whole-value-sets.js'

/** A key-value store that keeps values as JSON text, as the real ones do. */
function jsonStore(): ValueStore & { text(key: string): string | undefined } {
  const values = new Map<string, string>()
  return {
    get: async (key) => {
      const text = values.get(key)
      return text === undefined ? undefined : JSON.parse(text)
    },
    put: async (key, value) => void values.set(key, JSON.stringify(value)),
    text: (key) => values.get(key),
  }
}

describe('ORSWOT (riak_dt semantics)', () => {
  it('mints each add a dot by incrementing the actor’s clock entry', () => {
    const s = Orswot.empty()
    expect(s.add('r0', 'x')).toEqual({ actor: 'r0', counter: 1 })
    expect(s.add('r0', 'y')).toEqual({ actor: 'r0', counter: 2 })
    expect(s.add('r1', 'z')).toEqual({ actor: 'r1', counter: 1 })
    expect(s.add('r0', 'w')).toEqual({ actor: 'r0', counter: 3 })
    expect(s.clock).toEqual([
      ['r0', 3],
      ['r1', 1],
    ])
    expect(s.value()).toEqual(['w', 'x', 'y', 'z'])
    expect(s.dotsOf('z')).toEqual([{ actor: 'r1', counter: 1 }])
  })

  it('keeps one entry on a re-add, with only the new dot (riak_dt replaces the dots)', () => {
    const s = Orswot.empty()
    s.add('r0', 'x')
    s.add('r1', 'x')
    expect(s.add('r0', 'x')).toEqual({ actor: 'r0', counter: 2 })
    expect(s.size).toBe(1)
    expect(s.dotsOf('x')).toEqual([{ actor: 'r0', counter: 2 }])
    expect(s.clock).toEqual([
      ['r0', 2],
      ['r1', 1],
    ])
  })

  it('stores compactly: actors by position in the clock, elements and dots as two flat arrays', () => {
    const s = Orswot.empty()
    s.add('r0', 'b')
    s.add('r1', 'a')
    s.add('r0', 'c')
    expect(JSON.stringify(s)).toBe(
      '{"clock":[["r0",2],["r1",1]],"elements":["a","b","c"],"dots":[1,1,1,1,0,1,1,0,2]}',
    )
    const back = Orswot.fromJSON(JSON.parse(JSON.stringify(s)))
    expect(back.value()).toEqual(['a', 'b', 'c'])
    expect(back.dotsOf('a')).toEqual([{ actor: 'r1', counter: 1 }])
    // Updates after a round trip keep the layout consistent.
    back.add('r1', 'b')
    back.add('r0', 'aa')
    back.remove('c')
    expect(JSON.stringify(back)).toBe(
      '{"clock":[["r0",3],["r1",2]],"elements":["a","aa","b"],"dots":[1,1,1,1,0,3,1,1,2]}',
    )
    expect(Orswot.fromJSON(JSON.parse(JSON.stringify(back))).dotsOf('b')).toEqual([
      { actor: 'r1', counter: 2 },
    ])
  })

  it('refuses stored values that are not well-formed ORSWOTs', () => {
    const ok = { clock: [['r0', 2]], elements: ['a'], dots: [1, 0, 1] }
    expect(Orswot.fromJSON(ok).value()).toEqual(['a'])
    const bad: unknown[] = [
      null,
      [],
      { clock: [], elements: {}, dots: [] },
      { clock: [['r0', 0]], elements: [], dots: [] },
      {
        clock: [
          ['r0', 1],
          ['r0', 2],
        ],
        elements: [],
        dots: [],
      },
      { clock: [['r0', 2]], elements: ['b', 'a'], dots: [1, 0, 1, 1, 0, 2] }, // out of order
      { clock: [['r0', 2]], elements: ['a', 'a'], dots: [1, 0, 1, 1, 0, 2] }, // duplicate
      { clock: [['r0', 2]], elements: ['a'], dots: [1, 0, 3] }, // a dot the clock has not seen
      { clock: [['r0', 2]], elements: ['a'], dots: [1, 1, 1] }, // no such actor
      { clock: [['r0', 2]], elements: ['a'], dots: [2, 0, 1, 0, 2] }, // two dots of one actor
      { clock: [['r0', 2]], elements: ['a'], dots: [0] }, // no dots
      { clock: [['r0', 2]], elements: ['a'], dots: [1, 0] }, // cut short
      { clock: [['r0', 2]], elements: ['a'], dots: [1, 0, 1, 1] }, // left over
      { clock: [['r0', 2]], elements: [1], dots: [1, 0, 1] },
      { clock: [['r0', 2]], elements: [], dots: [], deferred: [[[['r1', 1]], [1]]] },
    ]
    for (const value of bad) expect(() => Orswot.fromJSON(value), JSON.stringify(value)).toThrow()
  })

  it('builds a grown set in bulk exactly as adding one element after the other does', () => {
    const elements = ['d', 'a', 'c', 'a', 'b', 'd', 'e']
    const added = Orswot.empty()
    for (const e of elements) added.add('r0', e)
    expect(Orswot.ofAdds('r0', elements).toJSON()).toEqual(added.toJSON())
    expect(Orswot.ofAdds('r0', []).toJSON()).toEqual(Orswot.empty().toJSON())
  })

  it('merges as riak_dt: disjoint_merge_test', () => {
    const a1 = Orswot.empty()
    a1.add('1', 'bar')
    const b1 = Orswot.empty()
    b1.add('2', 'baz')
    const c = a1.clone()
    c.merge(b1)
    const a2 = a1.clone()
    a2.remove('bar')
    a2.merge(c)
    expect(a2.value()).toEqual(['baz'])
  })

  it('defers a remove whose context it has not seen: dead_node_update_test and after', () => {
    const a = Orswot.empty()
    a.add('a', 'A')
    const b = a.clone()
    b.add('b', 'B')
    // A remove of 'A' with B's context, on A, which has not seen b:1.
    a.remove('A', b.clock)
    expect(a.value()).toEqual([])
    expect(a.deferred).toEqual([
      [
        [
          ['a', 1],
          ['b', 1],
        ],
        ['A'],
      ],
    ])
    // Reference: remove 'X' with context [{b,1}] on an empty set, merged with add('X')@b -> empty.
    const empty = Orswot.empty()
    empty.remove('X', [['b', 1]])
    const other = Orswot.empty()
    other.add('b', 'X')
    empty.merge(other)
    expect(empty.value()).toEqual([])
    expect(empty.deferred).toEqual([])
    expect(empty.clock).toEqual([['b', 1]])
  })

  it('keeps both dots of concurrent adds of one element from two actors', () => {
    const a = Orswot.empty()
    a.add('a', 'Z')
    const b = Orswot.empty()
    b.add('b', 'Z')
    a.merge(b)
    expect(a.dotsOf('Z')).toEqual([
      { actor: 'a', counter: 1 },
      { actor: 'b', counter: 1 },
    ])
    expect(a.clock).toEqual([
      ['a', 1],
      ['b', 1],
    ])
  })

  it('add wins over a concurrent remove; a remove wins over the adds it saw', () => {
    const r0 = Orswot.empty()
    r0.add('r0', 'x')
    const r1 = r0.clone()
    r0.remove('x', r0.clock) // saw r0:1
    r1.add('r1', 'x') // concurrent re-add
    const left = r0.clone()
    left.merge(r1)
    const right = r1.clone()
    right.merge(r0)
    expect(left.value()).toEqual(['x'])
    expect(right.toJSON()).toEqual(left.toJSON())
    expect(left.dotsOf('x')).toEqual([{ actor: 'r1', counter: 1 }])
  })

  it('converges: replicas that exchanged everything hold the same set, in any merge order', () => {
    const actors = ['r0', 'r1', 'r2']
    const op = fc.record({
      replica: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom('add', 'remove', 'remove-ctx', 'sync'),
      element: fc.constantFrom('a', 'b', 'c'),
      from: fc.integer({ min: 0, max: 2 }),
    })
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.integer({ min: 0, max: 5 }), (ops, perm) => {
        const replicas = actors.map(() => Orswot.empty())
        for (const o of ops) {
          const r = replicas[o.replica]!
          if (o.kind === 'add') r.add(actors[o.replica]!, o.element)
          else if (o.kind === 'remove') r.remove(o.element)
          else if (o.kind === 'remove-ctx') r.remove(o.element, replicas[o.from]!.clock)
          else r.merge(replicas[o.from]!)
        }
        // Every state survives its stored form (fromJSON checks the layout).
        for (const r of replicas)
          expect(Orswot.fromJSON(JSON.parse(JSON.stringify(r))).toJSON()).toEqual(r.toJSON())
        const orders = [
          [0, 1, 2],
          [0, 2, 1],
          [1, 0, 2],
          [1, 2, 0],
          [2, 0, 1],
          [2, 1, 0],
        ]
        const results = [orders[perm]!, [2, 1, 0]].map((order) => {
          const s = Orswot.empty()
          for (const i of order) s.merge(replicas[i]!)
          return { value: s.value(), dots: s.value().map((e) => s.dotsOf(e)) }
        })
        expect(results[0]!.value).toEqual(results[1]!.value)
        const sortDots = (d: { actor: string; counter: number }[][]) =>
          d.map((ds) => [...ds].sort((x, y) => x.actor.localeCompare(y.actor)))
        expect(sortDots(results[0]!.dots)).toEqual(sortDots(results[1]!.dots))
      }),
      { numRuns: 300 },
    )
  })
})

describe('whole-value inserts by read-modify-write', () => {
  it('ORSWOT: each insert reads, mints a dot of the writing region, and writes the value whole', async () => {
    const store = jsonStore()
    expect(await insertIntoOrswot(store, 'k', 'r0', 'b')).toEqual({ actor: 'r0', counter: 1 })
    expect(await insertIntoOrswot(store, 'k', 'r0', 'a')).toEqual({ actor: 'r0', counter: 2 })
    expect(await insertIntoOrswot(store, 'k', 'r1', 'c')).toEqual({ actor: 'r1', counter: 1 })
    // A re-add: a new dot, the clock advanced, still one entry for the element.
    expect(await insertIntoOrswot(store, 'k', 'r0', 'b')).toEqual({ actor: 'r0', counter: 3 })
    const stored = JSON.parse(store.text('k')!) as OrswotJson
    expect(stored).toEqual({
      clock: [
        ['r0', 3],
        ['r1', 1],
      ],
      elements: ['a', 'b', 'c'],
      dots: [1, 0, 2, 1, 0, 3, 1, 1, 1],
    })
  })

  it('ORSWOT: continues from a grown value written whole', async () => {
    const store = jsonStore()
    await store.put('k', grownValue('orswot', 'r0', ['c', 'a', 'b']))
    expect(await insertIntoOrswot(store, 'k', 'r0', 'd')).toEqual({ actor: 'r0', counter: 4 })
    const set = Orswot.fromJSON(await store.get('k'))
    expect(set.value()).toEqual(['a', 'b', 'c', 'd'])
    expect(set.dotsOf('a')).toEqual([{ actor: 'r0', counter: 2 }])
  })

  it('array: sorted, distinct, no dots', async () => {
    const store = jsonStore()
    await store.put('k', grownValue('array', 'r0', ['c', 'a', 'c']))
    await insertIntoArray(store, 'k', 'b')
    await insertIntoArray(store, 'k', 'a')
    expect(store.text('k')).toBe('["a","b","c"]')
    const values: string[] = []
    for (const v of ['x', 'a', 'm', 'a']) sortedInsert(values, v)
    expect(values).toEqual(['a', 'm', 'x'])
  })
})
