import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  HLC_MAX_COUNTER,
  HLC_ZERO,
  HybridClock,
  hlcCompare,
  hlcFrom,
  hlcMax,
  hlcParts,
  isHlc,
} from '../src/hlc.js'

function manualClock(start: number) {
  let t = start
  return { now: () => t, set: (v: number) => (t = v) }
}

describe('HLC wire form', () => {
  it('is 16 lowercase hex digits that sort as time', () => {
    const a = hlcFrom(1_700_000_000_000, 0)
    const b = hlcFrom(1_700_000_000_000, 1)
    const c = hlcFrom(1_700_000_000_001, 0)
    for (const t of [a, b, c]) expect(isHlc(t)).toBe(true)
    expect([c, a, b].sort()).toEqual([a, b, c])
    expect(hlcParts(b)).toEqual({ l: 1_700_000_000_000, c: 1 })
    expect(hlcFrom(0, 0)).toBe(HLC_ZERO)
  })

  it('rejects malformed forms', () => {
    for (const bad of [
      '',
      'ABCDEF0123456789',
      '0'.repeat(15),
      '0'.repeat(17),
      'g'.repeat(16),
      12,
      null,
    ]) {
      expect(isHlc(bad)).toBe(false)
    }
    expect(() => hlcFrom(-1, 0)).toThrow(RangeError)
    expect(() => hlcFrom(0, HLC_MAX_COUNTER + 1)).toThrow(RangeError)
    expect(() => hlcFrom(2 ** 48, 0)).toThrow(RangeError)
  })

  it('orders string comparison exactly like (l, c) comparison', () => {
    const part = fc.tuple(
      fc.integer({ min: 0, max: 2 ** 48 - 1 }),
      fc.integer({ min: 0, max: HLC_MAX_COUNTER }),
    )
    fc.assert(
      fc.property(part, part, ([l1, c1], [l2, c2]) => {
        const expected = Math.sign(l1 - l2 || c1 - c2)
        expect(Math.sign(hlcCompare(hlcFrom(l1, c1), hlcFrom(l2, c2)))).toBe(expected)
        expect(hlcMax(hlcFrom(l1, c1), hlcFrom(l2, c2))).toBe(
          expected >= 0 ? hlcFrom(l1, c1) : hlcFrom(l2, c2),
        )
      }),
    )
  })
})

describe('HybridClock', () => {
  it('follows the physical clock when it moves forward', () => {
    const pc = manualClock(1000)
    const clock = new HybridClock({ now: pc.now })
    expect(clock.tick()).toBe(hlcFrom(1000, 0))
    expect(clock.tick()).toBe(hlcFrom(1000, 1))
    pc.set(1005)
    expect(clock.tick()).toBe(hlcFrom(1005, 0))
  })

  it('stays monotonic when the wall clock goes backwards', () => {
    const pc = manualClock(5000)
    const clock = new HybridClock({ now: pc.now })
    const before = clock.tick()
    pc.set(1000) // NTP step back
    const after = clock.tick()
    expect(after > before).toBe(true)
    expect(hlcParts(after)).toEqual({ l: 5000, c: 1 })
  })

  it('update(dt) returns a timestamp above dt even when dt is ahead of the wall clock (Alg. 2 lines 14-21)', () => {
    const pc = manualClock(1000)
    const clock = new HybridClock({ now: pc.now })
    const dt = hlcFrom(1200, 7)
    expect(clock.update(dt)).toBe(hlcFrom(1200, 8)) // l = t.l: c = t.c + 1
    expect(clock.update(hlcFrom(1200, 3))).toBe(hlcFrom(1200, 9)) // l = l' = t.l: max(c, t.c) + 1
    expect(clock.update(hlcFrom(900, 50))).toBe(hlcFrom(1200, 10)) // l = l': c + 1
    pc.set(1300)
    expect(clock.update(hlcFrom(900, 50))).toBe(hlcFrom(1300, 0)) // physical wins: c = 0
  })

  it('carries a full counter into the millisecond field instead of wrapping', () => {
    const pc = manualClock(1000)
    const clock = new HybridClock({ now: pc.now })
    const t = clock.update(hlcFrom(1000, HLC_MAX_COUNTER))
    expect(hlcParts(t)).toEqual({ l: 1001, c: 0 })
    expect(clock.tick() > t).toBe(true)
  })

  it('resumes above the last timestamp it issued before a restart', () => {
    const last = hlcFrom(9000, 4)
    const clock = new HybridClock({ now: () => 100, last })
    expect(clock.peek()).toBe(last)
    expect(clock.tick()).toBe(hlcFrom(9000, 5))
  })

  it('observe() never moves the clock backwards', () => {
    const clock = new HybridClock({ now: () => 0, last: hlcFrom(50, 0) })
    clock.observe(hlcFrom(10, 0))
    expect(clock.peek()).toBe(hlcFrom(50, 0))
    clock.observe(hlcFrom(60, 2))
    expect(clock.peek()).toBe(hlcFrom(60, 2))
  })

  it('every timestamp exceeds every earlier one and every observed dependency (property)', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('tick' as const), wall: fc.integer({ min: 0, max: 10_000 }) }),
      fc.record({
        kind: fc.constant('update' as const),
        wall: fc.integer({ min: 0, max: 10_000 }),
        l: fc.integer({ min: 0, max: 10_000 }),
        c: fc.integer({ min: 0, max: HLC_MAX_COUNTER }),
      }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        let wall = 0
        const clock = new HybridClock({ now: () => wall })
        let prev = HLC_ZERO
        for (const s of steps) {
          wall = s.wall
          const dt = s.kind === 'update' ? hlcFrom(s.l, s.c) : HLC_ZERO
          const t = s.kind === 'update' ? clock.update(dt) : clock.tick()
          expect(t > prev).toBe(true)
          expect(t > dt).toBe(true)
          expect(hlcParts(t).l).toBeGreaterThanOrEqual(wall) // never behind the physical clock
          prev = t
        }
      }),
    )
  })
})
