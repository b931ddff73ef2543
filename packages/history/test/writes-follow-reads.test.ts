import { describe, expect, it } from 'vitest'
import { checkWritesFollowReads } from '../src/index.js'
import { script, v } from './script.js'

describe('checkWritesFollowReads', () => {
  it('passes writes newer than what their session read', () => {
    const s = script()
    s.get('c1', 'k', undefined)
    s.put('c1', 'k', v(5))
    s.get('c1', 'k', v(10, 1), { writer: 'c2' })
    s.put('c1', 'k', v(11, 0))
    const r = checkWritesFollowReads(s.history({ k: [v(11), v(11)] }))
    expect(r.violations).toEqual([])
    // A not-found read sets no requirement, so only the second write was checked.
    expect(r).toMatchObject({ checked: 1, crossRegion: 1 })
  })

  it('reports a write not newer than a version its session read', () => {
    const s = script()
    const read = s.get('c1', 'k', v(300, 0), { writer: 'c2' })
    const write = s.put('c1', 'k', v(100, 1))
    const [x, ...rest] = checkWritesFollowReads(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({
      check: 'writes-follow-reads',
      kind: 'unordered-write',
      client: 'c1',
      earlier: { index: read, operation: { op: 'get' } },
      later: { index: write, operation: { op: 'put' } },
      required: v(300, 0),
      observed: v(100, 1),
    })
    expect(x!.message).toMatch(/put#1 .* not newer than .* read by get#0/)
  })

  it('counts tombstones read, and deletes as writes', () => {
    const s = script()
    s.get('c1', 'k', v(30), { found: false })
    s.del('c1', 'k', v(20, 1))
    expect(checkWritesFollowReads(s.history()).violations).toHaveLength(1)
  })

  it('does not order a write with a read it overlaps', () => {
    const s = script()
    s.get('c1', 'k', v(30), { at: [0, 20], writer: 'c2' })
    s.put('c1', 'k', v(20), { at: [10, 30] })
    expect(checkWritesFollowReads(s.history()).violations).toEqual([])
  })

  it('holds only writes whose level promises it, unless checking as if session', () => {
    const s = script()
    s.get('c1', 'k', v(30), { writer: 'c2', level: 'eventual' })
    s.put('c1', 'k', v(21), { level: 'eventual' })
    s.put('c1', 'k', v(22), { level: 'monotonic-writes' })
    s.put('c1', 'k', v(23), { level: 'writes-follow-reads' })
    expect(checkWritesFollowReads(s.history()).violations.map((x) => x.later?.index)).toEqual([3])
    expect(checkWritesFollowReads(s.history(), { asIfSession: true }).violations).toHaveLength(3)
  })

  it('reports a region that ended on a version read before a newer write, once per region', () => {
    const s = script()
    const read = s.get('c1', 'k', v(10), { writer: 'c2' })
    s.get('c1', 'k', v(10), { writer: 'c2' })
    const write = s.put('c1', 'k', v(20))
    const r = checkWritesFollowReads(s.history({ k: [v(10), v(20), v(10)] }))
    expect(r.violations.map((x) => [x.kind, x.region, x.earlier?.index, x.later?.index])).toEqual([
      ['final-state', 0, read, write],
      ['final-state', 2, read, write],
    ])
    expect(r.violations[0]!.message).toMatch(/region 0 ended on .* read by get#0 .* before put#2/)
  })

  it('does not blame a final state when the later write failed', () => {
    const s = script()
    s.get('c1', 'k', v(10), { writer: 'c2' })
    s.put('c1', 'k', v(20), { error: 'SESSION_NOT_AVAILABLE' })
    expect(checkWritesFollowReads(s.history({ k: [v(10), v(10)] })).violations).toEqual([])
  })
})
