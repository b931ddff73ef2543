import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  INITIAL_HISTORY,
  type EpochHistory,
  checkHistory,
  currentEpoch,
  decodeHistory,
  encodeHistory,
  epochAt,
  historyExtends,
  historyFromWire,
  historyToWire,
  lastKeptBefore,
  lostRanges,
  nextEpoch,
  positionState,
} from '../src/epoch-history.js'

// Region 0's partition: epoch 1 kept 1..58 (its leader acknowledged up to 60 and died), the new
// leader started epoch 2 above the 1000 indexes reserved, then another failover kept 1001..1010
// and started epoch 4 at 2001.
const failedOver: EpochHistory = checkHistory([
  { epoch: 1, first: 1, last: 58 },
  { epoch: 2, first: 1001, last: 1010 },
  { epoch: 4, first: 2001 },
])

describe('epoch histories', () => {
  it('start at epoch 1 from index 1, keeping everything', () => {
    expect(currentEpoch(INITIAL_HISTORY)).toBe(1)
    expect(positionState(INITIAL_HISTORY, 1, 1_000_000)).toBe('kept')
    expect(positionState(INITIAL_HISTORY, undefined, 5)).toBe('kept')
    expect(lostRanges(INITIAL_HISTORY)).toEqual([])
  })

  it('say which positions a failover lost', () => {
    expect(positionState(failedOver, 1, 58)).toBe('kept')
    expect(positionState(failedOver, 1, 59)).toBe('lost') // acknowledged, then lost
    expect(positionState(failedOver, 1, 60)).toBe('lost')
    expect(positionState(failedOver, 2, 1005)).toBe('kept')
    expect(positionState(failedOver, 2, 1011)).toBe('lost')
    expect(positionState(failedOver, 4, 2500)).toBe('kept') // not written yet: waited for
    expect(positionState(failedOver, 3, 1500)).toBe('lost') // an epoch this history skipped
    expect(positionState(failedOver, 5, 3000)).toBe('unknown') // newer than this history
    // A position whose epoch is not known is judged by its index alone.
    expect(positionState(failedOver, undefined, 58)).toBe('kept')
    expect(positionState(failedOver, 0, 700)).toBe('lost')
    expect(positionState(failedOver, 0, 2002)).toBe('kept')
    // The same index in another epoch is another write.
    expect(positionState(failedOver, 1, 1005)).toBe('lost')
    expect(positionState(failedOver, 2, 58)).toBe('lost')
    expect(lostRanges(failedOver)).toEqual([
      { epoch: 1, from: 59, to: 1000 },
      { epoch: 2, from: 1011, to: 2000 },
    ])
  })

  it('find the last kept index below a new epoch, and the epoch of an index', () => {
    expect(lastKeptBefore(failedOver, 1001)).toBe(58)
    expect(lastKeptBefore(failedOver, 2001)).toBe(1010)
    expect(lastKeptBefore(failedOver, 1005)).toBe(1004)
    expect(lastKeptBefore(failedOver, 1)).toBe(0)
    expect(lastKeptBefore(INITIAL_HISTORY, 31)).toBe(30)
    expect(epochAt(failedOver, 58)).toBe(1)
    expect(epochAt(failedOver, 900)).toBe(1)
    expect(epochAt(failedOver, 2001)).toBe(4)
    // An epoch that kept nothing: the index range goes to the next one.
    const empty = checkHistory([
      { epoch: 1, first: 1, last: 10 },
      { epoch: 2, first: 1001, last: 1000 },
      { epoch: 3, first: 1001 },
    ])
    expect(lastKeptBefore(empty, 1001)).toBe(10)
    expect(epochAt(empty, 1001)).toBe(3)
    expect(positionState(empty, 2, 1001)).toBe('lost')
  })

  it('a new epoch ends the current one at what the new leader holds', () => {
    const h = nextEpoch(INITIAL_HISTORY, 58, 2, 1001)
    expect(h).toEqual([
      { epoch: 1, first: 1, last: 58 },
      { epoch: 2, first: 1001 },
    ])
    expect(nextEpoch(h, 1000, 3, 2001)[1]).toEqual({ epoch: 2, first: 1001, last: 1000 })
  })

  it('extend an older view only by ending its current epoch and adding newer ones', () => {
    const before = checkHistory([{ epoch: 1, first: 1 }])
    expect(historyExtends(before, failedOver)).toBe(true)
    expect(historyExtends(failedOver, failedOver)).toBe(true)
    expect(historyExtends(failedOver, before)).toBe(false) // a sender that forgot epochs
    const otherEnd = checkHistory([
      { epoch: 1, first: 1, last: 57 },
      { epoch: 2, first: 1001, last: 1010 },
      { epoch: 4, first: 2001 },
    ])
    expect(historyExtends(failedOver, otherEnd)).toBe(false)
    const otherStart = checkHistory([
      { epoch: 1, first: 1, last: 58 },
      { epoch: 2, first: 999 },
    ])
    expect(
      historyExtends(
        checkHistory(failedOver.slice(0, 1).concat([{ epoch: 2, first: 1001 }])),
        otherStart,
      ),
    ).toBe(false)
  })

  it('encode as text and JSON and back; anything malformed is INVALID_REQUEST', () => {
    expect(encodeHistory(failedOver)).toBe('1:1:58;2:1001:1010;4:2001')
    expect(decodeHistory('1:1:58;2:1001:1010;4:2001')).toEqual(failedOver)
    expect(historyToWire(failedOver)).toEqual([
      [1, 1, 58],
      [2, 1001, 1010],
      [4, 2001],
    ])
    expect(historyFromWire(historyToWire(failedOver))).toEqual(failedOver)
    for (const bad of [
      '',
      '1',
      '1:1:3',
      '2:1;1:5',
      '1:1:9;2:5',
      '1:5:3;2:6',
      '1:1;2:5',
      'a:1',
      '1:01',
    ])
      expect(() => decodeHistory(bad), bad).toThrow(
        expect.objectContaining({ code: 'INVALID_REQUEST' }),
      )
    for (const bad of [[], [[1]], [[1, 1, 2, 3]], 'x', [[0, 1]], [[1, 0]]])
      expect(() => historyFromWire(bad), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_REQUEST' }),
      )
  })

  it('later histories extend earlier ones, and a position lost stays lost (property)', () => {
    // Random failovers: each keeps some of what was written and starts above a reservation.
    const step = fc.record({
      written: fc.nat(50),
      kept: fc.nat(50),
      skip: fc.nat(3),
      gap: fc.nat(100),
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 6 }), (steps) => {
        let history = INITIAL_HISTORY
        let next = 1
        const histories = [history]
        for (const s of steps) {
          const span = history[history.length - 1]!
          const last = span.first - 1 + Math.min(s.kept, s.written)
          const epoch = span.epoch + 1 + s.skip
          next = Math.max(span.first + s.written, last + 1) + s.gap
          history = nextEpoch(history, last, epoch, next)
          histories.push(history)
        }
        for (let i = 0; i < histories.length; i++) {
          for (let j = i; j < histories.length; j++)
            expect(historyExtends(histories[i]!, histories[j]!)).toBe(true)
          for (let idx = 1; idx < next + 3; idx += 7) {
            const e = epochAt(histories[i]!, idx)!
            if (positionState(histories[i]!, e, idx) === 'lost')
              expect(positionState(histories.at(-1)!, e, idx)).toBe('lost')
          }
        }
        expect(decodeHistory(encodeHistory(history))).toEqual(history)
      }),
    )
  })
})
