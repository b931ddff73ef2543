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
    expect(s.readNeed(1, 'monotonic-reads')).toEqual({ need: [9, 3], epochs: [1, 1] })
    expect(s.readNeed(1, 'read-your-writes')).toEqual({ need: [7, 0], epochs: [1, 0] })
    expect(s.readNeed(1, 'session')).toEqual({ need: [9, 3], epochs: [1, 1] })
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
    expect(s.row(1)).toMatchObject({ epoch: 1, hrm: [9, 3], hwm: [7, 0] })
    expect(s.dtR).toBe(t(120))
    expect(s.dtW).toBe(t(100))
  })

  it('a not-found read records only that the partition was touched', () => {
    const s = new Session(scope)
    s.observeRead(3, { epoch: 1 })
    expect(s.row(3)).toMatchObject({ epoch: 1, hrm: [0, 0], hwm: [0, 0] })
    expect(s.readNeed(3, 'session')).toEqual({ need: [0, 0] })
  })

  it('keeps the epoch of each position, and sends it with the index', () => {
    const s = new Session({ ...scope, regions: 3 })
    s.observeWrite(0, { dc: 0, idx: 1001, ts: t(5), epoch: 2 })
    s.observeRead(0, { dc: 1, idx: 40, ts: t(6), epoch: 1 })
    s.observeRead(0, { dc: 2, idx: 7, ts: t(7) }) // the reply did not say
    expect(s.readNeed(0, 'session')).toEqual({ need: [1001, 40, 7], epochs: [2, 1, 0] })
    expect(s.row(0)).toEqual({
      epoch: 2,
      hrm: [0, 40, 7],
      hwm: [1001, 0, 0],
      hrmEpochs: [0, 1, 0],
      hwmEpochs: [2, 0, 0],
    })
    // A later reply of the same position that knows its epoch fills it in.
    s.observeRead(0, { dc: 2, idx: 7, epoch: 3 })
    expect(s.row(0)!.hrmEpochs).toEqual([0, 1, 3])
  })

  it('a write needs the positions its level follows', () => {
    const s = sample()
    expect(s.writeNeed(1, 'eventual')).toBeUndefined()
    expect(s.writeNeed(1, 'monotonic-writes')).toEqual({ need: [7, 0], epochs: [1, 0] })
    expect(s.writeNeed(1, 'writes-follow-reads')).toEqual({ need: [9, 3], epochs: [1, 1] })
    expect(s.writeNeed(1, 'session')).toEqual({ need: [9, 3], epochs: [1, 1] })
    expect(s.writeNeed(2, 'session')).toBeUndefined()
  })

  it('rebase lowers the positions a failover lost to what was kept, and only those', () => {
    const s = new Session({ ...scope, regions: 2 })
    s.observeWrite(0, { dc: 0, idx: 60, ts: t(1), epoch: 1 })
    s.observeRead(0, { dc: 0, idx: 59, ts: t(1), epoch: 1 })
    s.observeRead(0, { dc: 1, idx: 12, ts: t(1), epoch: 1 })
    // Region 0's epoch 1 kept 1..58 when its leader changed.
    expect(s.rebase(0, [{ region: 0, epoch: 1, idx: 60, kept: 58, keptEpoch: 1 }])).toBe(true)
    expect(s.row(0)).toMatchObject({ hrm: [58, 12], hwm: [58, 0], hrmEpochs: [1, 1] })
    expect(s.rebase(0, [{ region: 0, epoch: 1, idx: 60, kept: 58, keptEpoch: 1 }])).toBe(false)
    expect(s.rebase(3, [{ region: 0, epoch: 1, idx: 60, kept: 58, keptEpoch: 1 }])).toBe(false)
    // Nothing kept at all: the position goes.
    s.rebase(0, [{ region: 1, epoch: 1, idx: 12, kept: 0, keptEpoch: 0 }])
    expect(s.row(0)).toMatchObject({ hrm: [58, 0], hrmEpochs: [1, 0] })
  })

  it('restores a version 1 session with its positions, their epochs unknown', () => {
    const v1 = {
      v: 1,
      cluster: 'c1',
      regions: 2,
      partitions: 4,
      dtR: t(3),
      dtW: t(2),
      p: { '1': { e: 2, r: [4, 0], w: [0, 9] } },
    }
    const s = Session.fromJSON(v1, scope)
    expect(s.row(1)).toMatchObject({
      hrm: [4, 0],
      hwm: [0, 9],
      hrmEpochs: [0, 0],
      hwmEpochs: [0, 0],
    })
    expect(s.toJSON().v).toBe(2)
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

  it('merge keeps the later position of each origin, with its epoch', () => {
    const a = new Session(scope)
    a.observeWrite(0, { dc: 0, idx: 50, ts: t(1), epoch: 1 })
    const b = new Session(scope)
    b.observeWrite(0, { dc: 0, idx: 1002, ts: t(2), epoch: 2 })
    b.observeWrite(0, { dc: 1, idx: 3, ts: t(2), epoch: 1 })
    expect(a.merge(b).row(0)).toMatchObject({ epoch: 2, hwm: [1002, 3], hwmEpochs: [2, 1] })
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
    ['unknown version', (j) => ({ ...j, v: 3 })],
    ['empty cluster', (j) => ({ ...j, cluster: '' })],
    ['regions not integer', (j) => ({ ...j, regions: 1.5 })],
    ['partitions zero', (j) => ({ ...j, partitions: 0 })],
    ['dtR malformed', (j) => ({ ...j, dtR: 'ABC' })],
    ['dtW missing', (j) => ({ ...j, dtW: undefined })],
    ['p not object', (j) => ({ ...j, p: [] })],
    [
      'partition out of range',
      (j) => ({ ...j, p: { 9: { r: [0, 0], w: [0, 0], re: [0, 0], we: [0, 0] } } }),
    ],
    [
      'partition not a number',
      (j) => ({ ...j, p: { x: { r: [0, 0], w: [0, 0], re: [0, 0], we: [0, 0] } } }),
    ],
    [
      'row vector too short',
      (j) => ({ ...j, p: { 1: { r: [0], w: [0, 0], re: [0, 0], we: [0, 0] } } }),
    ],
    [
      'negative index',
      (j) => ({ ...j, p: { 1: { r: [0, -1], w: [0, 0], re: [0, 0], we: [0, 0] } } }),
    ],
    ['epochs missing', (j) => ({ ...j, p: { 1: { r: [0, 0], w: [0, 0] } } })],
    [
      'an epoch for index 0',
      (j) => ({ ...j, p: { 1: { r: [0, 0], w: [0, 0], re: [1, 0], we: [0, 0] } } }),
    ],
    [
      'negative epoch',
      (j) => ({ ...j, p: { 1: { r: [2, 0], w: [0, 0], re: [-1, 0], we: [0, 0] } } }),
    ],
    ['v1 epoch zero', (j) => ({ ...j, v: 1, p: { 1: { e: 0, r: [0, 0], w: [0, 0] } } })],
    [
      'string index',
      (j) => ({ ...j, p: { 1: { r: ['1', 0], w: [0, 0], re: [0, 0], we: [0, 0] } } }),
    ],
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
