/**
 * No false alarms: a single-copy store where every call takes effect at one instant inside its
 * interval (a linearizable register per key) keeps every session guarantee, so any history it
 * produces, with overlapping calls, several sessions and any levels, must pass every check even
 * when every call is held to `session`.
 */
import { READ_LEVELS, WRITE_LEVELS, hlcFrom } from '@causeway/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  checkHistory,
  formatReport,
  type History,
  type Operation,
  type Version,
} from '../src/index.js'

const REGIONS = 3

const call = fc.record({
  kind: fc.constantFrom('get', 'get', 'put', 'delete'),
  key: fc.constantFrom('a', 'b'),
  region: fc.integer({ min: 0, max: REGIONS - 1 }),
  readLevel: fc.constantFrom(...READ_LEVELS),
  writeLevel: fc.constantFrom(...WRITE_LEVELS),
  // The gap may be shorter than the previous call, so a session's calls can overlap.
  gap: fc.integer({ min: 0, max: 20 }),
  duration: fc.integer({ min: 1, max: 30 }),
  at: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
})

const sessions = fc.array(fc.array(call, { maxLength: 12 }), { minLength: 1, maxLength: 4 })

type Plan = typeof sessions extends fc.Arbitrary<infer T> ? T : never

function linearizableHistory(plan: Plan): History {
  const calls = plan.flatMap((session, c) => {
    let clock = 0
    return session.map((x) => {
      clock += x.gap
      const invokedAt = clock
      return {
        ...x,
        client: `c${c}`,
        invokedAt,
        completedAt: invokedAt + x.duration,
        effectAt: invokedAt + x.at * x.duration,
      }
    })
  })
  const state = new Map<string, { version: Version; value?: unknown; deleted: boolean }>()
  let writes = 0
  const operations: Operation[] = []
  for (const x of [...calls].sort((a, b) => a.effectAt - b.effectAt)) {
    const base = {
      client: x.client,
      key: x.key,
      region: x.region,
      invokedAt: x.invokedAt,
      completedAt: x.completedAt,
      ok: true,
    }
    if (x.kind === 'get') {
      const now = state.get(x.key)
      const found = now !== undefined && !now.deleted
      operations.push({
        ...base,
        op: 'get',
        level: x.readLevel,
        reply: { found, ...(found && { value: now.value }), ...(now && now.version) },
      })
      continue
    }
    const version = { ts: hlcFrom(1000 + ++writes, 0), dc: x.region }
    const reply = { ...version, idx: writes }
    if (x.kind === 'put') {
      const value = { by: x.client, n: writes }
      state.set(x.key, { version, value, deleted: false })
      operations.push({ ...base, op: 'put', level: x.writeLevel, value, reply })
    } else {
      state.set(x.key, { version, deleted: true })
      operations.push({ ...base, op: 'delete', level: x.writeLevel, reply })
    }
  }
  // A recorder appends calls as they settle.
  operations.sort((a, b) => a.completedAt - b.completedAt)
  const final = Object.fromEntries(
    ['a', 'b'].map((k) => [k, Array.from({ length: REGIONS }, () => state.get(k)?.version)]),
  )
  return { operations, final }
}

describe('histories of a linearizable store', () => {
  it('pass every check, even held to session', () => {
    fc.assert(
      fc.property(sessions, (plan) => {
        const report = checkHistory(linearizableHistory(plan), { asIfSession: true })
        expect(report.violations, formatReport(report)).toEqual([])
      }),
      { numRuns: 300 },
    )
  })
})
