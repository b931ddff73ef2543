import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Dot } from '../../src/bigset/dot.js'
import { checkElement, compareElements, MAX_ELEMENT_BYTES } from '../../src/bigset/element.js'
import { BigsetKeys, compareBytes, setKeyPrefix, setNameOfKey } from '../../src/bigset/keys.js'
import { CausewayError } from '../../src/errors.js'

const utf8 = (s: string) => new TextEncoder().encode(s)
const bytes = (...parts: (string | number[])[]) =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...utf8(p)] : p)))
const sign = (n: number) => Math.sign(n)

// Elements over all of Unicode (astral characters, U+E000..U+FFFF, NUL), up to 1 KiB of UTF-8.
const arbElement = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom('\u0000', 'a', 'b', '\uffff', '\ue000', '😀'),
      fc.string({ unit: 'grapheme', maxLength: 1 }),
    ),
    maxLength: 40,
  })
  .filter((s) => utf8(s).length <= MAX_ELEMENT_BYTES)
const arbDot = fc.record({
  actor: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 0xffff_ffff })),
  counter: fc.oneof(
    fc.integer({ min: 1, max: 300 }),
    fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  ),
})

function compareEntries(
  a: { element: string; dot: Dot },
  b: { element: string; dot: Dot },
): number {
  return (
    compareBytes(utf8(a.element), utf8(b.element)) ||
    a.dot.actor - b.dot.actor ||
    a.dot.counter - b.dot.counter
  )
}

describe('bigset key layout', () => {
  const keys = BigsetKeys.forSet('s', 'ns/')

  it('is namespace, escaped set name, tag, escaped element, big-endian dot', () => {
    expect(keys.prefix).toEqual(bytes('ns/s', [0, 1]))
    expect(keys.clock).toEqual(bytes('ns/s', [0, 1], 'c'))
    expect(keys.tombstone).toEqual(bytes('ns/s', [0, 1], 'd'))
    expect(keys.element('x\u0000y', { actor: 2, counter: 0x1_0000_0003 })).toEqual(
      bytes('ns/s', [0, 1], 'ex', [0, 0xff], 'y', [0, 1], [0, 0, 0, 2], [0, 0, 0, 1, 0, 0, 0, 3]),
    )
    expect(keys.elementsStart).toEqual(bytes('ns/s', [0, 1], 'e'))
    expect(keys.elementsEnd).toEqual(bytes('ns/s', [0, 1], 'f'))
  })

  it('encodes an element start as its escaped UTF-8, ASCII or not (property)', () => {
    // ASCII elements take a path that skips the encoder: it must give the same bytes.
    const escaped = (e: string) => [...utf8(e)].flatMap((b) => (b === 0 ? [0, 0xff] : [b]))
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary-ascii' }), arbElement), (element) => {
        expect(keys.elementStart(element)).toEqual(
          bytes('ns/s', [0, 1], 'e', escaped(element), [0, 1]),
        )
      }),
    )
  })

  it('round-trips element keys (property)', () => {
    fc.assert(
      fc.property(fc.string(), arbElement, arbDot, (set, element, dot) => {
        const k = BigsetKeys.forSet(set, 'bs/')
        const key = k.element(element, dot)
        expect(k.kindOf(key)).toBe('element')
        expect(k.decodeElement(key)).toEqual({ element, dot })
      }),
    )
  })

  it('sorts keys bytewise by element (code point order), then actor, then counter (property)', () => {
    fc.assert(
      fc.property(arbElement, arbDot, arbElement, arbDot, (e1, d1, e2, d2) => {
        const a = { element: e1, dot: d1 }
        const b = { element: e2, dot: d2 }
        expect(sign(compareBytes(keys.element(e1, d1), keys.element(e2, d2)))).toBe(
          sign(compareEntries(a, b)),
        )
        expect(sign(compareElements(e1, e2))).toBe(sign(compareBytes(utf8(e1), utf8(e2))))
      }),
      { numRuns: 500 },
    )
  })

  it('sorts a batch of keys in the same order as their (element, dot) (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ element: arbElement, dot: arbDot }), { maxLength: 40 }),
        (entries) => {
          const byKey = entries
            .map((e) => ({ e, key: keys.element(e.element, e.dot) }))
            .sort((x, y) => compareBytes(x.key, y.key))
            .map((x) => keys.decodeElement(x.key))
          expect(byKey).toEqual([...entries].sort(compareEntries))
        },
      ),
    )
  })

  it('puts the clock before the tombstone before every element key, all inside the set range', () => {
    fc.assert(
      fc.property(arbElement, arbDot, (element, dot) => {
        const key = keys.element(element, dot)
        expect(compareBytes(keys.prefix, keys.clock)).toBeLessThan(0)
        expect(compareBytes(keys.clock, keys.tombstone)).toBeLessThan(0)
        expect(compareBytes(keys.tombstone, keys.elementsStart)).toBeLessThan(0)
        expect(compareBytes(keys.elementsStart, key)).toBeLessThan(0)
        expect(compareBytes(key, keys.elementsEnd)).toBeLessThan(0)
        expect(compareBytes(keys.elementsEnd, keys.setEnd)).toBeLessThan(0)
      }),
    )
  })

  it("keeps an element's keys inside [elementStart, elementEnd) and every other element's outside (property)", () => {
    fc.assert(
      fc.property(arbElement, arbElement, arbDot, (e1, e2, dot) => {
        const key = keys.element(e2, dot)
        const inside =
          compareBytes(keys.elementStart(e1), key) <= 0 &&
          compareBytes(key, keys.elementEnd(e1)) < 0
        expect(inside).toBe(e1 === e2)
      }),
      { numRuns: 500 },
    )
  })

  it('never lets two sets share a key, even when one name is a prefix of the other (property)', () => {
    const arbName = fc.oneof(
      fc.constantFrom('a', 'a\u0000', 'a\u0000\u0001', 'ab', ''),
      fc.string({ maxLength: 6 }),
    )
    fc.assert(
      fc.property(arbName, arbName, arbElement, arbDot, (s1, s2, element, dot) => {
        fc.pre(s1 !== s2)
        const mine = BigsetKeys.forSet(s1, 'ns/')
        const other = BigsetKeys.forSet(s2, 'ns/')
        for (const key of [mine.clock, mine.tombstone, mine.element(element, dot)]) {
          const inOther =
            compareBytes(other.prefix, key) <= 0 && compareBytes(key, other.setEnd) < 0
          expect(inOther).toBe(false)
          expect(other.kindOf(key)).toBeUndefined()
        }
      }),
      { numRuns: 500 },
    )
  })

  it('takes a namespace as raw bytes', () => {
    expect(setKeyPrefix('s', Uint8Array.of(9, 9))).toEqual(bytes([9, 9], 's', [0, 1]))
    expect(setKeyPrefix('s')).toEqual(bytes('s', [0, 1]))
  })

  it('classifies keys and refuses to decode foreign or corrupt ones', () => {
    expect(keys.kindOf(keys.clock)).toBe('clock')
    expect(keys.kindOf(keys.tombstone)).toBe('tombstone')
    expect(keys.kindOf(keys.size)).toBe('size')
    expect(keys.kindOf(keys.stamp)).toBe('stamp')
    expect(keys.kindOf(bytes('ns/s', [0, 1], 'm'))).toBe('other')
    expect(keys.kindOf(bytes('ns/t', [0, 1], 'c'))).toBeUndefined()
    expect(() => keys.decodeElement(keys.clock)).toThrow(CausewayError)
    const key = keys.element('x', { actor: 1, counter: 1 })
    const broken = key.slice()
    broken[keys.elementsStart.length + 1] = 7 // the terminator's 0x00
    expect(() => keys.decodeElement(broken)).toThrow(/corrupt bigset key/)
    expect(() =>
      keys.decodeElement(bytes('ns/s', [0, 1], 'e', [0xc3, 0x28], [0, 1], new Array(12).fill(1))),
    ).toThrow(/UTF-8/)
  })
})

describe('the set of a key', () => {
  it('is found from any key of the set, and only under its namespace (property)', () => {
    const arbName = fc.oneof(fc.string(), fc.constantFrom('', '\u0000', 'a\u0000\u0001', 'é😀'))
    fc.assert(
      fc.property(arbName, arbElement, arbDot, (name, element, dot) => {
        const k = BigsetKeys.forSet(name, 'ns/')
        for (const key of [k.prefix, k.clock, k.tombstone, k.stamp, k.element(element, dot)])
          expect(setNameOfKey(key, 'ns/')).toBe(name)
        expect(setNameOfKey(k.clock, 'nt/')).toBeUndefined()
        // A name cut before its terminator names no set.
        expect(setNameOfKey(k.prefix.subarray(0, k.prefix.length - 1), 'ns/')).toBeUndefined()
      }),
      { numRuns: 300 },
    )
  })

  it('gives the range of one element, as its start and end', () => {
    const keys = BigsetKeys.forSet('s', 'ns/')
    for (const element of ['', 'x', 'é\u0000']) {
      const range = keys.elementRange(element)
      expect(range.gte).toEqual(keys.elementStart(element))
      expect(range.lt).toEqual(keys.elementEnd(element))
    }
    expect(keys.stamp).toEqual(bytes('ns/s', [0, 1], 'v'))
  })
})

describe('set elements', () => {
  it('accepts any well-formed string up to 1 KiB of UTF-8, including the empty string', () => {
    expect(() => checkElement('')).not.toThrow()
    expect(() => checkElement('é'.repeat(512))).not.toThrow()
    expect(() => checkElement('x'.repeat(1024))).not.toThrow()
  })

  it('refuses the rest with INVALID_ELEMENT', () => {
    for (const bad of ['é'.repeat(513), 'x'.repeat(1025), '\ud800', 42, null]) {
      expect(() => checkElement(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_ELEMENT', status: 400 }),
      )
    }
  })

  it('orders astral characters after U+FFFF, as UTF-8 bytes do', () => {
    expect(compareElements('\uffff', '😀')).toBeLessThan(0)
    expect('\uffff' < '😀').toBe(false) // why the codec cannot use JS string order
    expect(compareElements('a', 'ab')).toBeLessThan(0)
    expect(compareElements('b', 'ab')).toBeGreaterThan(0)
  })
})
