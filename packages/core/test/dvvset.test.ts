import { describe, expect, it } from 'vitest'
import { type Actor, type DvvEntry, DvvSet, compareActors } from '../src/dvvset.js'
import { CausewayError } from '../src/errors.js'

// `{Entries, Anonymous}` of the reference, written as close to the Erlang as TypeScript allows:
// atoms a, b, c are string actors and v1, v2 string values.
function clock<V, A extends Actor>(
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
    const sorted: Actor[] = [0, 2, 10, 'a', 'b', 'z', listA]
    expect([...sorted].reverse().sort(compareActors)).toEqual(sorted)
    const s = DvvSet.update(
      DvvSet.new(DvvSet.join(clock<string, Actor>([['a', 1, []]], [])), 'v'),
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
