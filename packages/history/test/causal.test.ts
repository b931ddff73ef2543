import { describe, expect, it } from 'vitest'
import { checkCausal, checkHistory } from '../src/index.js'
import { script, v } from './script.js'

describe('checkCausal', () => {
  it('finds a read of y whose writer had written x, then an older x (across keys)', () => {
    const s = script()
    s.put('a', 'x', v(10), { level: 'causal' })
    const y = s.put('a', 'y', v(20), { level: 'causal' })
    s.get('b', 'y', v(20), { writer: 'a', level: 'causal', region: 1 })
    const stale = s.get('b', 'x', v(5, 1), { level: 'causal', region: 1, writer: 'c' })
    const { violations, checked, crossRegion } = checkCausal(s.history())
    expect(violations).toHaveLength(1)
    expect(violations[0]).toMatchObject({
      check: 'causal',
      kind: 'stale-read',
      key: 'x',
      client: 'b',
      crossKey: true,
      required: v(10),
      observed: v(5, 1),
      later: { index: stale },
    })
    expect(violations[0]!.earlier!.index).toBe(y - 1)
    expect(checked).toBe(2)
    expect(crossRegion).toBe(2)
  })

  it('passes the same reads when x is new enough, or was never written before', () => {
    const s = script()
    s.put('a', 'x', v(10), { level: 'causal' })
    s.put('a', 'y', v(20), { level: 'causal' })
    s.get('b', 'y', v(20), { writer: 'a', level: 'causal', region: 1 })
    s.get('b', 'x', v(10), { writer: 'a', level: 'causal', region: 1 })
    s.get('b', 'z', undefined, { level: 'causal', region: 1 })
    expect(checkCausal(s.history()).violations).toEqual([])
  })

  it('follows reads-from through other sessions (transitivity)', () => {
    const s = script()
    s.put('a', 'x', v(10), { level: 'causal' })
    s.put('a', 'y', v(20), { level: 'causal' })
    s.get('b', 'y', v(20), { writer: 'a', level: 'causal' })
    s.put('b', 'z', v(30), { level: 'causal' })
    s.get('c', 'z', v(30), { writer: 'b', level: 'causal', region: 1 })
    s.get('c', 'x', undefined, { level: 'causal', region: 1 })
    const [x, ...rest] = checkCausal(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({ client: 'c', key: 'x', required: v(10), crossKey: true })
  })

  it('does not order calls that overlap, nor reads with writes they did not see', () => {
    const s = script()
    s.put('a', 'x', v(10), { level: 'causal', at: [0, 100] })
    s.put('a', 'y', v(20), { level: 'causal', at: [10, 20] })
    s.get('b', 'y', v(20), { writer: 'a', level: 'causal', at: [30, 40] })
    // x was still being written when y was: y does not depend on it.
    s.get('b', 'x', undefined, { level: 'causal', at: [50, 60] })
    // c saw nothing of a's.
    s.get('c', 'x', undefined, { level: 'causal', at: [200, 210] })
    expect(checkCausal(s.history()).violations).toEqual([])
  })

  it('marks a stale read its own session explains as not cross-key', () => {
    const s = script()
    s.put('a', 'x', v(10), { level: 'causal' })
    s.get('b', 'x', v(10), { writer: 'a', level: 'causal' })
    s.get('b', 'x', v(5), { writer: 'a', level: 'causal' })
    const [x] = checkCausal(s.history()).violations
    expect(x).toMatchObject({ kind: 'stale-read', crossKey: false })
  })

  it('reports a write not newer than one in its causal past', () => {
    const s = script()
    s.put('a', 'x', v(50), { level: 'causal' })
    s.put('a', 'y', v(60), { level: 'causal' })
    s.get('b', 'y', v(60), { writer: 'a', level: 'causal', region: 1 })
    s.put('b', 'x', v(40, 1), { level: 'causal' })
    const [x, ...rest] = checkCausal(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({
      kind: 'unordered-write',
      key: 'x',
      required: v(50),
      observed: v(40, 1),
    })
  })

  it('holds only causal calls to it, unless checking as if causal', () => {
    const s = script()
    s.put('a', 'x', v(10))
    s.put('a', 'y', v(20))
    s.get('b', 'y', v(20), { writer: 'a', region: 1 })
    s.get('b', 'x', undefined, { region: 1 })
    expect(checkCausal(s.history()).violations).toEqual([])
    expect(checkCausal(s.history(), { asIfCausal: true }).violations).toHaveLength(1)
    // checkHistory runs it with the others; the session checks see nothing wrong here.
    const report = checkHistory(s.history(), { asIfCausal: true })
    expect(report.violations.map((x) => x.check)).toEqual(['causal'])
  })

  it('reports operations on a cycle (a read from its own causal future)', () => {
    const s = script()
    s.get('a', 'x', v(20), { writer: 'b', level: 'causal' })
    s.put('a', 'y', v(10), { level: 'causal' })
    s.get('b', 'y', v(10), { writer: 'a', level: 'causal' })
    s.put('b', 'x', v(20), { level: 'causal' })
    const kinds = checkCausal(s.history()).violations.map((x) => x.kind)
    expect(kinds).toEqual(['causal-cycle', 'causal-cycle', 'causal-cycle', 'causal-cycle'])
  })
})
