import { describe, expect, it } from 'vitest'
import { checkReadYourWrites } from '../src/index.js'
import { script, v } from './script.js'

describe('checkReadYourWrites', () => {
  it('passes reads that see the session own writes or newer ones', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    s.get('c1', 'k', v(10, 0), { region: 1 })
    s.put('c2', 'k', v(30, 1))
    s.get('c1', 'k', v(30, 1), { region: 0 })
    const r = checkReadYourWrites(s.history())
    expect(r.violations).toEqual([])
    expect(r).toMatchObject({ checked: 2, crossRegion: 1 })
  })

  it('reports a read that misses an acknowledged write, with the write and both versions', () => {
    const s = script()
    const w = s.put('c1', 'k', v(20, 0), { region: 0 })
    const r = s.get('c1', 'k', v(10, 1), { region: 1, writer: 'c2' })
    const [x, ...rest] = checkReadYourWrites(s.history()).violations
    expect(rest).toEqual([])
    expect(x).toMatchObject({
      check: 'read-your-writes',
      kind: 'stale-read',
      client: 'c1',
      key: 'k',
      earlier: { index: w, operation: { op: 'put' } },
      later: { index: r, operation: { op: 'get' } },
      required: v(20, 0),
      observed: v(10, 1),
    })
    expect(x!.message).toMatch(/get#1 .* older than .* written by put#0/)
  })

  it('reports a not-found read after an acknowledged put', () => {
    const s = script()
    s.put('c1', 'k', v(20))
    s.get('c1', 'k', undefined, { region: 1 })
    expect(checkReadYourWrites(s.history()).violations).toHaveLength(1)
  })

  it('does not flag a read that overlaps the write it missed', () => {
    const s = script()
    s.put('c1', 'k', v(20), { at: [0, 30] })
    s.get('c1', 'k', undefined, { at: [10, 20] })
    s.get('c1', 'k', v(5), { at: [29, 40] })
    expect(checkReadYourWrites(s.history()).violations).toEqual([])
    // ...but the first read called after the write settled must see it.
    s.get('c1', 'k', v(5), { at: [31, 40] })
    expect(checkReadYourWrites(s.history()).violations).toHaveLength(1)
  })

  it('sets no requirement for a failed write, even one that may have taken effect', () => {
    const s = script()
    s.put('c1', 'k', v(20), { error: 'TIMEOUT' })
    s.get('c1', 'k', undefined)
    expect(checkReadYourWrites(s.history())).toMatchObject({ violations: [], checked: 0 })
  })

  it('treats a delete as a tombstone version the session must see', () => {
    const s = script()
    s.put('c1', 'k', v(10))
    s.del('c1', 'k', v(20))
    s.get('c1', 'k', v(20), { found: false })
    expect(checkReadYourWrites(s.history()).violations).toEqual([])
    s.get('c1', 'k', v(10), { region: 1 })
    const [x] = checkReadYourWrites(s.history()).violations
    expect(x).toMatchObject({ required: v(20), observed: v(10), earlier: { index: 1 } })
  })

  it('holds only reads whose level promises it, unless checking as if session', () => {
    const s = script()
    s.put('c1', 'k', v(20))
    s.get('c1', 'k', v(10), { level: 'eventual' })
    s.get('c1', 'k', v(10), { level: 'monotonic-reads' })
    s.get('c1', 'k', v(10), { level: 'read-your-writes' })
    expect(checkReadYourWrites(s.history()).violations.map((x) => x.later?.index)).toEqual([3])
    expect(checkReadYourWrites(s.history(), { asIfSession: true }).violations).toHaveLength(3)
  })

  it('counts writes at every level, and only the same client and key', () => {
    const s = script()
    s.put('c1', 'k', v(20), { level: 'eventual' })
    s.put('c2', 'k', v(30))
    s.put('c1', 'other', v(40))
    s.get('c1', 'k', v(25), { writer: 'c3' })
    expect(checkReadYourWrites(s.history()).violations).toEqual([])
    s.get('c1', 'k', v(15), { writer: 'c3' })
    expect(checkReadYourWrites(s.history()).violations).toHaveLength(1)
  })
})
