/**
 * Set elements: UTF-8 strings up to 1 KiB, ordered by code point, which is the order of their
 * UTF-8 bytes and so the order in which element keys iterate in LevelDB and Redis lex ranges.
 */
import { CausewayError } from '../errors.js'

/** Longest element, in bytes of UTF-8. */
export const MAX_ELEMENT_BYTES = 1024

const encoder = new TextEncoder()

/**
 * Throws `INVALID_ELEMENT` unless `element` is a usable element: a well-formed string (no lone
 * surrogates, which have no UTF-8 form) of at most `maxBytes` bytes of UTF-8. The empty string
 * is a valid element, as it is a valid Redis set member.
 */
export function checkElement(
  element: unknown,
  maxBytes: number = MAX_ELEMENT_BYTES,
): asserts element is string {
  if (typeof element !== 'string')
    throw new CausewayError('INVALID_ELEMENT', 'a set element must be a string')
  if (!element.isWellFormed()) {
    throw new CausewayError(
      'INVALID_ELEMENT',
      'a set element is not valid Unicode (lone surrogate)',
    )
  }
  // Cheap bound first: UTF-8 uses at most 3 bytes per UTF-16 code unit.
  if (element.length * 3 <= maxBytes) return
  const bytes = encoder.encode(element).length
  if (bytes > maxBytes) {
    throw new CausewayError(
      'INVALID_ELEMENT',
      `a set element is ${bytes} bytes of UTF-8; the limit is ${maxBytes}`,
      {
        bytes,
        limit: maxBytes,
      },
    )
  }
}

/**
 * Orders elements by code point (negative, zero or positive), which is the bytewise order of
 * their UTF-8 and of their keys. Plain `<` on JS strings compares UTF-16 code units and would
 * put U+E000..U+FFFF after astral characters.
 */
export function compareElements(a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

// Moves surrogates (astral characters) above U+E000..U+FFFF, keeping each group's own order.
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit
  return unit <= 0xdfff ? unit + 0x2000 : unit - 0x800
}
