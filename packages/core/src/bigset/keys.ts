/**
 * The decomposed key layout of a set, sortable bytewise (LevelDB's default comparator, Redis
 * `ZRANGEBYLEX`, IndexedDB binary keys), after `bigset_keys_nulls` of the reference:
 *
 * ```
 * set prefix  namespace ++ esc(utf8(set)) 00 01
 * set-clock   prefix 'c'
 * tombstone   prefix 'd'
 * element     prefix 'e' esc(utf8(element)) 00 01 actor:u32be counter:u64be
 * size        prefix 'n'   (optional: the element count, ASCII decimal, when a backend keeps one)
 * stamp       prefix 'v'   (optional: what reads of the set reflect, in a backend's own format)
 * ```
 *
 * `esc` doubles every 0x00 as `00 FF` and `00 01` ends the string, so an escaped string is never
 * a prefix of another one and bytewise order is the order of the raw bytes: sets never share
 * keys, and element keys sort by element (code point order), then actor, then counter. The
 * clock and the tombstone sort before every element key. Tags other than `c`, `d`, `e`, `n` and
 * `v` are left for backends; the element keys are exactly `[prefix 'e', prefix 'f')`.
 */
import { CausewayError } from '../errors.js'
import { isActor, isCounter, type Dot } from './dot.js'

const TAG_CLOCK = 0x63 // 'c'
const TAG_TOMBSTONE = 0x64 // 'd'
const TAG_ELEMENT = 0x65 // 'e'
const TAG_AFTER_ELEMENTS = 0x66 // 'f'
const TAG_SIZE = 0x6e // 'n'
const TAG_STAMP = 0x76 // 'v'
const ESCAPE = 0xff
const TERMINATOR = 0x01
const DOT_BYTES = 12

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** What a key of a set is. */
export type BigsetKeyKind = 'clock' | 'tombstone' | 'element' | 'size' | 'stamp' | 'other'

/** An element key, decoded. */
export interface ElementKey {
  readonly element: string
  readonly dot: Dot
}

/**
 * The prefix of every key of set `set`: `namespace` followed by the escaped set name. Different
 * set names give prefixes of which none is a prefix of another. The namespace is used as raw
 * bytes, so two namespaces in one store must not be prefixes of each other (end them with a
 * separator such as `/`).
 * @param namespace raw leading bytes (a string is taken as its UTF-8). @default ''
 */
export function setKeyPrefix(set: string, namespace: string | Uint8Array = ''): Uint8Array {
  const ns = typeof namespace === 'string' ? encoder.encode(namespace) : namespace
  return concat(ns, escapeTerminated(encoder.encode(set)))
}

/**
 * The name of the set whose key `key` is, in `namespace` (see {@link setKeyPrefix}), or
 * `undefined` when `key` is not under `namespace` or holds no terminated set name. A walk over
 * a namespace finds its sets this way: the next set starts at `BigsetKeys.forSet(name).setEnd`.
 * @throws `INTERNAL` when the name is not escaped UTF-8 (a key this codec did not write).
 */
export function setNameOfKey(
  key: Uint8Array,
  namespace: string | Uint8Array = '',
): string | undefined {
  const ns = typeof namespace === 'string' ? encoder.encode(namespace) : namespace
  if (!hasPrefix(key, ns)) return undefined
  // Inside an escaped name a 00 is always followed by FF, so the first 00 01 ends it.
  for (let i = ns.length; i + 1 < key.length; i++) {
    if (key[i] !== 0) continue
    if (key[i + 1] === TERMINATOR) return decodeEscaped(key.subarray(ns.length, i))
    i++ // 00 FF: an escaped zero
  }
  return undefined
}

/** Compares byte strings as LevelDB's default comparator and Redis lex ranges do. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!
    if (d !== 0) return d
  }
  return a.length - b.length
}

/** The keys of one set, under one prefix (see {@link setKeyPrefix}). */
export class BigsetKeys {
  /** The prefix every key of this set starts with. */
  readonly prefix: Uint8Array
  /** The set-clock key. */
  readonly clock: Uint8Array
  /** The set-tombstone key. */
  readonly tombstone: Uint8Array
  /** The element-count key, for backends that keep an exact count. */
  readonly size: Uint8Array
  /** The stamp key, for backends that keep what reads of the set reflect under it. */
  readonly stamp: Uint8Array
  /** The first possible element key (inclusive bound). */
  readonly elementsStart: Uint8Array
  /** Just past the last possible element key (exclusive bound). */
  readonly elementsEnd: Uint8Array
  /** Just past the last key of the set (exclusive bound): `[prefix, setEnd)` is the whole set. */
  readonly setEnd: Uint8Array

  constructor(prefix: Uint8Array) {
    this.prefix = prefix
    this.clock = concat(prefix, [TAG_CLOCK])
    this.tombstone = concat(prefix, [TAG_TOMBSTONE])
    this.size = concat(prefix, [TAG_SIZE])
    this.stamp = concat(prefix, [TAG_STAMP])
    this.elementsStart = concat(prefix, [TAG_ELEMENT])
    this.elementsEnd = concat(prefix, [TAG_AFTER_ELEMENTS])
    this.setEnd = concat(prefix, [0xff])
  }

  /** The keys of set `set` in `namespace` (see {@link setKeyPrefix}). */
  static forSet(set: string, namespace: string | Uint8Array = ''): BigsetKeys {
    return new BigsetKeys(setKeyPrefix(set, namespace))
  }

  /** The key of one insertion of `element`. */
  element(element: string, d: Dot): Uint8Array {
    if (!isActor(d.actor) || !isCounter(d.counter))
      throw new RangeError(`dot out of range: ${d.actor}.${d.counter}`)
    const key = this.#elementKey(element, DOT_BYTES)
    const at = key.length - DOT_BYTES
    writeU32(key, at, d.actor)
    writeU32(key, at + 4, Math.floor(d.counter / 0x1_0000_0000))
    writeU32(key, at + 8, d.counter % 0x1_0000_0000)
    return key
  }

  /** The first key of `element` (inclusive bound): its keys are `[elementStart, elementEnd)`. */
  elementStart(element: string): Uint8Array {
    return this.#elementKey(element, 0)
  }

  // `elementStart` followed by `spare` zero bytes. Most elements are ASCII without NUL: their
  // escaped UTF-8 is their code units, written straight into the key instead of encoding,
  // escaping and concatenating (every write of an element takes this path).
  #elementKey(element: string, spare: number): Uint8Array {
    const base = this.elementsStart
    const out = new Uint8Array(base.length + element.length + 2 + spare)
    out.set(base)
    let at = base.length
    for (let i = 0; i < element.length; i++) {
      const c = element.charCodeAt(i)
      if (c === 0 || c > 0x7f) return this.#encodedElementKey(element, spare)
      out[at++] = c
    }
    out[at++] = 0
    out[at] = TERMINATOR
    return out
  }

  #encodedElementKey(element: string, spare: number): Uint8Array {
    const escaped = escapeTerminated(encoder.encode(element))
    const out = new Uint8Array(this.elementsStart.length + escaped.length + spare)
    out.set(this.elementsStart)
    out.set(escaped, this.elementsStart.length)
    return out
  }

  /** Just past the last key of `element` (exclusive bound). */
  elementEnd(element: string): Uint8Array {
    const key = this.elementStart(element)
    key[key.length - 1] = TERMINATOR + 1
    return key
  }

  /** The range of `element`'s keys, `[elementStart, elementEnd)`, encoding the element once. */
  elementRange(element: string): { readonly gte: Uint8Array; readonly lt: Uint8Array } {
    const gte = this.elementStart(element)
    const lt = gte.slice()
    lt[lt.length - 1] = TERMINATOR + 1
    return { gte, lt }
  }

  /** What kind of key of this set `key` is, or `undefined` when it is not under this prefix. */
  kindOf(key: Uint8Array): BigsetKeyKind | undefined {
    if (key.length <= this.prefix.length || !hasPrefix(key, this.prefix)) return undefined
    const tag = key[this.prefix.length]
    if (key.length === this.prefix.length + 1) {
      if (tag === TAG_CLOCK) return 'clock'
      if (tag === TAG_TOMBSTONE) return 'tombstone'
      if (tag === TAG_SIZE) return 'size'
      if (tag === TAG_STAMP) return 'stamp'
    }
    return tag === TAG_ELEMENT ? 'element' : 'other'
  }

  /** Decodes an element key of this set; throws `INTERNAL` on a key it did not encode. */
  decodeElement(key: Uint8Array): ElementKey {
    const start = this.elementsStart.length
    if (key.length < start + 2 + DOT_BYTES || !hasPrefix(key, this.elementsStart)) {
      throw badKey('not an element key of this set')
    }
    const end = key.length - DOT_BYTES
    if (key[end - 2] !== 0 || key[end - 1] !== TERMINATOR) throw badKey('element not terminated')
    const element = decodeEscaped(key.subarray(start, end - 2))
    const view = new DataView(key.buffer, key.byteOffset, key.byteLength)
    const actor = view.getUint32(end)
    const counter = view.getUint32(end + 4) * 0x1_0000_0000 + view.getUint32(end + 8)
    if (!isCounter(counter)) throw badKey('dot counter out of range')
    return { element, dot: { actor, counter } }
  }
}

function escapeTerminated(bytes: Uint8Array): Uint8Array {
  let zeros = 0
  for (const b of bytes) if (b === 0) zeros++
  const out = new Uint8Array(bytes.length + zeros + 2)
  let at = 0
  for (const b of bytes) {
    out[at++] = b
    if (b === 0) out[at++] = ESCAPE
  }
  out[at++] = 0
  out[at] = TERMINATOR
  return out
}

// Unescapes the body of an escaped string (without its terminator).
function decodeEscaped(body: Uint8Array): string {
  let raw = body
  if (body.includes(0)) {
    const out = new Uint8Array(body.length)
    let n = 0
    for (let i = 0; i < body.length; i++) {
      const b = body[i]!
      out[n++] = b
      if (b === 0) {
        if (body[i + 1] !== ESCAPE) throw badKey('bad escape in element')
        i++
      }
    }
    raw = out.subarray(0, n)
  }
  try {
    return decoder.decode(raw)
  } catch {
    throw badKey('element is not UTF-8')
  }
}

function badKey(why: string): CausewayError {
  return new CausewayError('INTERNAL', `corrupt bigset key: ${why}`)
}

function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.length < prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false
  return true
}

function writeU32(out: Uint8Array, at: number, value: number): void {
  out[at] = value >>> 24
  out[at + 1] = (value >>> 16) & 0xff
  out[at + 2] = (value >>> 8) & 0xff
  out[at + 3] = value & 0xff
}

function concat(a: Uint8Array, b: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
