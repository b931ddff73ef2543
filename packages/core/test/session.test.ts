import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { READ_LEVELS, WRITE_LEVELS, isReadLevel, isWriteLevel } from '../src/consistency.js'
import { CausewayError } from '../src/errors.js'
import { HLC_ZERO, hlcFrom } from '../src/hlc.js'
import { Session } from '../src/session.js'

const scope = { cluster: 'c1', regions: 2, partitions: 4 }
const t = (ms: number, c = 0) => hlcFrom(ms, c)

function sample(): Session {
  const s = new Session(scope)
  s.observeWrite(1, { dc: 0, idx: 7, ts: t(100), epoch: 1 })
  s.observeRead(1, { dc: 1, idx: 3, ts: t(90), epoch: 1 })
  s.observeRead(1, { dc: 0, idx: 9, ts: t(120), epoch: 1 })
  return s
}

describe('levels', () => {
  it('names the five read and five write levels', () => {
    expect(READ_LEVELS).toEqual([
      'eventual',
      'monotonic-reads',
      'read-your-writes',
      'session',
      'causal',
    ])
    expect(WRITE_LEVELS).toEqual([
      'eventual',
      'monotonic-writes',
      'writes-follow-reads',
      'session',
      'causal',
    ])
    expect(isReadLevel('session')).toBe(true)
    expect(isReadLevel('strong')).toBe(false)
    expect(isWriteLevel('monotonic-reads')).toBe(false)
  })
})

describe('Session (NuKV Algorithm 1)', () => {
  it('a read sends the rows its level picks', () => {
    const s = sample()
    expect(s.readNeed(1, 'eventual')).toBeUndefined()
    expect(s.readNeed(1, 'monotonic-reads')).toEqual({ epoch: 1, need: [9, 3] })
    expect(s.readNeed(1, 'read-your-writes')).toEqual({ epoch: 1, need: [7, 0] })
    expect(s.readNeed(1, 'session')).toEqual({ epoch: 1, need: [9, 3] })
    expect(s.readNeed(2, 'session')).toBeUndefined() // untouched partition: nothing to wait for
  })

  it('a write sends the dependency time its level picks', () => {
    const s = sample()
    expect(s.writeDependency('eventual')).toBe(HLC_ZERO)
    expect(s.writeDependency('monotonic-writes')).toBe(t(100))
    expect(s.writeDependency('writes-follow-reads')).toBe(t(120))
    expect(s.writeDependency('session')).toBe(t(120))
  })

  it('replies only ever raise the matrices and times', () => {
    const s = sample()
    s.observeRead(1, { dc: 0, idx: 2, ts: t(10), epoch: 1 })
    s.observeWrite(1, { dc: 0, idx: 1, ts: t(10), epoch: 1 })
    expect(s.row(1)).toEqual({ epoch: 1, hrm: [9, 3], hwm: [7, 0] })
    expect(s.dtR).toBe(t(120))
    expect(s.dtW).toBe(t(100))
  })

  it('a not-found read records only the epoch', () => {
    const s = new Session(scope)
    s.observeRead(3, { epoch: 1 })
    expect(s.row(3)).toEqual({ epoch: 1, hrm: [0, 0], hwm: [0, 0] })
    expect(s.readNeed(3, 'session')).toEqual({ epoch: 1, need: [0, 0] })
  })

  it('round-trips through JSON.stringify and fromJSON', () => {
    const s = sample()
    const restored = Session.fromJSON(JSON.parse(JSON.stringify(s)), scope)
    expect(restored.toJSON()).toEqual(s.toJSON())
    expect(Session.fromJSON(JSON.stringify(s)).toJSON()).toEqual(s.toJSON())
  })

  it('merge is the elementwise max, commutative and idempotent (property)', () => {
    const obs = fc.record({
      p: fc.integer({ min: 0, max: 3 }),
      dc: fc.integer({ min: 0, max: 1 }),
      idx: fc.nat({ max: 100 }),
      ms: fc.nat({ max: 1000 }),
      write: fc.boolean(),
    })
    const build = (
      ops: Array<{ p: number; dc: number; idx: number; ms: number; write: boolean }>,
    ) => {
      const s = new Session(scope)
      for (const o of ops) {
        const reply = { dc: o.dc, idx: o.idx, ts: t(o.ms), epoch: 1 }
        if (o.write) s.observeWrite(o.p, reply)
        else s.observeRead(o.p, reply)
      }
      return s
    }
    fc.assert(
      fc.property(fc.array(obs), fc.array(obs), (a, b) => {
        const ab = build(a).merge(build(b))
        const ba = build(b).merge(build(a))
        expect(ab.toJSON()).toEqual(ba.toJSON())
        expect(ab.clone().merge(ab).toJSON()).toEqual(ab.toJSON())
        expect(ab.toJSON()).toEqual(build([...a, ...b]).toJSON())
      }),
    )
  })

  it('merge keeps the newer epoch of a partition', () => {
    const a = new Session(scope)
    a.observeWrite(0, { dc: 0, idx: 50, ts: t(1), epoch: 1 })
    const b = new Session(scope)
    b.observeWrite(0, { dc: 0, idx: 2, ts: t(2), epoch: 2 })
    expect(a.merge(b).row(0)).toEqual({ epoch: 2, hrm: [0, 0], hwm: [2, 0] })
  })

  it('refuses to merge a session of another cluster', () => {
    const other = new Session({ ...scope, cluster: 'c2' })
    expect(() => sample().merge(other)).toThrow(
      expect.objectContaining({ code: 'FOREIGN_SESSION' }),
    )
  })
})

describe('Session.fromJSON validation', () => {
  const good = () => sample().toJSON() as unknown as Record<string, unknown>
  const cases: Array<[string, (j: Record<string, unknown>) => unknown]> = [
    ['not JSON text', () => '{nope'],
    ['not an object', () => [1, 2]],
    ['null', () => null],
    ['unknown version', (j) => ({ ...j, v: 2 })],
    ['empty cluster', (j) => ({ ...j, cluster: '' })],
    ['regions not integer', (j) => ({ ...j, regions: 1.5 })],
    ['partitions zero', (j) => ({ ...j, partitions: 0 })],
    ['dtR malformed', (j) => ({ ...j, dtR: 'ABC' })],
    ['dtW missing', (j) => ({ ...j, dtW: undefined })],
    ['p not object', (j) => ({ ...j, p: [] })],
    ['partition out of range', (j) => ({ ...j, p: { 9: { e: 1, r: [0, 0], w: [0, 0] } } })],
    ['partition not a number', (j) => ({ ...j, p: { x: { e: 1, r: [0, 0], w: [0, 0] } } })],
    ['row vector too short', (j) => ({ ...j, p: { 1: { e: 1, r: [0], w: [0, 0] } } })],
    ['negative index', (j) => ({ ...j, p: { 1: { e: 1, r: [0, -1], w: [0, 0] } } })],
    ['epoch zero', (j) => ({ ...j, p: { 1: { e: 0, r: [0, 0], w: [0, 0] } } })],
    ['string index', (j) => ({ ...j, p: { 1: { e: 1, r: ['1', 0], w: [0, 0] } } })],
  ]
  it.each(cases)('rejects a session with %s as INVALID_SESSION', (_name, mutate) => {
    const input = mutate(good())
    expect(() => Session.fromJSON(input, scope)).toThrow(CausewayError)
    try {
      Session.fromJSON(input, scope)
    } catch (e) {
      expect((e as CausewayError).code).toBe('INVALID_SESSION')
    }
  })

  it('rejects a well-formed session of another cluster as FOREIGN_SESSION', () => {
    for (const expect_ of [
      { ...scope, cluster: 'other' },
      { ...scope, regions: 3 },
      { ...scope, partitions: 8 },
    ]) {
      expect(() => Session.fromJSON(good(), expect_)).toThrow(
        expect.objectContaining({ code: 'FOREIGN_SESSION' }),
      )
    }
  })
})
