/**
 * The stabiliser's state (Eunomia Algorithm 3): stable time is the minimum partition time, labels
 * come out in (timestamp, partition) order, only once stable, and bad input is refused with its
 * stable code while everything taken before stays as it was.
 */
import { CausewayError, HLC_ZERO, type Hlc, hlcFrom, label, type Label } from '@causeway/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Stabiliser } from '../../../src/replication/causal/stabiliser.js'

const NOW = 1_700_000_000_000
const t = (ms: number, c = 0): Hlc => hlcFrom(NOW + ms, c)

function stabiliser(partitions = 3): Stabiliser {
  return new Stabiliser({ origin: 0, regions: 2, partitions, now: () => NOW })
}

/** Label `idx` of partition `p` stamped `ts`, of region 0 of a two-region cluster. */
const l = (p: number, idx: number, ts: Hlc): Label => label(p, idx, [ts, HLC_ZERO])

function codeOf(call: () => unknown): string | undefined {
  try {
    call()
  } catch (error) {
    return error instanceof CausewayError ? error.code : `not a CausewayError: ${String(error)}`
  }
  return undefined
}

describe('Stabiliser (Algorithm 3)', () => {
  it('ships nothing until every partition has reported past it', () => {
    const s = stabiliser()
    s.addLabels(0, [l(0, 1, t(10)), l(0, 2, t(20))])
    s.addLabels(1, [l(1, 1, t(15))])
    expect(s.stableTime()).toBe(HLC_ZERO) // partition 2 has said nothing
    expect(s.stabilise()).toBe(0)
    s.heartbeat(2, t(17), 0)
    expect(s.stableTime()).toBe(t(15))
    expect(s.stabilise()).toBe(2)
    expect(s.slice(0, 10).map((x) => [x.p, x.idx])).toEqual([
      [0, 1],
      [1, 1],
    ])
    // Label 0:2 at 20 waits for partitions 1 and 2 to pass 20.
    s.heartbeat(1, t(25), 1)
    s.heartbeat(2, t(30), 0)
    expect(s.stabilise()).toBe(1)
    expect(s.slice(0, 10).map((x) => [x.p, x.idx])).toEqual([
      [0, 1],
      [1, 1],
      [0, 2],
    ])
    expect(s.endSeq()).toBe(3)
  })

  it('orders ties by partition', () => {
    const s = stabiliser(3)
    s.addLabels(2, [l(2, 1, t(5))])
    s.addLabels(0, [l(0, 1, t(5))])
    s.addLabels(1, [l(1, 1, t(5))])
    expect(s.stabilise()).toBe(3)
    expect(s.slice(0, 3).map((x) => x.p)).toEqual([0, 1, 2])
  })

  it('drops labels it has, and trims what every region applied', () => {
    const s = stabiliser(2)
    s.addLabels(0, [l(0, 1, t(1)), l(0, 2, t(2))])
    expect(s.addLabels(0, [l(0, 1, t(1)), l(0, 2, t(2)), l(0, 3, t(3))])).toBe(1)
    s.heartbeat(1, t(10), 0)
    s.stabilise()
    expect(s.counts()).toEqual({ pending: 0, retained: 3, ordered: 3 })
    expect(s.seqAfter([1, 0])).toBe(1)
    expect(s.trim([2, 0])).toBe(2)
    expect(s.firstSeq()).toBe(2)
    expect(s.slice(0, 10).map((x) => x.idx)).toEqual([3])
    // A destination that lacks label 0:2, which is gone, cannot be served from here.
    expect(s.seqAfter([1, 0])).toBeUndefined()
    expect(s.seqAfter([2, 0])).toBe(2)
  })

  it('refuses bad input with stable codes and keeps running', () => {
    const s = stabiliser(2)
    s.addLabels(0, [l(0, 1, t(1))])
    // A label or heartbeat from a partition the region does not have.
    expect(codeOf(() => s.addLabels(7, [l(7, 1, t(2))]))).toBe('INVALID_LABEL')
    expect(codeOf(() => s.heartbeat(-1, t(2), 0))).toBe('INVALID_LABEL')
    expect(codeOf(() => s.heartbeat(2, t(2), 0))).toBe('INVALID_LABEL')
    // A vector timestamp of the wrong length.
    expect(codeOf(() => s.addLabels(0, [label(0, 2, [t(2)])]))).toBe('INVALID_VECTOR')
    expect(codeOf(() => s.addLabels(0, [label(0, 2, [t(2), HLC_ZERO, HLC_ZERO])]))).toBe(
      'INVALID_VECTOR',
    )
    // A timestamp far in the future (a day ahead).
    expect(codeOf(() => s.addLabels(0, [l(0, 2, t(86_400_000))]))).toBe('CLOCK_SKEW_EXCEEDED')
    expect(codeOf(() => s.heartbeat(1, t(86_400_000), 0))).toBe('CLOCK_SKEW_EXCEEDED')
    // Out of order: a gap, a time that does not grow, a heartbeat ahead of its labels.
    expect(codeOf(() => s.addLabels(0, [l(0, 3, t(3))]))).toBe('INVALID_LABEL')
    expect(codeOf(() => s.addLabels(0, [l(0, 2, t(1))]))).toBe('INVALID_LABEL')
    expect(codeOf(() => s.heartbeat(0, t(5), 2))).toBe('INVALID_LABEL')
    expect(codeOf(() => s.heartbeat(0, t(1), 1))).toBe('INVALID_LABEL')
    // A batch with one bad label takes none of it.
    expect(codeOf(() => s.addLabels(0, [l(0, 2, t(2)), label(0, 3, [t(3)])]))).toBe(
      'INVALID_VECTOR',
    )
    expect(s.top(0)).toBe(1)
    // ... and the stabiliser goes on.
    s.addLabels(0, [l(0, 2, t(2))])
    s.heartbeat(1, t(9), 0)
    expect(s.stabilise()).toBe(2)
    expect(s.slice(0, 5).map((x) => x.idx)).toEqual([1, 2])
  })

  it('orders any interleaving of arrivals the same way: by time, then partition', () => {
    const partitions = 4
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 12 }), {
          minLength: partitions,
          maxLength: partitions,
        }),
        fc.array(fc.nat({ max: partitions - 1 }), { maxLength: 100 }),
        (gaps, schedule) => {
          // Each partition's labels: strictly growing times (gaps of 1..5 ms from 0).
          const labels = gaps.map((list, p) => {
            let ms = 0
            return list.map((gap, i) => l(p, i + 1, t((ms += gap))))
          })
          const s = stabiliser(partitions)
          const fed = new Array<number>(partitions).fill(0)
          const out: Label[] = []
          // Feed in the schedule's order, stabilising after each step.
          for (const p of [...schedule, ...labels.flatMap((_, p) => labels[p]!.map(() => p))]) {
            const next = labels[p]![fed[p]!]
            if (next === undefined) continue
            s.addLabels(p, [next])
            fed[p]!++
            s.stabilise()
          }
          for (let p = 0; p < partitions; p++) s.heartbeat(p, t(1000), labels[p]!.length)
          s.stabilise()
          out.push(...s.slice(0, 10_000))
          const expected = labels
            .flat()
            .sort((a, b) => (a.vts[0]! < b.vts[0]! ? -1 : a.vts[0]! > b.vts[0]! ? 1 : a.p - b.p))
          expect(out).toEqual(expected)
        },
      ),
      { numRuns: 200 },
    )
  })
})
