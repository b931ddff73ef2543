import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { lowerBound, upperBound } from '../../src/bigset/sorted-search.js'

describe('lowerBound / upperBound', () => {
  it('find the first index >= and > a value, on numbers and strings', () => {
    expect(lowerBound([1, 3, 3, 5], 3)).toBe(1)
    expect(upperBound([1, 3, 3, 5], 3)).toBe(3)
    expect(lowerBound([1, 3], 9)).toBe(2)
    expect(upperBound([], 'a')).toBe(0)
    expect(lowerBound(['a', 'b\u0000', 'b\u00ff'], 'b\u0001')).toBe(2)
  })

  it('agree with a linear scan (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -50, max: 50 })), fc.integer(), (xs, v) => {
        const sorted = [...xs].sort((a, b) => a - b)
        const first = sorted.findIndex((x) => x >= v)
        const after = sorted.findIndex((x) => x > v)
        expect(lowerBound(sorted, v)).toBe(first === -1 ? sorted.length : first)
        expect(upperBound(sorted, v)).toBe(after === -1 ? sorted.length : after)
      }),
    )
  })
})
