import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { CausewayError } from '../src/errors.js'
import { covers, formatReadNeed, maxInto, parseReadNeed, vectorToObject } from '../src/vector.js'

describe('read vectors on the wire', () => {
  it('formats only non-zero entries, each with its epoch when known', () => {
    expect(formatReadNeed({ need: [12, 0, 7], epochs: [2, 0, 0] })).toBe('0:12@2,2:7')
    expect(formatReadNeed({ need: [0, 3] })).toBe('1:3')
    expect(formatReadNeed({ need: [0, 0], epochs: [1, 1] })).toBeUndefined()
    // The older form's partition epoch is not sent.
    expect(formatReadNeed({ epoch: 1, need: [12, 0, 7] })).toBe('0:12,2:7')
  })

  it('parses both forms: per-position epochs, and the older partition epoch', () => {
    expect(parseReadNeed('0:12@2,2:7', 3)).toEqual({ need: [12, 0, 7], epochs: [2, 0, 0] })
    expect(parseReadNeed('1@0:12,2:7', 3)).toEqual({ epoch: 1, need: [12, 0, 7] })
    expect(parseReadNeed('1@0:12@3', 3)).toEqual({ epoch: 1, need: [12, 0, 0], epochs: [3, 0, 0] })
    // An entry that needs nothing carries no epoch.
    expect(parseReadNeed('0:0@4,1:2', 2)).toEqual({ need: [0, 2] })
  })

  it('round-trips (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 8 })
          .chain((d) =>
            fc.tuple(
              fc.constant(d),
              fc.array(fc.nat({ max: 2 ** 40 }), { minLength: d, maxLength: d }),
              fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: d, maxLength: d }),
            ),
          ),
        ([d, need, known]) => {
          const epochs = known.map((e, i) => (need[i]! > 0 && e % 2 === 0 ? e : 0))
          const header = formatReadNeed({ need, epochs })
          // Returned values decide a fast-check property: assert, return nothing.
          if (header === undefined) expect(need.every((x) => x === 0)).toBe(true)
          else
            expect(parseReadNeed(header, d)).toEqual(
              epochs.some((e) => e > 0) ? { need, epochs } : { need },
            )
        },
      ),
    )
  })

  it.each([
    ['', 'no entries'],
    ['1@', 'no entries'],
    ['0@0:1', 'epoch'],
    ['x@0:1', 'epoch'],
    ['0:1@0', 'epoch'],
    ['0:1@x', 'epoch'],
    ['0:1@1@2', 'epoch'],
    ['0:1,0:2', 'twice'],
    ['5:1', 'does not exist'],
    ['0:-1', 'idx'],
    ['0:1.5', 'idx'],
    ['0:01', 'idx'],
    ['0:99999999999999999', 'idx'],
    ['0=1', 'region:idx'],
    ['0:1,', 'region:idx'],
    ['0:1;1:2', 'idx'],
    ['0:1'.padEnd(3000, '0'), 'too long'],
  ])('rejects %j with INVALID_VECTOR', (header, why) => {
    try {
      parseReadNeed(header, 2)
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(CausewayError)
      expect((e as CausewayError).code).toBe('INVALID_VECTOR')
      expect((e as CausewayError).status).toBe(400)
      expect((e as Error).message).toContain(why)
    }
  })

  it('covers() is the elementwise comparison of Algorithm 2 line 2', () => {
    expect(covers([3, 5], [3, 5])).toBe(true)
    expect(covers([3, 5], [0, 0])).toBe(true)
    expect(covers([3, 5], [4, 0])).toBe(false)
    expect(covers([3, 5], [0, 6])).toBe(false)
    expect(maxInto([1, 9], [4, 2])).toEqual([4, 9])
    expect(vectorToObject([4, 2])).toEqual({ 0: 4, 1: 2 })
  })
})
