import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type DvvActor,
  type CausalContext,
  type DvvEntry,
  DvvSet,
  compareDvvActors,
} from '../src/dvvset.js'
import { CausewayError } from '../src/errors.js'

// `{Entries, Anonymous}` of the reference, written as close to the Erlang as TypeScript allows:
// atoms a, b, c are string actors and v1, v2 string values.
function clock<V, A extends DvvActor>(
  entries: readonly DvvEntry<V, A>[],
  anonymous: readonly V[],
): DvvSet<V, A> {
  return { entries, anonymous }
}

// The reference's less_test uses the Erlang list `[a]` as an id, which sorts after every atom;
// '~' sorts after every lowercase letter, so the entries keep the reference's order.
const listA = '~a'

describe('DvvSet: the reference test vectors (dvvset.erl @27fd1225)', () => {
  it('join_test', () => {
    const A = DvvSet.new('v1')
    expect(A).toEqual(clock([], ['v1']))
    const A1 = DvvSet.update(A, 'a')
    expect(A1).toEqual(clock([['a', 1, ['v1']]], []))
    const B = DvvSet.new(DvvSet.join(A1), 'v2')
    expect(B).toEqual(clock([['a', 1, []]], ['v2']))
    const B1 = DvvSet.update(B, A1, 'b')
    expect(B1).toEqual(
      clock(
        [
          ['a', 1, []],
          ['b', 1, ['v2']],
        ],
        [],
      ),
    )
    expect(DvvSet.join(A)).toEqual([])
    expect(DvvSet.join(A1)).toEqual([['a', 1]])
    expect(DvvSet.join(B1)).toEqual([
      ['a', 1],
      ['b', 1],
    ])
  })

  it('update_test', () => {
    const A0 = DvvSet.update(DvvSet.new('v1'), 'a')
    const A1 = DvvSet.update(DvvSet.newList(DvvSet.join(A0), ['v2']), A0, 'a')
    const A2 = DvvSet.update(DvvSet.newList(DvvSet.join(A1), ['v3']), A1, 'b')
    const A3 = DvvSet.update(DvvSet.newList(DvvSet.join(A0), ['v4']), A1, 'b')
    const A4 = DvvSet.update(DvvSet.newList(DvvSet.join(A0), ['v5']), A1, 'a')
    expect(A0).toEqual(clock([['a', 1, ['v1']]], []))
    expect(A1).toEqual(clock([['a', 2, ['v2']]], []))
    expect(A2).toEqual(
      clock(
        [
          ['a', 2, []],
          ['b', 1, ['v3']],
        ],
        [],
      ),
    )
    expect(A3).toEqual(
      clock(
        [
          ['a', 2, ['v2']],
          ['b', 1, ['v4']],
        ],
        [],
      ),
    )
    expect(A4).toEqual(clock([['a', 3, ['v5', 'v2']]], []))
  })

  it('sync_test', () => {
    const X = clock([['x', 1, []]], [])
    const A = DvvSet.update(DvvSet.new('v1'), 'a')
    expect(A).toEqual(clock([['a', 1, ['v1']]], []))
    const Y = DvvSet.update(DvvSet.newList(['v2']), 'b')
    expect(Y).toEqual(clock([['b', 1, ['v2']]], []))
    const A1 = DvvSet.update(DvvSet.newList(DvvSet.join(A), ['v2']), 'a')
    expect(A1).toEqual(clock([['a', 2, ['v2']]], []))
    const A3 = DvvSet.update(DvvSet.newList(DvvSet.join(A1), ['v3']), 'b')
    expect(A3).toEqual(
      clock(
        [
          ['a', 2, []],
          ['b', 1, ['v3']],
        ],
        [],
      ),
    )
    const A4 = DvvSet.update(DvvSet.newList(DvvSet.join(A1), ['v3']), 'c')
    expect(A4).toEqual(
      clock(
        [
          ['a', 2, []],
          ['c', 1, ['v3']],
        ],
        [],
      ),
    )
    const F = (l: string, r: string) => l > r
    const W = clock([['a', 1, []]], [])
    const Z = clock([['a', 2, ['v2', 'v1']]], [])
    expect(DvvSet.sync([W, Z])).toEqual(clock([['a', 2, ['v2']]], []))
    expect(DvvSet.sync([W, Z])).toEqual(DvvSet.sync([Z, W]))
    expect(DvvSet.sync([A, A1])).toEqual(DvvSet.sync([A1, A]))
    expect(DvvSet.sync([A, A1])).toEqual(clock([['a', 2, ['v2']]], []))
    expect(DvvSet.sync([A4, A3])).toEqual(DvvSet.sync([A3, A4]))
    expect(DvvSet.sync([A4, A3])).toEqual(
      clock(
        [
          ['a', 2, []],
          ['b', 1, ['v3']],
          ['c', 1, ['v3']],
        ],
        [],
      ),
    )
    expect(DvvSet.sync([X, A])).toEqual(
      clock(
        [
          ['a', 1, ['v1']],
          ['x', 1, []],
        ],
        [],
      ),
    )
    expect(DvvSet.sync([X, A])).toEqual(DvvSet.sync([A, X]))
    expect(DvvSet.sync([A, Y])).toEqual(
      clock(
        [
          ['a', 1, ['v1']],
          ['b', 1, ['v2']],
        ],
        [],
      ),
    )
    expect(DvvSet.sync([Y, A])).toEqual(DvvSet.sync([A, Y]))
    expect(DvvSet.sync([A, X])).toEqual(DvvSet.sync([X, A]))
    expect(DvvSet.lww(F, A4)).toEqual(
      clock(
        [
          ['a', 2, []],
          ['c', 1, ['v3']],
        ],
        [],
      ),
    )
    expect(DvvSet.lww(F, A4)).toEqual(DvvSet.sync([A4, DvvSet.lww(F, A4)]))
  })

  it('sync_update_test (Mary and Peter)', () => {
    const A0 = DvvSet.update(DvvSet.newList(['v1']), 'a') // Mary writes v1 without a context
    expect(A0).toEqual(clock([['a', 1, ['v1']]], []))
    const VV1 = DvvSet.join(A0) // Peter reads v1
    expect(VV1).toEqual([['a', 1]])
    const A1 = DvvSet.update(DvvSet.newList(['v2']), A0, 'a') // Mary writes v2 without a context
    expect(A1).toEqual(clock([['a', 2, ['v2', 'v1']]], []))
    const A2 = DvvSet.update(DvvSet.newList(VV1, ['v3']), A1, 'a') // Peter writes v3 with v1's context
    expect(A2).toEqual(clock([['a', 3, ['v3', 'v2']]], []))
  })

  it('event_test (event/3 is private: reached through update/2 on the same entries)', () => {
    const { entries: A } = DvvSet.update(DvvSet.new('v1'), 'a')
    expect(DvvSet.update(clock([...A], ['v2']), 'a').entries).toEqual([['a', 2, ['v2', 'v1']]])
    expect(DvvSet.update(clock([...A], ['v2']), 'b').entries).toEqual([
      ['a', 1, ['v1']],
      ['b', 1, ['v2']],
    ])
  })

  it('lww_last_test', () => {
    const F = (a: number, b: number) => a <= b
    const F2 = (a: readonly [number, number], b: readonly [number, number]) => a[1] <= b[1]
    const X = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, []],
        ['c', 1, [3]],
      ],
      [],
    )
    const Y = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, []],
        ['c', 1, [3]],
      ],
      [10, 0],
    )
    const Z = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, [1]],
      ],
      [3],
    )
    const A = clock<readonly [number, number], string>(
      [
        [
          'a',
          4,
          [
            [5, 1002345],
            [7, 1002340],
          ],
        ],
        ['b', 1, [[4, 1001340]]],
      ],
      [[2, 1001140]],
    )
    expect(DvvSet.last(F, X)).toBe(5)
    expect(DvvSet.last(F, Y)).toBe(10)
    expect(DvvSet.lww(F, X)).toEqual(
      clock(
        [
          ['a', 4, [5]],
          ['b', 1, []],
          ['c', 1, []],
        ],
        [],
      ),
    )
    expect(DvvSet.lww(F, Y)).toEqual(
      clock(
        [
          ['a', 4, []],
          ['b', 1, []],
          ['c', 1, []],
        ],
        [10],
      ),
    )
    expect(DvvSet.lww(F, Z)).toEqual(
      clock(
        [
          ['a', 4, [5]],
          ['b', 1, []],
        ],
        [],
      ),
    )
    expect(DvvSet.lww(F2, A)).toEqual(
      clock(
        [
          ['a', 4, [[5, 1002345]]],
          ['b', 1, []],
        ],
        [],
      ),
    )
  })

  it('reconcile_test', () => {
    const F1 = (l: number[]) => l.reduce((s, x) => s + x, 0)
    const F2 = (l: number[]) => l.slice().sort((x, y) => x - y)[0]!
    const X = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, []],
        ['c', 1, [3]],
      ],
      [],
    )
    const Y = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, []],
        ['c', 1, [3]],
      ],
      [10, 0],
    )
    const emptied = [['a', 4, []] as const, ['b', 1, []] as const, ['c', 1, []] as const]
    expect(DvvSet.reconcile(F1, X)).toEqual(clock(emptied, [10]))
    expect(DvvSet.reconcile(F1, Y)).toEqual(clock(emptied, [20]))
    expect(DvvSet.reconcile(F2, X)).toEqual(clock(emptied, [2]))
    expect(DvvSet.reconcile(F2, Y)).toEqual(clock(emptied, [0]))
    // The README's example.
    const R = clock(
      [
        ['a', 4, [5, 2]],
        ['b', 1, []],
      ],
      [10, 1],
    )
    expect(DvvSet.reconcile(F1, R)).toEqual(
      clock(
        [
          ['a', 4, []],
          ['b', 1, []],
        ],
        [18],
      ),
    )
  })

  it('less_test (with the list id [a])', () => {
    const A = DvvSet.update(DvvSet.newList(['v1']), listA)
    expect(A).toEqual(clock([[listA, 1, ['v1']]], []))
    const B = DvvSet.update(DvvSet.newList(DvvSet.join(A), ['v2']), 'a')
    expect(B).toEqual(
      clock(
        [
          ['a', 1, ['v2']],
          [listA, 1, []],
        ],
        [],
      ),
    )
    const B2 = DvvSet.update(DvvSet.newList(DvvSet.join(A), ['v2']), 'b')
    expect(B2).toEqual(
      clock(
        [
          ['b', 1, ['v2']],
          [listA, 1, []],
        ],
        [],
      ),
    )
    const B3 = DvvSet.update(DvvSet.newList(DvvSet.join(A), ['v2']), 'z')
    expect(B3).toEqual(
      clock(
        [
          ['z', 1, ['v2']],
          [listA, 1, []],
        ],
        [],
      ),
    )
    const C = DvvSet.update(DvvSet.newList(DvvSet.join(B), ['v3']), A, 'c')
    expect(C).toEqual(
      clock(
        [
          ['a', 1, []],
          ['c', 1, ['v3']],
          [listA, 1, []],
        ],
        [],
      ),
    )
    const D = DvvSet.update(DvvSet.newList(DvvSet.join(C), ['v4']), B2, 'd')
    expect(D).toEqual(
      clock(
        [
          ['a', 1, []],
          ['b', 1, ['v2']],
          ['c', 1, []],
          ['d', 1, ['v4']],
          [listA, 1, []],
        ],
        [],
      ),
    )
    expect(DvvSet.less(A, B)).toBe(true)
    expect(DvvSet.less(A, C)).toBe(true)
    expect(DvvSet.less(B, C)).toBe(true)
    expect(DvvSet.less(B, D)).toBe(true)
    expect(DvvSet.less(B2, D)).toBe(true)
    expect(DvvSet.less(A, D)).toBe(true)
    expect(DvvSet.less(B2, C)).toBe(false)
    expect(DvvSet.less(B, B2)).toBe(false)
    expect(DvvSet.less(B2, B)).toBe(false)
    expect(DvvSet.less(A, A)).toBe(false)
    expect(DvvSet.less(C, C)).toBe(false)
    expect(DvvSet.less(D, B2)).toBe(false)
    expect(DvvSet.less(B3, D)).toBe(false)
  })

  it('equal_test', () => {
    const A = clock(
      [
        ['a', 4, ['v5', 'v0']],
        ['b', 0, []],
        ['c', 1, ['v3']],
      ],
      ['v0'],
    )
    const B = clock(
      [
        ['a', 4, ['v555', 'v0']],
        ['b', 0, []],
        ['c', 1, ['v3']],
      ],
      [],
    )
    const C = clock(
      [
        ['a', 4, ['v5', 'v0']],
        ['b', 0, []],
      ],
      ['v6', 'v1'],
    )
    expect(DvvSet.equal(A, B)).toBe(true)
    expect(DvvSet.equal(B, A)).toBe(true)
    expect(DvvSet.equal(A, C)).toBe(false)
    expect(DvvSet.equal(B, C)).toBe(false)
  })

  it('size_test', () => {
    expect(DvvSet.size(DvvSet.newList(['v1']))).toBe(1)
    const S = clock(
      [
        ['a', 4, ['v5', 'v0']],
        ['b', 0, []],
        ['c', 1, ['v3']],
      ],
      ['v4', 'v1'],
    )
    expect(DvvSet.size(S)).toBe(5)
  })

  it('ids_values_test', () => {
    const A = clock(
      [
        ['a', 4, ['v0', 'v5']],
        ['b', 0, []],
        ['c', 1, ['v3']],
      ],
      ['v1'],
    )
    const B = clock(
      [
        ['a', 4, ['v0', 'v555']],
        ['b', 0, []],
        ['c', 1, ['v3']],
      ],
      [],
    )
    const C = clock(
      [
        ['a', 4, []],
        ['b', 0, []],
      ],
      ['v1', 'v6'],
    )
    expect(DvvSet.ids(A)).toEqual(['a', 'b', 'c'])
    expect(DvvSet.ids(B)).toEqual(['a', 'b', 'c'])
    expect(DvvSet.ids(C)).toEqual(['a', 'b'])
    expect(DvvSet.values(A).sort()).toEqual(['v0', 'v1', 'v3', 'v5'])
    expect(DvvSet.values(B).sort()).toEqual(['v0', 'v3', 'v555'])
    expect(DvvSet.values(C).sort()).toEqual(['v1', 'v6'])
  })

  it('map_test', () => {
    const F = (x: number) => x * 2
    const A = clock(
      [
        ['a', 4, []],
        ['b', 0, []],
        ['c', 1, []],
      ],
      [10],
    )
    const B = clock(
      [
        ['a', 4, [5, 0]],
        ['b', 0, []],
        ['c', 1, [2]],
      ],
      [20, 10],
    )
    expect(DvvSet.map(F, A)).toEqual(
      clock(
        [
          ['a', 4, []],
          ['b', 0, []],
          ['c', 1, []],
        ],
        [20],
      ),
    )
    expect(DvvSet.map(F, B)).toEqual(
      clock(
        [
          ['a', 4, [10, 0]],
          ['b', 0, []],
          ['c', 1, [4]],
        ],
        [40, 20],
      ),
    )
  })

  it('extra reference values: anonymous lists on concurrent and dominated sets', () => {
    expect(DvvSet.sync([clock([['a', 1, []]], ['x']), clock([['b', 1, []]], ['y'])])).toEqual(
      clock(
        [
          ['a', 1, []],
          ['b', 1, []],
        ],
        ['x', 'y'],
      ),
    )
    expect(DvvSet.sync([clock([['a', 1, []]], ['x']), clock([['a', 2, []]], ['y'])])).toEqual(
      clock([['a', 2, []]], ['y']),
    )
  })
})

describe('DvvSet: behaviour beyond the vectors', () => {
  it('orders actors as numbers first (ascending), then strings', () => {
    const sorted: DvvActor[] = [0, 2, 10, 'a', 'b', 'z', listA]
    expect([...sorted].reverse().sort(compareDvvActors)).toEqual(sorted)
    const s = DvvSet.update(
      DvvSet.new(DvvSet.join(clock<string, DvvActor>([['a', 1, []]], [])), 'v'),
      10,
    )
    expect(DvvSet.ids(DvvSet.update(DvvSet.new(DvvSet.join(s), 'w'), 2))).toEqual([2, 10, 'a'])
  })

  it('re-sorts a context given out of order, as the reference does', () => {
    expect(
      DvvSet.new(
        [
          [2, 5],
          [0, 1],
        ],
        'v',
      ),
    ).toEqual(
      clock(
        [
          [0, 1, []],
          [2, 5, []],
        ],
        ['v'],
      ),
    )
  })

  it('update needs exactly one anonymous value', () => {
    const a = DvvSet.update(DvvSet.new('v1'), 0)
    expect(() => DvvSet.update(a, 0)).toThrow(CausewayError)
    expect(() => DvvSet.update(DvvSet.newList(['x', 'y']), a, 0)).toThrow(
      /exactly one anonymous value/,
    )
  })

  it('lww and last reject a set with no values; on a tie the later candidate wins', () => {
    expect(() => DvvSet.lww((a: string, b: string) => a <= b, clock([['a', 1, []]], []))).toThrow(
      CausewayError,
    )
    expect(() =>
      DvvSet.last((a: string, b: string) => a <= b, DvvSet.sync<string, string>([])),
    ).toThrow(CausewayError)
    const always = () => true
    const tied = clock(
      [
        ['a', 1, ['x']],
        ['b', 1, ['y']],
      ],
      [],
    )
    expect(DvvSet.last(always, tied)).toBe('y')
    expect(DvvSet.last(always, clock(tied.entries, ['z']))).toBe('z')
  })

  it('syncing nothing gives the empty set, which is what syncing it with s leaves alone', () => {
    const empty = DvvSet.sync<string, number>([])
    expect(empty).toEqual(clock([], []))
    const s = DvvSet.update(DvvSet.new('v'), 1)
    expect(DvvSet.sync([empty, s])).toEqual(s)
    expect(DvvSet.sync([s, empty])).toEqual(s)
  })

  it('clocks stay at one entry per region however many clients write', () => {
    // 100 clients over 3 regions, each writing 10 times with the context of its last read.
    const regions = 3
    let replicas = Array.from({ length: regions }, () => DvvSet.sync<string, number>([]))
    const contexts = Array.from({ length: 100 }, () => DvvSet.join(replicas[0]!))
    for (let round = 0; round < 10; round++) {
      for (let client = 0; client < 100; client++) {
        const region = (client + round) % regions
        const local = replicas[region]!
        const written = DvvSet.update(
          DvvSet.new(contexts[client]!, `c${client}r${round}`),
          local,
          region,
        )
        replicas = replicas.map((r, d) => (d === region ? written : r))
        contexts[client] = DvvSet.join(written)
        if (client % 7 === 0) replicas = replicas.map((r) => DvvSet.sync([r, written]))
      }
    }
    const merged = DvvSet.sync(replicas)
    expect(DvvSet.ids(merged)).toEqual([0, 1, 2])
    // Each client superseded what it had read, so at most one live value per concurrent writer.
    expect(DvvSet.size(merged)).toBeLessThanOrEqual(100)
  })
})

// ---- property tests against a model of the causal history ----
//
// Regions 0..D-1 each have a coordinator replica that writes with its own region as the actor
// (the leader applies `update`); one more replica only ever syncs (a follower or a remote copy).
// Every write gets a unique value and the model records what it has seen: a write with a context
// has seen everything the replica it was read from knew when it was read; a blind write has seen
// nothing. A replica's live values must then be exactly the writes it knows of that no other write
// it knows of has seen: the concurrent values, no more, no fewer.

type Op =
  | { kind: 'blind'; region: number }
  | { kind: 'write'; region: number; read: number }
  | { kind: 'read'; from: number[] }
  | { kind: 'sync'; from: number; to: number }

interface Scenario {
  regions: number
  ops: Op[]
}

interface Replica {
  set: DvvSet<string>
  known: ReadonlySet<string>
}

interface Observation {
  context: CausalContext
  seen: ReadonlySet<string>
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}

class Model {
  readonly replicas: Replica[]
  readonly observations: Observation[] = []
  /** Every state a replica went through, for the algebraic laws. */
  readonly states: DvvSet<string>[] = []
  /** What each write had seen when it was made. */
  readonly #seenBy = new Map<string, ReadonlySet<string>>()
  #next = 0

  constructor(readonly regions: number) {
    this.replicas = Array.from({ length: regions + 1 }, () => ({
      set: DvvSet.sync<string, number>([]),
      known: new Set(),
    }))
  }

  /** The writes in `known` that no other write in `known` has seen. */
  concurrent(known: ReadonlySet<string>): string[] {
    const superseded = new Set<string>()
    for (const w of known) for (const seen of this.#seenBy.get(w)!) superseded.add(seen)
    return [...known].filter((w) => !superseded.has(w)).sort()
  }

  #write(
    region: number,
    observation: Observation | undefined,
    check: (local: DvvSet<string>, ctx: CausalContext, result: DvvSet<string>) => void,
  ): void {
    const id = `w${this.#next++}`
    const replica = this.replicas[region]!
    const seen = observation?.seen ?? new Set<string>()
    this.#seenBy.set(id, seen)
    const client = observation ? DvvSet.new(observation.context, id) : DvvSet.new(id)
    const set = deepFreeze(DvvSet.update(client, replica.set, region))
    check(replica.set, observation?.context ?? [], set)
    this.#store(region, { set, known: new Set([...replica.known, ...seen, id]) })
  }

  #store(index: number, replica: Replica): void {
    this.replicas[index] = replica
    this.states.push(replica.set)
  }

  apply(
    op: Op,
    check: (local: DvvSet<string>, ctx: CausalContext, result: DvvSet<string>) => void = () => {},
  ): void {
    switch (op.kind) {
      case 'blind':
        return this.#write(op.region, undefined, check)
      case 'write':
        return this.#write(
          op.region,
          this.observations[op.read % Math.max(1, this.observations.length)],
          check,
        )
      case 'read': {
        const read = op.from.map((r) => this.replicas[r]!)
        const set = DvvSet.sync(read.map((r) => r.set))
        const known = new Set(read.flatMap((r) => [...r.known]))
        expect([...DvvSet.values(set)].sort()).toEqual(this.concurrent(known))
        this.observations.push({ context: DvvSet.join(set), seen: known })
        return
      }
      case 'sync': {
        const from = this.replicas[op.from]!
        const to = this.replicas[op.to]!
        this.#store(op.to, {
          set: deepFreeze(DvvSet.sync([from.set, to.set])),
          known: new Set([...from.known, ...to.known]),
        })
        return
      }
    }
  }
}

function opArb(regions: number): fc.Arbitrary<Op> {
  const region = fc.nat(regions - 1)
  const replica = fc.nat(regions)
  return fc.oneof(
    fc.record({ kind: fc.constant('blind' as const), region }),
    fc.record({ kind: fc.constant('write' as const), region, read: fc.nat() }),
    fc.record({ kind: fc.constant('write' as const), region, read: fc.nat() }),
    fc.record({
      kind: fc.constant('read' as const),
      from: fc.uniqueArray(replica, { minLength: 1, maxLength: regions + 1 }),
    }),
    fc.record({ kind: fc.constant('sync' as const), from: replica, to: replica }),
  )
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .integer({ min: 1, max: 4 })
  .chain((regions) =>
    fc.record({ regions: fc.constant(regions), ops: fc.array(opArb(regions), { maxLength: 50 }) }),
  )

function run(scenario: Scenario): Model {
  const model = new Model(scenario.regions)
  for (const op of scenario.ops) model.apply(op)
  return model
}

/** Scenario states plus three picks among them. */
const statesArb = fc.tuple(scenarioArb, fc.nat(), fc.nat(), fc.nat()).map(([scenario, i, j, k]) => {
  const { states } = run(scenario)
  const pick = (n: number) => states[n % states.length] ?? DvvSet.sync<string, number>([])
  return [pick(i), pick(j), pick(k)] as const
})

const RUNS = { numRuns: 150 }

function wellFormed(set: DvvSet<string>, regions: number): void {
  expect(set.entries.length).toBeLessThanOrEqual(regions)
  for (let i = 1; i < set.entries.length; i++) {
    expect(compareDvvActors(set.entries[i - 1]![0], set.entries[i]![0])).toBeLessThan(0)
  }
  for (const [, counter, vs] of set.entries) expect(vs.length).toBeLessThanOrEqual(counter)
}

describe('DvvSet: properties', () => {
  it('holds exactly the concurrent values after any writes, reads and syncs; one entry per region at most', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        const model = new Model(scenario.regions)
        for (const op of scenario.ops) {
          model.apply(op)
          for (const { set, known } of model.replicas) {
            const vs = DvvSet.values(set)
            expect(new Set(vs).size).toBe(vs.length)
            expect([...vs].sort()).toEqual(model.concurrent(known))
            expect(set.anonymous).toEqual([])
            wellFormed(set, scenario.regions)
          }
        }
      }),
      RUNS,
    )
  })

  it('update(new(context, v), local, actor) strictly dominates the context and is newer than local', () => {
    fc.assert(
      fc.property(scenarioArb, (scenario) => {
        const model = new Model(scenario.regions)
        for (const op of scenario.ops) {
          model.apply(op, (local, context, result) => {
            expect(DvvSet.less(DvvSet.new(context, 'x'), result)).toBe(true)
            expect(DvvSet.less(local, result)).toBe(true)
            expect(DvvSet.less(result, local)).toBe(false)
            const counters = new Map(DvvSet.join(result))
            for (const [actor, n] of [...context, ...DvvSet.join(local)]) {
              expect(counters.get(actor)).toBeGreaterThanOrEqual(n)
            }
            const written = DvvSet.values(result).filter((v) => !DvvSet.values(local).includes(v))
            expect(written).toHaveLength(1)
          })
        }
      }),
      RUNS,
    )
  })

  it('sync is commutative, associative and idempotent', () => {
    fc.assert(
      fc.property(statesArb, ([a, b, c]) => {
        expect(DvvSet.sync([a, b])).toEqual(DvvSet.sync([b, a]))
        expect(DvvSet.sync([DvvSet.sync([a, b]), c])).toEqual(DvvSet.sync([a, DvvSet.sync([b, c])]))
        expect(DvvSet.sync([a, b, c])).toEqual(DvvSet.sync([c, b, a]))
        expect(DvvSet.sync([a, a])).toEqual(a)
        expect(DvvSet.sync([a, DvvSet.sync([a, b])])).toEqual(DvvSet.sync([a, b]))
      }),
      RUNS,
    )
  })

  it('less is a strict order consistent with sync', () => {
    fc.assert(
      fc.property(statesArb, ([a, b, c]) => {
        expect(DvvSet.less(a, a)).toBe(false)
        if (DvvSet.less(a, b)) {
          expect(DvvSet.less(b, a)).toBe(false)
          expect(DvvSet.sync([a, b])).toEqual(b)
          if (DvvSet.less(b, c)) expect(DvvSet.less(a, c)).toBe(true)
        }
        const merged = DvvSet.sync([a, b])
        expect(
          DvvSet.less(a, merged) ||
            DvvSet.equal(DvvSet.new(DvvSet.join(a), 'x'), DvvSet.new(DvvSet.join(merged), 'x')),
        ).toBe(true)
      }),
      RUNS,
    )
  })

  it('reconcile and lww keep the history, leave one value and absorb the set they came from', () => {
    const lessOrEqual = (x: string, y: string) => x <= y
    fc.assert(
      fc.property(statesArb, ([a]) => {
        fc.pre(DvvSet.size(a) > 0)
        const merged = DvvSet.reconcile((vs) => vs.slice().sort().join('+'), a)
        expect(DvvSet.join(merged)).toEqual(DvvSet.join(a))
        expect(DvvSet.values(merged)).toEqual([DvvSet.values(a).slice().sort().join('+')])
        expect(DvvSet.sync([a, merged])).toEqual(merged)
        const winner = DvvSet.lww(lessOrEqual, a)
        expect(DvvSet.join(winner)).toEqual(DvvSet.join(a))
        expect(DvvSet.values(winner)).toEqual([DvvSet.last(lessOrEqual, a)])
        expect(DvvSet.sync([a, winner])).toEqual(winner)
      }),
      RUNS,
    )
  })

  it('with anonymous values, sync is still commutative (as a set of values) and idempotent', () => {
    const sorted = (s: DvvSet<string>) => ({
      entries: s.entries,
      anonymous: [...s.anonymous].sort(),
    })
    const reconciled = (s: DvvSet<string>) =>
      DvvSet.size(s) > 0 ? DvvSet.reconcile((vs) => vs.join('+'), s) : s
    fc.assert(
      fc.property(statesArb, fc.boolean(), ([a, b], both) => {
        const x = reconciled(a)
        const y = both ? reconciled(b) : b
        expect(sorted(DvvSet.sync([x, y]))).toEqual(sorted(DvvSet.sync([y, x])))
        expect(DvvSet.sync([x, x])).toEqual(x)
      }),
      RUNS,
    )
  })

  it('a write with the context of a reconciled set keeps its anonymous value, as in the reference', () => {
    // update/3 syncs the client's history (equal to the local one here, not newer) with the local
    // set, and anonymous values survive a sync between equal histories. So a value stored by
    // reconcile (or an anonymous lww winner) outlives writes that had seen it: the gateway must
    // resolve siblings with update and a context, never by storing reconcile's result.
    const A = DvvSet.reconcile(() => 'm', DvvSet.update(DvvSet.new('a1'), 0))
    expect(A).toEqual(clock([[0, 1, []]], ['m']))
    const C = DvvSet.update(DvvSet.new(DvvSet.join(A), 'c1'), A, 0)
    expect(C).toEqual(clock([[0, 2, ['c1']]], ['m']))
  })

  it('with anonymous values on concurrent sets, sync depends on grouping, as in the reference', () => {
    // A is a reconciled A0 (anonymous 'm'); C was written over A0 with A0's context, so A < C and
    // C has no anonymous value; B is concurrent with both. (A·B)·C keeps 'm', because A·B is
    // concurrent with C; A·(B·C) drops it, because A < B·C. Sets made only by update and sync
    // (all the gateway stores) have no anonymous values, so there sync is associative (above).
    const A0 = DvvSet.update(DvvSet.new('a1'), 0)
    const A = DvvSet.reconcile(() => 'm', A0)
    const C = DvvSet.update(DvvSet.new(DvvSet.join(A0), 'c1'), A0, 0)
    const B = DvvSet.update(DvvSet.new('b1'), 1)
    expect(DvvSet.less(A, C)).toBe(true)
    expect(DvvSet.values(DvvSet.sync([DvvSet.sync([A, B]), C])).sort()).toEqual(['b1', 'c1', 'm'])
    expect(DvvSet.values(DvvSet.sync([A, DvvSet.sync([B, C])])).sort()).toEqual(['b1', 'c1'])
  })
})
