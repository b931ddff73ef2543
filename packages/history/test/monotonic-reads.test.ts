import { describe, expect, it } from 'vitest'
import { checkMonotonicReads } from '../src/index.js'
import { script, v } from './script.js'

describe('checkMonotonicReads', () => {
  it('passes reads that never go back, counting the reads it checked', () => {
    const s = script()
    s.get('c1', 'k', undefined)
    s.get('c1', 'k', v(10, 0), { region: 0 })
    s.get('c1', 'k', v(10, 0), { region: 1 })
    s.get('c1', 'k', v(20, 1), { region: 1 })
    const r = checkMonotonicReads(s.history())
    expect(r.violations).toEqual([])
    // The first read has nothing before it; a not-found read sets no requirement. Both checked
    // reads ran in region 1, and what they had to see was first read in region 0.
    expect(r.checked).toBe(2)
    expect(r.crossRegion).toBe(2)
  })

  it('reports a read older than one before it, naming both operations and versions', () => {
    const s = script()
    const first = s.get('c1', 'k', v(20, 0), { region: 0 })
    const second = s.get('c1', 'k', v(10, 1), { region: 1 })
    const r = checkMonotonicReads(s.history())
    expect(r.violations).toHaveLength(1)
    const [x] = r.violations
    expect(x).toMatchObject({
      check: 'monotonic-reads',
      kind: 'stale-read',
      key: 'k',
      client: 'c1',
      earlier: { index: first },
      later: { index: second },
      required: v(20, 0),
      observed: v(10, 1),
    })
    expect(x!.message).toContain(`get#${second} (c1 in region 1 at session)`)
    expect(x!.message).toContain(`get#${first}`)
  })

  it('compares the newest version read so far, not just the previous read', () => {
    const s = script()
    const newest = s.get('c1', 'k', v(30))
    s.get('c1', 'k', v(30))
    s.get('c1', 'k', v(40), { level: 'eventual' }) // unchecked, but it raises the bar
    const stale = s.get('c1', 'k', v(35))
    const [x, ...rest] = checkMonotonicReads(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({ earlier: { index: newest + 2 }, later: { index: stale } })
  })

  it('orders versions by dc when the timestamps tie', () => {
    const s = script()
    s.get('c1', 'k', v(10, 1))
    s.get('c1', 'k', v(10, 0))
    expect(checkMonotonicReads(s.history()).violations).toHaveLength(1)
  })

  it('reports a not-found read after a found one', () => {
    const s = script()
    s.get('c1', 'k', v(10))
    s.get('c1', 'k', undefined)
    const [x] = checkMonotonicReads(s.history()).violations
    expect(x).toMatchObject({ required: v(10), observed: undefined })
  })

  it('treats a tombstone read as a version', () => {
    const s = script()
    s.get('c1', 'k', v(30), { found: false })
    s.get('c1', 'k', v(40), { found: false })
    s.get('c1', 'k', v(20))
    const r = checkMonotonicReads(s.history())
    expect(r.violations.map((x) => [x.required, x.observed])).toEqual([[v(40), v(20)]])
  })

  it('holds only reads whose level promises it, unless checking as if session', () => {
    const s = script()
    s.get('c1', 'k', v(20))
    s.get('c1', 'k', v(10), { level: 'eventual' })
    s.get('c1', 'k', v(10), { level: 'read-your-writes' })
    expect(checkMonotonicReads(s.history()).violations).toEqual([])
    expect(checkMonotonicReads(s.history(), { asIfSession: true }).violations).toHaveLength(2)
    const s2 = script()
    s2.get('c1', 'k', v(20))
    s2.get('c1', 'k', v(10), { level: 'monotonic-reads' })
    expect(checkMonotonicReads(s2.history()).violations).toHaveLength(1)
  })

  it('does not order reads whose intervals overlap', () => {
    const s = script()
    s.get('c1', 'k', v(20), { at: [0, 50] })
    s.get('c1', 'k', v(10), { at: [40, 60] })
    expect(checkMonotonicReads(s.history()).violations).toEqual([])
    // Settling at the very instant the next call starts is before it.
    const t = script()
    t.get('c1', 'k', v(20), { at: [0, 50] })
    t.get('c1', 'k', v(10), { at: [50, 60] })
    expect(checkMonotonicReads(t.history()).violations).toHaveLength(1)
  })

  it('keeps clients and keys apart, and ignores failed reads', () => {
    const s = script()
    s.get('c1', 'k', v(20))
    s.get('c2', 'k', v(10))
    s.get('c1', 'other', v(10))
    s.get('c1', 'k', v(30), { error: 'SESSION_NOT_AVAILABLE' })
    s.get('c1', 'k', v(25))
    expect(checkMonotonicReads(s.history()).violations).toEqual([])
  })
})
