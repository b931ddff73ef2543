import { describe, expect, it } from 'vitest'
import {
  CausewayError,
  HLC_ZERO,
  Session,
  checkLabelEnvelope,
  clockCovers,
  formatClock,
  hlcFrom,
  isCausalLevel,
  label,
  labelEnvelope,
  parseClock,
} from '../src/index.js'

const NOW = 1_700_000_000_000
const t = (ms: number, c = 0) => hlcFrom(NOW + ms, c)
const scope = { cluster: 'c1', regions: 3, partitions: 4 }

function code(call: () => unknown): string | undefined {
  try {
    call()
  } catch (error) {
    return error instanceof CausewayError ? error.code : String(error)
  }
  return undefined
}

describe('vector clocks (causeway-clock)', () => {
  it('round-trips, with 0 for regions the session has seen nothing of', () => {
    const clock = [t(5), HLC_ZERO, t(7, 2)]
    const header = formatClock(clock)!
    expect(header).toBe(`${t(5)},0,${t(7, 2)}`)
    expect(parseClock(header, 3)).toEqual(clock)
    expect(formatClock([HLC_ZERO, HLC_ZERO])).toBeUndefined()
  })

  it('refuses a clock of the wrong length or with a bad entry', () => {
    expect(code(() => parseClock(`${t(1)},0`, 3))).toBe('INVALID_VECTOR')
    expect(code(() => parseClock(`0,0,0,0`, 3))).toBe('INVALID_VECTOR')
    expect(code(() => parseClock('', 1))).toBe('INVALID_VECTOR')
    expect(code(() => parseClock('0,xyz,0', 3))).toBe('INVALID_HLC')
    expect(code(() => parseClock('0,00000000000000000,0', 3))).toBe('INVALID_HLC')
  })

  it('is covered entry by entry, but for the region that serves', () => {
    const site = [HLC_ZERO, t(10), t(10)]
    expect(clockCovers(site, [t(99), t(10), t(5)], 0)).toBe(true)
    expect(clockCovers(site, [t(99), t(11), t(5)], 0)).toBe(false)
    expect(clockCovers(site, [t(99), t(10), t(5)], 1)).toBe(false)
  })
})

describe('the session of a causal cluster', () => {
  it('keeps a vector clock, saved and restored, and merged', () => {
    const s = new Session(scope)
    expect(s.toJSON().vc).toBeUndefined()
    s.observeClock(1, t(20))
    s.observeClock(1, t(10))
    s.observeClock(0, t(5))
    expect(s.clock()).toEqual([t(5), t(20), HLC_ZERO])
    const restored = Session.fromJSON(JSON.stringify(s), scope)
    expect(restored.clock()).toEqual(s.clock())
    const other = new Session(scope)
    other.observeClock(2, t(30))
    other.observeClock(1, t(15))
    expect(restored.merge(other).clock()).toEqual([t(5), t(20), t(30)])
  })

  it('makes a causal write depend on its whole clock', () => {
    const s = new Session(scope)
    s.observeWrite(0, { dc: 0, idx: 1, ts: t(5), epoch: 1 })
    s.observeClock(2, t(40))
    expect(s.writeDependency('session')).toBe(t(5))
    expect(s.writeDependency('causal')).toBe(t(40))
    expect(isCausalLevel('causal')).toBe(true)
    expect(s.readNeed(0, 'causal')).toEqual(s.readNeed(0, 'session'))
  })

  it('refuses a saved clock of the wrong shape', () => {
    const json = { ...new Session(scope).toJSON(), vc: [t(1), t(2)] }
    expect(code(() => Session.fromJSON(json))).toBe('INVALID_SESSION')
    expect(code(() => Session.fromJSON({ ...json, vc: [t(1), 'no', t(3)] }))).toBe(
      'INVALID_SESSION',
    )
  })
})

describe('label envelopes', () => {
  const to = 1
  const labelScope = { regions: 3, partitions: 4, nowMs: NOW }
  const ok = labelEnvelope(0, t(30), [
    label(2, 7, [t(10), HLC_ZERO, t(3)]),
    label(0, 1, [t(10), HLC_ZERO, HLC_ZERO]),
  ])

  it('takes labels in stream order and freezes them', () => {
    const fine = labelEnvelope(0, t(30), [
      label(0, 1, [t(10), HLC_ZERO, HLC_ZERO]),
      label(2, 7, [t(10), HLC_ZERO, t(3)]),
      label(0, 2, [t(12), HLC_ZERO, HLC_ZERO]),
    ])
    const checked = checkLabelEnvelope(JSON.parse(JSON.stringify(fine)), to, labelScope)
    expect(checked).toEqual(fine)
    expect(Object.isFrozen(checked.labels[0])).toBe(true)
  })

  it('refuses bad envelopes with stable codes', () => {
    const json = (patch: object) => ({ ...JSON.parse(JSON.stringify(ok)), ...patch })
    const one = (l: object) => json({ labels: [l] })
    // Out of (timestamp, partition) order.
    expect(code(() => checkLabelEnvelope(json({}), to, labelScope))).toBe('INVALID_LABEL')
    // A partition the cluster does not have.
    expect(
      code(() =>
        checkLabelEnvelope(
          one({ p: 4, idx: 1, vts: [t(1), '0000000000000000', '0000000000000000'] }),
          to,
          labelScope,
        ),
      ),
    ).toBe('INVALID_LABEL')
    // A vector of the wrong length.
    expect(
      code(() => checkLabelEnvelope(one({ p: 0, idx: 1, vts: [t(1), t(1)] }), to, labelScope)),
    ).toBe('INVALID_VECTOR')
    // A time far in the future.
    expect(
      code(() =>
        checkLabelEnvelope(
          one({ p: 0, idx: 1, vts: [t(86_400_000), HLC_ZERO, HLC_ZERO] }),
          to,
          labelScope,
        ),
      ),
    ).toBe('CLOCK_SKEW_EXCEEDED')
    expect(
      code(() => checkLabelEnvelope(json({ labels: [], stable: t(86_400_000) }), to, labelScope)),
    ).toBe('CLOCK_SKEW_EXCEEDED')
    // Not consecutive within a partition.
    expect(
      code(() =>
        checkLabelEnvelope(
          json({
            labels: [
              { p: 0, idx: 1, vts: [t(1), HLC_ZERO, HLC_ZERO] },
              { p: 0, idx: 3, vts: [t(2), HLC_ZERO, HLC_ZERO] },
            ],
          }),
          to,
          labelScope,
        ),
      ),
    ).toBe('INVALID_LABEL')
    // Its own region's, or a version this one does not read.
    expect(code(() => checkLabelEnvelope(json({ from: 1 }), to, labelScope))).toBe('INVALID_LABEL')
    expect(code(() => checkLabelEnvelope(json({ v: 2 }), to, labelScope))).toBe(
      'UNSUPPORTED_LOG_FORMAT',
    )
    expect(code(() => checkLabelEnvelope(json({ stable: 'soon' }), to, labelScope))).toBe(
      'INVALID_HLC',
    )
    expect(code(() => checkLabelEnvelope([], to, labelScope))).toBe('INVALID_LABEL')
  })
})
