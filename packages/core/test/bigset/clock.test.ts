import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  addDot,
  addDots,
  clockFromJSON,
  clockOf,
  clocksEqual,
  clockToJSON,
  clockDescends,
  freshClock,
  incrementClock,
  mergeClocks,
  removeDots,
  hasSeen,
  subtractClock,
  unseenDots,
  type DotClock,
} from '../../src/bigset/clock.js'
import { decodeClock, encodeClock } from '../../src/bigset/clock-codec.js'
import type { Dot } from '../../src/bigset/dot.js'
import { CausewayError } from '../../src/errors.js'

// The reference's vectors name actors by letters; ours are integers, so a = 0 ... z = 25.
const A = (letter: string) => letter.charCodeAt(0) - 97
const d = (letter: string, counter: number): Dot => ({ actor: A(letter), counter })
/** `{VV, [{Actor,[Cnt]}]}` of the reference, as our (sorted, wire) JSON. */
function ref(vv: [string, number][], cloud: [string, number[]][] = []) {
  return {
    vv: vv.map(([a, n]) => [A(a), n]).sort((x, y) => x[0]! - y[0]!),
    cloud: cloud.map(([a, c]) => [A(a), c]).sort((x, y) => (x[0] as number) - (y[0] as number)),
  }
}
const clk = (vv: [string, number][], cloud: [string, number[]][] = []) =>
  clockOf(
    vv.map(([a, n]) => [A(a), n] as const),
    cloud.map(([a, c]) => [A(a), c] as const),
  )

describe('bigset clock: reference vectors (bigset_clock_naive.erl)', () => {
  it('add_dot to a fresh clock: contiguous goes to the base, the rest to the cloud', () => {
    expect(clockToJSON(addDot(freshClock(), d('a', 1)))).toEqual(ref([['a', 1]]))
    expect(clockToJSON(addDot(freshClock(), d('a', 34)))).toEqual(ref([], [['a', [34]]]))
  })

  it('add_dot sequence compacts the cloud into the base when contiguous', () => {
    let c = addDot(
      clk([
        ['a', 3],
        ['b', 1],
      ]),
      d('c', 2),
    )
    expect(clockToJSON(c)).toEqual(
      ref(
        [
          ['a', 3],
          ['b', 1],
        ],
        [['c', [2]]],
      ),
    )
    c = addDot(c, d('a', 5))
    expect(clockToJSON(c)).toEqual(
      ref(
        [
          ['a', 3],
          ['b', 1],
        ],
        [
          ['a', [5]],
          ['c', [2]],
        ],
      ),
    )
    c = addDot(c, d('a', 4))
    expect(clockToJSON(c)).toEqual(
      ref(
        [
          ['a', 5],
          ['b', 1],
        ],
        [['c', [2]]],
      ),
    )
    c = addDot(c, d('c', 1))
    expect(clockToJSON(c)).toEqual(
      ref([
        ['a', 5],
        ['b', 1],
        ['c', 2],
      ]),
    )
  })

  it('add_dot folds a run of the cloud and keeps the gap after it', () => {
    const c = addDot(clk([['a', 1]], [['a', [3, 4, 9]]]), d('a', 2))
    expect(clockToJSON(c)).toEqual(ref([['a', 4]], [['a', [9]]]))
  })

  it('add_dot of a seen dot drops cloud entries the base covers (our clocks normalise on construction)', () => {
    const c = addDot(
      clk(
        [
          ['a', 4],
          ['b', 9],
        ],
        [
          ['a', [1]],
          ['b', [7]],
        ],
      ),
      d('a', 3),
    )
    expect(clockToJSON(c)).toEqual(
      ref([
        ['a', 4],
        ['b', 9],
      ]),
    )
  })

  const seenClock = clk(
    [
      ['a', 2],
      ['b', 9],
      ['z', 4],
    ],
    [
      ['a', [7]],
      ['c', [99]],
    ],
  )

  it('seen', () => {
    for (const x of [d('a', 1), d('z', 4), d('c', 99)]) expect(hasSeen(seenClock, x)).toBe(true)
    for (const x of [d('a', 5), d('x', 1), d('c', 1)]) expect(hasSeen(seenClock, x)).toBe(false)
  })

  const merged = mergeClocks(
    clk(
      [],
      [
        ['a', [3, 4, 5, 6]],
        ['d', [2]],
        ['z', [6]],
      ],
    ),
    seenClock,
  )

  it('merge', () => {
    expect(clockToJSON(merged)).toEqual(
      ref(
        [
          ['a', 7],
          ['b', 9],
          ['z', 4],
        ],
        [
          ['c', [99]],
          ['d', [2]],
          ['z', [6]],
        ],
      ),
    )
    const again = mergeClocks(
      merged,
      clk(
        [
          ['a', 5],
          ['c', 100],
          ['d', 1],
        ],
        [
          ['d', [3]],
          ['z', [5]],
        ],
      ),
    )
    expect(clockToJSON(again)).toEqual(
      ref([
        ['a', 7],
        ['b', 9],
        ['c', 100],
        ['d', 3],
        ['z', 6],
      ]),
    )
  })

  it('increment a, b, a from fresh', () => {
    let c = freshClock()
    const dots: Dot[] = []
    for (const actor of ['a', 'b', 'a']) {
      const next = incrementClock(c, A(actor))
      dots.push(next.dot)
      c = next.clock
    }
    expect(dots).toEqual([d('a', 1), d('b', 1), d('a', 2)])
    expect(clockToJSON(c)).toEqual(
      ref([
        ['a', 2],
        ['b', 1],
      ]),
    )
  })

  it('subtract_seen', () => {
    expect(unseenDots(merged, [d('a', 2), d('b', 7), d('z', 5)])).toEqual([d('z', 5)])
    expect(unseenDots(merged, [d('c', 99), d('q', 1)])).toEqual([d('q', 1)])
  })

  it('increment never reuses a dot of its own actor that came back out of order', () => {
    const c = clk([['a', 2]], [['a', [5]]])
    expect(incrementClock(c, A('a')).dot).toEqual(d('a', 6))
  })

  it('addDot returns the same clock when nothing changes (so writes can be skipped)', () => {
    const c = clk([['a', 3]], [['b', [4]]])
    expect(addDot(c, d('a', 2))).toBe(c)
    expect(addDot(c, d('b', 4))).toBe(c)
  })
})

// ---- properties against a plain set of dots -------------------------------------------------

const arbDot = fc.record({
  actor: fc.integer({ min: 0, max: 3 }),
  counter: fc.integer({ min: 1, max: 24 }),
})
const arbDots = fc.array(arbDot, { maxLength: 40 })
const name = (x: Dot) => `${x.actor}.${x.counter}`

function dotsOf(c: DotClock): Set<string> {
  const out = new Set<string>()
  for (const [actor, n] of c.vv) for (let i = 1; i <= n; i++) out.add(`${actor}.${i}`)
  for (const [actor, counters] of c.cloud) for (const i of counters) out.add(`${actor}.${i}`)
  return out
}

function expectNormalised(c: DotClock): void {
  for (const [actor, counters] of c.cloud) {
    const base = c.vv.get(actor) ?? 0
    expect(counters.length).toBeGreaterThan(0)
    expect(counters[0]!).toBeGreaterThan(base + 1)
    for (let i = 1; i < counters.length; i++) expect(counters[i]!).toBeGreaterThan(counters[i - 1]!)
  }
  for (const n of c.vv.values()) expect(n).toBeGreaterThan(0)
}

describe('bigset clock: properties', () => {
  it('a clock built from dots in any order holds exactly those dots, normalised', () => {
    fc.assert(
      fc.property(
        arbDots.chain((ds) =>
          fc.tuple(fc.constant(ds), fc.shuffledSubarray(ds, { minLength: ds.length })),
        ),
        ([dots, permuted]) => {
          const c = addDots(freshClock(), dots)
          const shuffled = addDots(freshClock(), permuted)
          expectNormalised(c)
          expect(clocksEqual(c, shuffled)).toBe(true)
          expect(dotsOf(c)).toEqual(new Set(dots.map(name)))
          for (let actor = 0; actor <= 3; actor++) {
            for (let counter = 1; counter <= 25; counter++) {
              expect(hasSeen(c, { actor, counter })).toBe(
                dots.some((x) => x.actor === actor && x.counter === counter),
              )
            }
          }
        },
      ),
    )
  })

  it('merge is the union: commutative, associative, idempotent', () => {
    fc.assert(
      fc.property(arbDots, arbDots, arbDots, (x, y, z) => {
        const [a, b, c] = [x, y, z].map((ds) => addDots(freshClock(), ds)) as [
          DotClock,
          DotClock,
          DotClock,
        ]
        const ab = mergeClocks(a, b)
        expectNormalised(ab)
        expect(dotsOf(ab)).toEqual(new Set([...x, ...y].map(name)))
        expect(clocksEqual(ab, mergeClocks(b, a))).toBe(true)
        expect(clocksEqual(mergeClocks(ab, c), mergeClocks(a, mergeClocks(b, c)))).toBe(true)
        expect(clocksEqual(mergeClocks(ab, ab), ab)).toBe(true)
      }),
    )
  })

  it('subtractClock and removeDots are set difference; clockDescends is inclusion', () => {
    fc.assert(
      fc.property(arbDots, arbDots, (x, y) => {
        const a = addDots(freshClock(), x)
        const b = addDots(freshClock(), y)
        const bNames = new Set(y.map(name))
        const difference = new Set(x.map(name).filter((n) => !bNames.has(n)))
        const sub = subtractClock(a, b)
        expectNormalised(sub)
        expect(dotsOf(sub)).toEqual(difference)
        const removed = removeDots(a, y)
        expectNormalised(removed)
        expect(dotsOf(removed)).toEqual(difference)
        expect(clockDescends(a, b)).toBe(y.every((dd) => dotsOf(a).has(name(dd))))
        expect(clockDescends(mergeClocks(a, b), b)).toBe(true)
      }),
    )
  })

  it('stored and wire encodings round-trip', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            actor: fc.integer({ min: 0, max: 0xffff_ffff }),
            counter: fc.oneof(
              fc.integer({ min: 1, max: 50 }),
              fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
            ),
          }),
          { maxLength: 30 },
        ),
        (dots) => {
          const c = addDots(freshClock(), dots)
          expect(clocksEqual(decodeClock(encodeClock(c)), c)).toBe(true)
          expect(clocksEqual(clockFromJSON(JSON.parse(JSON.stringify(clockToJSON(c)))), c)).toBe(
            true,
          )
        },
      ),
    )
  })

  it('decodes a missing key as the fresh clock and refuses corrupt values', () => {
    expect(clocksEqual(decodeClock(undefined), freshClock())).toBe(true)
    const good = encodeClock(clk([['a', 3]], [['a', [7, 9]]]))
    expect(() => decodeClock(Uint8Array.of(0x00, 1, 0))).toThrow(CausewayError)
    expect(() => decodeClock(Uint8Array.of(good[0]!, 99, 0))).toThrow(/version/)
    expect(() => decodeClock(good.subarray(0, good.length - 1))).toThrow(/truncated/)
    expect(() => decodeClock(Uint8Array.from([...good, 0]))).toThrow(/trailing/)
  })

  it('refuses malformed wire clocks with INVALID_REQUEST', () => {
    for (const bad of [
      null,
      {},
      { vv: [[0, 0]], cloud: [] },
      { vv: [[-1, 1]], cloud: [] },
      { vv: [], cloud: [[0, [1.5]]] },
    ]) {
      expect(() => clockFromJSON(bad)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }))
    }
  })
})
