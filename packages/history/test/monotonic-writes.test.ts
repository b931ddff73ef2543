import { describe, expect, it } from 'vitest'
import { checkMonotonicWrites } from '../src/index.js'
import { script, v } from './script.js'

describe('checkMonotonicWrites', () => {
  it('passes a session whose writes get ever newer versions, in any region', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    s.put('c1', 'k', v(11, 1))
    s.del('c1', 'k', v(12, 0))
    s.put('c1', 'k', v(12, 1))
    const r = checkMonotonicWrites(s.history({ k: [v(12, 1), v(12, 1)] }))
    expect(r.violations).toEqual([])
    expect(r).toMatchObject({ checked: 3, crossRegion: 3 })
  })

  it('reports a write that got an older version than an earlier write of the session', () => {
    const s = script()
    const first = s.put('c1', 'k', v(300, 0))
    const second = s.put('c1', 'k', v(100, 1)) // region 1's clock is behind
    const [x, ...rest] = checkMonotonicWrites(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({
      check: 'monotonic-writes',
      kind: 'unordered-write',
      client: 'c1',
      earlier: { index: first },
      later: { index: second },
      required: v(300, 0),
      observed: v(100, 1),
    })
    expect(x!.message).toMatch(/put#1 .* got .*@1, not newer than .*@0 written by put#0/)
  })

  it('reports a write that got the very same version', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.del('c1', 'k', v(10))
    expect(checkMonotonicWrites(s.history()).violations).toHaveLength(1)
  })

  it('does not order writes whose intervals overlap, nor writes of other clients or keys', () => {
    const s = script()
    s.put('c1', 'k', v(20), { at: [0, 30] })
    s.put('c1', 'k', v(10), { at: [10, 40] })
    s.put('c2', 'k', v(5), { at: [50, 60] })
    s.put('c1', 'other', v(5), { at: [50, 60] })
    s.put('c1', 'k', v(30), { at: [25, 35], error: 'TIMEOUT' })
    s.put('c1', 'k', v(25), { at: [70, 80] })
    expect(checkMonotonicWrites(s.history()).violations).toEqual([])
  })

  it('holds only writes whose level promises it, unless checking as if session', () => {
    const s = script()
    s.put('c1', 'k', v(30), { level: 'eventual' })
    s.put('c1', 'k', v(20), { level: 'eventual' })
    s.put('c1', 'k', v(20, 1), { level: 'writes-follow-reads' })
    s.put('c1', 'k', v(25), { level: 'monotonic-writes' })
    expect(checkMonotonicWrites(s.history()).violations.map((x) => x.later?.index)).toEqual([3])
    expect(checkMonotonicWrites(s.history(), { asIfSession: true }).violations).toHaveLength(3)
  })

  it('reports a region that ended on a write its session superseded', () => {
    const s = script()
    const w1 = s.put('c1', 'k', v(10, 0))
    const w2 = s.put('c1', 'k', v(20, 1))
    const r = checkMonotonicWrites(s.history({ k: [v(20, 1), v(10, 0)] }))
    expect(r.violations).toHaveLength(1)
    expect(r.violations[0]).toMatchObject({
      kind: 'final-state',
      region: 1,
      earlier: { index: w1 },
      later: { index: w2 },
      observed: v(10, 0),
      winners: [v(20, 1), v(10, 0)],
    })
  })

  it('reports the final state of a reordered pair in every region that shows it', () => {
    const s = script()
    s.put('c1', 'k', v(300, 0))
    s.put('c1', 'k', v(100, 1))
    const kinds = checkMonotonicWrites(s.history({ k: [v(300, 0), v(300, 0)] })).violations.map(
      (x) => [x.kind, x.region],
    )
    expect(kinds).toEqual([
      ['unordered-write', undefined],
      ['final-state', 0],
      ['final-state', 1],
    ])
  })

  it('leaves a final state that ends on another client write to the convergence check', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.put('c2', 'k', v(20))
    expect(checkMonotonicWrites(s.history({ k: [v(10), v(10)] })).violations).toEqual([])
  })

  it('does not blame the final state for a superseding write at eventual', () => {
    const s = script()
    s.put('c1', 'k', v(30))
    s.put('c1', 'k', v(20), { level: 'eventual' })
    const h = s.history({ k: [v(30), v(30)] })
    expect(checkMonotonicWrites(h).violations).toEqual([])
    expect(checkMonotonicWrites(h, { asIfSession: true }).violations).toHaveLength(3)
  })
})
