/**
 * The wire form of a causal context: the version vector a read of a siblings key returns
 * ({@link DvvSet}`.join`) and a write passes back. It travels as an opaque base64url string
 * (`causeway-context` header and body field) and is decoded strictly, so a malformed, oversized or
 * foreign context is a 400 `INVALID_CONTEXT`, never a crash or a wrong merge.
 *
 * Binary layout (all integers unsigned LEB128 varints, minimal length, at most 2^53 - 1):
 * ```
 * format    1 byte   SIGNED_CONTEXT_FORMAT (0xC2: high nibble C = causal context, low = version 2)
 * count     varint   number of entries
 * entries   count × (actor varint, counter varint), actors strictly ascending,
 *           counters in 1..MAX_SAFE_COUNTER (2^53 - 2, so the leader's next dot stays exact)
 * mac       16 bytes the issuing cluster's MAC of the key and of every byte before it (version 2)
 * ```
 * An actor is a region's per-epoch actor, {@link siblingActor}: `(epoch - 1) × 256 + region`, so
 * a leader that lost dots in a failover never mints them again under the same actor.
 * Version 1 (`0xC1`, the same without the MAC, actors plain region ids) is still decoded here,
 * for contexts kept by older clients; gateways refuse it (`INVALID_CONTEXT`): they accept only the
 * contexts they signed. e.g. `[[0, 3], [2, 1]]` is `C2 02 00 03 02 01` followed by 16 bytes.
 * No `Buffer`: this module runs in browsers too.
 */
import { MAX_SAFE_COUNTER, isSafeCounter } from './counter-bounds.js'
import type { CausalContext } from './dvvset.js'
import { CausewayError } from './errors.js'

/** The leading byte of an unsigned context: format `0xC` (causal context), version `1`. */
export const CAUSAL_CONTEXT_FORMAT = 0xc1

/** The leading byte of a signed context: format `0xC` (causal context), version `2`. */
export const SIGNED_CONTEXT_FORMAT = 0xc2

/** Bytes of the MAC that ends a signed context. */
export const CONTEXT_MAC_BYTES = 16

/** Actors of one epoch: a region's actor in epoch `e` is `(e - 1) × 256 + region`. */
export const ACTORS_PER_EPOCH = 256

/**
 * The actor under which region `region`'s leader mints sibling dots in `epoch` (as set dots are,
 * `setActor`). An actor must never mint a dot twice; a new epoch means the log may have lost
 * acknowledged writes and the dots they minted, so each epoch mints under a fresh actor. Epoch 1
 * uses the region id itself, so keys written before actors had epochs read unchanged.
 */
export function siblingActor(region: number, epoch: number): number {
  return (Math.max(1, epoch) - 1) * ACTORS_PER_EPOCH + region
}

/** The region whose leader minted under `actor` ({@link siblingActor}). */
export function actorRegion(actor: number): number {
  return actor % ACTORS_PER_EPOCH
}

/**
 * Default bound on an encoded context, in bytes: room for 255 regions (Causeway's most) with the
 * largest counters.
 */
export const DEFAULT_MAX_CONTEXT_BYTES = 4096

/** Options of {@link decodeCausalContext}. */
export interface DecodeContextOptions {
  /** Largest accepted context, in bytes before base64url. @default 4096 ({@link DEFAULT_MAX_CONTEXT_BYTES}) */
  maxBytes?: number
  /** Number of regions of the cluster: actors must be below it. @default unlimited */
  regions?: number
}

function invalid(why: string): CausewayError {
  return new CausewayError('INVALID_CONTEXT', `invalid causeway-context: ${why}`)
}

// ---- base64url (RFC 4648 §5, no padding), strict: canonical text only ----

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const SEXTET = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) SEXTET[ALPHABET.charCodeAt(i)] = i

function toBase64url(bytes: Uint8Array): string {
  let out = ''
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out +=
      ALPHABET[n >>> 18]! +
      ALPHABET[(n >>> 12) & 63]! +
      ALPHABET[(n >>> 6) & 63]! +
      ALPHABET[n & 63]!
  }
  const rest = bytes.length - i
  if (rest === 1) {
    const n = bytes[i]!
    out += ALPHABET[n >>> 2]! + ALPHABET[(n & 3) << 4]!
  } else if (rest === 2) {
    const n = (bytes[i]! << 8) | bytes[i + 1]!
    out += ALPHABET[n >>> 10]! + ALPHABET[(n >>> 4) & 63]! + ALPHABET[(n & 15) << 2]!
  }
  return out
}

function sextet(text: string, at: number): number {
  const code = text.charCodeAt(at)
  const v = code < 128 ? SEXTET[code]! : -1
  if (v < 0) throw invalid(`not base64url (character ${JSON.stringify(text[at])} at ${at})`)
  return v
}

function fromBase64url(text: string): Uint8Array {
  const tail = text.length % 4
  if (tail === 1) throw invalid('not base64url (impossible length)')
  const out = new Uint8Array(((text.length - tail) / 4) * 3 + (tail === 0 ? 0 : tail - 1))
  let o = 0
  let i = 0
  for (; i + 4 <= text.length; i += 4) {
    const n =
      (sextet(text, i) << 18) |
      (sextet(text, i + 1) << 12) |
      (sextet(text, i + 2) << 6) |
      sextet(text, i + 3)
    out[o++] = n >>> 16
    out[o++] = (n >>> 8) & 255
    out[o++] = n & 255
  }
  // A final partial group must leave its unused low bits at zero, so each byte string has exactly
  // one accepted text.
  if (tail === 2) {
    const n = (sextet(text, i) << 6) | sextet(text, i + 1)
    if (n & 15) throw invalid('not canonical base64url (non-zero trailing bits)')
    out[o] = n >>> 4
  } else if (tail === 3) {
    const n = (sextet(text, i) << 12) | (sextet(text, i + 1) << 6) | sextet(text, i + 2)
    if (n & 3) throw invalid('not canonical base64url (non-zero trailing bits)')
    out[o++] = n >>> 10
    out[o] = (n >>> 2) & 255
  }
  return out
}

// ---- varints ----

const MAX_VARINT_BYTES = 8 // 8 × 7 bits hold 2^53 - 1

function varintLength(n: number): number {
  let len = 1
  while (n >= 128) {
    n = Math.floor(n / 128)
    len++
  }
  return len
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  // Division, not bit shifts: counters may exceed 32 bits.
  while (n >= 128) {
    out[at++] = (n % 128) | 128
    n = Math.floor(n / 128)
  }
  out[at++] = n
  return at
}

class Reader {
  at = 1 // just past the format byte
  constructor(readonly bytes: Uint8Array) {}

  varint(what: string): number {
    let value = 0
    let scale = 1
    for (let k = 0; k < MAX_VARINT_BYTES; k++) {
      if (this.at >= this.bytes.length) throw invalid(`truncated (${what})`)
      const b = this.bytes[this.at++]!
      value += (b & 127) * scale
      if (b < 128) {
        if (b === 0 && k > 0) throw invalid(`non-canonical varint (${what})`)
        if (value > Number.MAX_SAFE_INTEGER) throw invalid(`${what} out of range`)
        return value
      }
      scale *= 128
    }
    throw invalid(`${what} out of range`)
  }
}

// ---- the context ----

function checkEntry(
  actor: number,
  counter: number,
  previous: number,
  regions: number | undefined,
): void {
  if (!Number.isSafeInteger(actor) || actor < 0) throw invalid(`actor ${actor} is not a region id`)
  if (regions !== undefined && actorRegion(actor) >= regions) {
    throw invalid(`actor ${actor} is not of a region of this cluster (it has ${regions})`)
  }
  if (actor <= previous) {
    throw invalid(
      actor === previous ? `actor ${actor} appears twice` : 'actors are not in ascending order',
    )
  }
  // A context of 2^53 - 1 would make the leader's next dot 2^53: refused here, before any plan.
  if (!isSafeCounter(counter))
    throw invalid(`counter ${counter} of actor ${actor} out of range (1..${MAX_SAFE_COUNTER})`)
}

/**
 * Checks a context given as data (not decoded from the wire) against a cluster of `regions`
 * regions, by the rules {@link decodeCausalContext} applies: an array of `[actor, counter]` pairs,
 * actors region ids in strictly ascending order, counters in `1..MAX_SAFE_COUNTER`.
 * @throws `CausewayError('INVALID_CONTEXT')` otherwise.
 */
export function checkCausalContext(
  context: unknown,
  regions: number,
): asserts context is CausalContext<number> {
  if (!Array.isArray(context)) throw invalid('not an array of [actor, counter] pairs')
  let previous = -1
  for (const pair of context as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2)
      throw invalid('an entry is not an [actor, counter] pair')
    const [actor, counter] = pair as [unknown, unknown]
    if (typeof actor !== 'number' || typeof counter !== 'number')
      throw invalid('an entry is not an [actor, counter] pair of numbers')
    checkEntry(actor, counter, previous, regions)
    previous = actor
  }
}

/**
 * The binary form of a context (see the module comment for the layout).
 * @throws `CausewayError('INVALID_CONTEXT')` when `context` is not a valid version vector: actors
 * must be non-negative safe integers in strictly ascending order, counters in
 * `1..MAX_SAFE_COUNTER`.
 */
export function encodeCausalContextBytes(
  context: CausalContext<number>,
  format: number = CAUSAL_CONTEXT_FORMAT,
): Uint8Array {
  let length = 1 + varintLength(context.length)
  let previous = -1
  for (const [actor, counter] of context) {
    checkEntry(actor, counter, previous, undefined)
    previous = actor
    length += varintLength(actor) + varintLength(counter)
  }
  const out = new Uint8Array(length)
  out[0] = format
  let at = writeVarint(out, 1, context.length)
  for (const [actor, counter] of context) {
    at = writeVarint(out, at, actor)
    at = writeVarint(out, at, counter)
  }
  return out
}

/**
 * Decodes the binary form strictly. Anything but exactly one well-formed context of the current
 * format is rejected: a wrong format/version byte, truncated input, trailing bytes, non-minimal
 * or out-of-range varints, duplicate or unsorted actors, actors outside `regions`, counters of 0
 * or above `MAX_SAFE_COUNTER`, input longer than `maxBytes`.
 * @throws `CausewayError('INVALID_CONTEXT')` on any of those.
 */
export function decodeCausalContextBytes(
  bytes: Uint8Array,
  options: DecodeContextOptions = {},
): CausalContext<number> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_CONTEXT_BYTES
  if (bytes.length > maxBytes)
    throw invalid(`too large (${bytes.length} bytes; the limit is ${maxBytes})`)
  if (bytes.length === 0) throw invalid('empty')
  if (bytes[0] !== CAUSAL_CONTEXT_FORMAT && bytes[0] !== SIGNED_CONTEXT_FORMAT) {
    throw invalid(`unknown format or version 0x${bytes[0]!.toString(16).padStart(2, '0')}`)
  }
  // A signed context ends with its MAC, which only a gateway can check (splitSignedContext).
  if (bytes[0] === SIGNED_CONTEXT_FORMAT) {
    if (bytes.length < 2 + CONTEXT_MAC_BYTES) throw invalid('truncated (no MAC)')
    bytes = bytes.subarray(0, bytes.length - CONTEXT_MAC_BYTES)
  }
  const reader = new Reader(bytes)
  const count = reader.varint('entry count')
  // Each entry takes at least two bytes: bail out before allocating for an absurd count.
  if (count * 2 > bytes.length - reader.at)
    throw invalid('truncated (fewer entries than announced)')
  const context: (readonly [number, number])[] = []
  let previous = -1
  for (let k = 0; k < count; k++) {
    const actor = reader.varint('actor')
    const counter = reader.varint('counter')
    checkEntry(actor, counter, previous, options.regions)
    previous = actor
    context.push([actor, counter])
  }
  if (reader.at !== bytes.length) throw invalid(`${bytes.length - reader.at} trailing bytes`)
  return context
}

/** The wire form of a context: its binary form in base64url without padding. */
export function encodeCausalContext(context: CausalContext<number>): string {
  return toBase64url(encodeCausalContextBytes(context))
}

/**
 * Decodes a `causeway-context` strictly: canonical base64url (no padding, no whitespace, zero
 * trailing bits) of exactly one binary context (see {@link decodeCausalContextBytes}). Oversized
 * text is rejected before it is decoded.
 * @throws `CausewayError('INVALID_CONTEXT')` on anything else.
 */
export function decodeCausalContext(
  text: string,
  options: DecodeContextOptions = {},
): CausalContext<number> {
  if (typeof text !== 'string') throw invalid('not a string')
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_CONTEXT_BYTES
  if (text.length > Math.ceil((maxBytes * 4) / 3)) {
    throw invalid(`too large (${text.length} characters; the limit is ${maxBytes} bytes)`)
  }
  return decodeCausalContextBytes(fromBase64url(text), options)
}

/** A signed context taken apart: its version vector, the bytes the MAC covers, and the MAC. */
export interface SignedContextParts {
  readonly context: CausalContext<number>
  /** The format byte, count and entries: what the MAC covers (with the key). */
  readonly body: Uint8Array
  readonly mac: Uint8Array
}

/**
 * Decodes a signed context (format 2) as {@link decodeCausalContext} does, keeping its body and
 * MAC apart for the gateway to check. An unsigned (format 1) context is refused, naming why.
 * @throws `CausewayError('INVALID_CONTEXT')`.
 */
export function splitSignedContext(
  text: string,
  options: DecodeContextOptions = {},
): SignedContextParts {
  const context = decodeCausalContext(text, options)
  const bytes = fromBase64url(text)
  if (bytes[0] !== SIGNED_CONTEXT_FORMAT)
    throw invalid('unsigned (format 1, from an older gateway): read the key again for a context')
  const cut = bytes.length - CONTEXT_MAC_BYTES
  return { context, body: bytes.subarray(0, cut), mac: bytes.subarray(cut) }
}

/**
 * The wire form of a signed context: `body` (from {@link encodeSignedContextBody}) followed by
 * its `mac` (the first {@link CONTEXT_MAC_BYTES} bytes are used), in base64url.
 */
export function joinSignedContext(body: Uint8Array, mac: Uint8Array): string {
  const out = new Uint8Array(body.length + CONTEXT_MAC_BYTES)
  out.set(body)
  out.set(mac.subarray(0, CONTEXT_MAC_BYTES), body.length)
  return toBase64url(out)
}

/** The part of a signed context its MAC covers (format byte 0xC2, count, entries). */
export function encodeSignedContextBody(context: CausalContext<number>): Uint8Array {
  return encodeCausalContextBytes(context, SIGNED_CONTEXT_FORMAT)
}
