import { describe, expect, it } from 'vitest'
import { checkConvergence } from '../src/index.js'
import { script, v } from './script.js'

describe('checkConvergence', () => {
  it('passes when every region ends on the newest acknowledged write', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    s.put('c2', 'k', v(20, 1))
    s.get('c1', 'k', v(20, 1), { writer: 'c2' })
    s.put('c1', 'quiet', v(5, 0), { error: 'INVALID_VALUE' })
    const r = checkConvergence(s.history({ k: [v(20, 1), v(20, 1)], quiet: [undefined, null] }))
    expect(r.violations).toEqual([])
    expect(r.checked).toBe(2)
  })

  it('accepts a tombstone as the winner', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.del('c2', 'k', v(20, 1))
    s.get('c1', 'k', v(20, 1), { found: false })
    expect(checkConvergence(s.history({ k: [v(20, 1), v(20, 1)] })).violations).toEqual([])
  })

  it('reports regions that ended on different winners, and the one that lost a write', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    const newest = s.put('c2', 'k', v(20, 1))
    const r = checkConvergence(s.history({ k: [v(10, 0), v(20, 1)] }))
    expect(r.violations).toMatchObject([
      { kind: 'diverged', key: 'k', winners: [v(10, 0), v(20, 1)] },
      {
        kind: 'lost-write',
        region: 0,
        required: v(20, 1),
        observed: v(10, 0),
        earlier: { index: newest },
      },
    ])
    expect(r.violations[1]!.message).toMatch(
      /region 0 ended on .*@0, older than .*@1 acknowledged to put#1/,
    )
  })

  it('reports a write lost everywhere, even though the regions agree', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.del('c1', 'gone', v(10))
    const r = checkConvergence(s.history({ k: [undefined, undefined], gone: [null, null] }))
    expect(r.violations.map((x) => [x.key, x.kind, x.region])).toEqual([
      ['k', 'lost-write', 0],
      ['k', 'lost-write', 1],
      ['gone', 'lost-write', 0],
      ['gone', 'lost-write', 1],
    ])
  })

  it('reports a key with acknowledged writes but no final state', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    const r = checkConvergence(s.history({}))
    expect(r.violations).toMatchObject([{ kind: 'missing-final-state', key: 'k', required: v(10) }])
  })

  it('skips the final-state checks when the history has no final state', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    expect(checkConvergence(s.history())).toMatchObject({ violations: [], checked: 0 })
  })

  it('reports a version read that nobody wrote', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    const read = s.get('c2', 'k', v(15), { writer: 'ghost' })
    const r = checkConvergence(s.history({ k: [v(10), v(10)] }))
    expect(r.violations).toMatchObject([
      { kind: 'unknown-version', client: 'c2', observed: v(15), later: { index: read } },
    ])
    expect(r.violations[0]!.message).toMatch(/get#1 .* read .*, which no acknowledged write made/)
  })

  it('reports a final winner that nobody wrote', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    const r = checkConvergence(s.history({ k: [v(99, 1), v(99, 1)] }))
    expect(r.violations).toMatchObject([{ kind: 'unknown-version', region: 0, observed: v(99, 1) }])
  })

  it('lets a write that failed indeterminately explain one unknown version from its region', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    s.put('c1', 'k', v(0, 1), { region: 1, error: 'TIMEOUT' })
    s.get('c2', 'k', v(30, 1), { writer: 'c1' })
    expect(checkConvergence(s.history({ k: [v(30, 1), v(30, 1)] })).violations).toEqual([])

    // A second unknown version from region 1 is one more than that write can explain...
    s.get('c2', 'k', v(31, 1), { writer: 'c1' })
    expect(checkConvergence(s.history()).violations.map((x) => x.kind)).toEqual([
      'unknown-version',
      'unknown-version',
    ])
    // ...and it explains nothing from region 0, nor does a write refused outright.
    const t = script()
    t.put('c1', 'k', v(0, 1), { region: 1, error: 'TIMEOUT' })
    t.put('c1', 'k', v(0, 0), { region: 0, error: 'VALUE_TOO_LARGE' })
    t.get('c2', 'k', v(30, 0), { writer: 'c1' })
    expect(checkConvergence(t.history()).violations.map((x) => x.kind)).toEqual(['unknown-version'])
  })

  it('reports a read whose value or found-ness differs from what its version wrote', () => {
    const s = script()
    s.put('c1', 'k', v(10), { value: { n: 1, tags: ['a'] } })
    s.del('c1', 'k', v(20))
    s.get('c2', 'k', v(10), { value: { tags: ['a'], n: 1 } })
    s.get('c2', 'k', v(10), { value: { n: 2, tags: ['a'] } })
    s.get('c2', 'k', v(10), { found: false })
    s.get('c2', 'k', v(20), { found: true, value: null })
    const r = checkConvergence(s.history())
    expect(r.violations.map((x) => [x.kind, x.later?.index, x.earlier?.index])).toEqual([
      ['value-mismatch', 3, 0],
      ['value-mismatch', 4, 0],
      ['value-mismatch', 5, 1],
    ])
    expect(r.violations[0]!.message).toContain('returned {"n":2,"tags":["a"]}')
    expect(r.violations[2]!.message).toContain('wrote as a tombstone')
  })

  it('reports two acknowledged writes with the same version', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.put('c2', 'k', v(10))
    expect(checkConvergence(s.history()).violations).toMatchObject([
      { kind: 'duplicate-version', earlier: { index: 0 }, later: { index: 1 } },
    ])
  })
})
