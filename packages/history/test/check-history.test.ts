import { describe, expect, it } from 'vitest'
import { CHECK_NAMES, checkHistory, formatReport, type History } from '../src/index.js'
import { script, v } from './script.js'

/** Two sessions at eventual, in two regions with clocks 300 ms apart: everything goes wrong. */
function eventualAnomalies(): History {
  const s = script()
  const eventual = { level: 'eventual' } as const
  s.put('c1', 'k', v(300, 0), eventual)
  s.get('c1', 'k', undefined, { ...eventual, region: 1 }) // RYW
  s.get('c2', 'k', v(300, 0), { ...eventual, writer: 'c1' })
  s.get('c2', 'k', undefined, { ...eventual, region: 1 }) // MR
  s.put('c2', 'k', v(100, 1), eventual) // WFR
  s.put('c1', 'k', v(101, 1), eventual) // MW (c1 read nothing, so no WFR)
  return s.history({ k: [v(300, 0), v(300, 0)] })
}

describe('checkHistory', () => {
  it('passes a valid history, running every check', () => {
    const s = script()
    s.put('c1', 'k', v(10, 0))
    s.get('c1', 'k', v(10, 0), { region: 1 })
    s.put('c1', 'k', v(11, 1))
    const report = checkHistory(s.history({ k: [v(11, 1), v(11, 1)] }))
    expect(report.ok).toBe(true)
    expect(report.violations).toEqual([])
    expect(Object.keys(report.results)).toEqual([...CHECK_NAMES])
  })

  it('holds each operation to its own level, or every one to session when asked', () => {
    const h = eventualAnomalies()
    expect(checkHistory(h)).toMatchObject({ ok: true, violations: [] })
    const report = checkHistory(h, { asIfSession: true })
    expect(report.ok).toBe(false)
    const found = report.violations.map((x) => `${x.check}/${x.kind}/${String(x.client)}`)
    expect(found).toEqual([
      'monotonic-reads/stale-read/c2',
      'read-your-writes/stale-read/c1',
      'monotonic-writes/unordered-write/c1',
      'monotonic-writes/final-state/c1',
      'monotonic-writes/final-state/c1',
      'writes-follow-reads/unordered-write/c2',
      'writes-follow-reads/final-state/c2',
      'writes-follow-reads/final-state/c2',
    ])
  })

  it('runs only the checks it is asked for', () => {
    const report = checkHistory(eventualAnomalies(), {
      asIfSession: true,
      checks: ['read-your-writes'],
    })
    expect(Object.keys(report.results)).toEqual(['read-your-writes'])
    expect(report.violations).toHaveLength(1)
  })

  it('gives the same verdict on a history that went through JSON', () => {
    const h = eventualAnomalies()
    const again = JSON.parse(JSON.stringify({ ...h, final: { ...h.final, none: [undefined] } }))
    expect(checkHistory(again, { asIfSession: true }).violations).toEqual(
      checkHistory(h, { asIfSession: true }).violations,
    )
  })

  it('formats a report with counts and the first violations', () => {
    const text = formatReport(checkHistory(eventualAnomalies(), { asIfSession: true }), 2)
    const lines = text.split('\n')
    expect(lines[0]).toBe('monotonic-reads: 1 violation(s) in 1 checked (1 across regions)')
    expect(lines).toContain('convergence: 0 violation(s) in 1 checked (0 across regions)')
    // The first violation follows one line per check.
    expect(lines.find((line) => line.startsWith('['))).toMatch(
      /^\[monotonic-reads\/stale-read\] key "k": get#3 .* returned none, older than 00000000012c0000@0 .*; required 00000000012c0000@0, observed none$/,
    )
    expect(lines.at(-1)).toBe('... and 6 more')
  })

  it('refuses malformed histories instead of judging them', () => {
    const base = script()
    base.get('c1', 'k', v(10))
    const op = base.operations[0]!
    const bad = (patch: object) => ({ operations: [{ ...op, ...patch }] }) as History
    expect(() => checkHistory(bad({ op: 'scan' }))).toThrow(/#0: unknown op scan/)
    expect(() => checkHistory(bad({ level: 'monotonic-writes' }))).toThrow(/not a read level/)
    expect(() => checkHistory(bad({ completedAt: 0 }))).toThrow(/completedAt is before invokedAt/)
    expect(() => checkHistory(bad({ reply: undefined }))).toThrow(/needs its reply/)
    expect(() => checkHistory(bad({ ok: false }))).toThrow(/needs its error/)
    expect(() => checkHistory(bad({ reply: { found: true, ts: 'abc', dc: 0 } }))).toThrow(/HLC/)
    expect(() => checkHistory(bad({ reply: { found: true } }))).toThrow(/must name its version/)
    expect(() => checkHistory(bad({ reply: { found: true, ts: v(1).ts } }))).toThrow(
      /both ts and dc/,
    )
    expect(() => checkHistory({ operations: [], final: { k: [{ ts: 'nope', dc: 0 }] } })).toThrow(
      /final state of k in region 0/,
    )
  })
})
