/**
 * The stored form of a set-clock or set-tombstone: a tagged, versioned binary encoding, so a
 * store can hold it as a plain value (a LevelDB value, a Redis string) and a later format can be
 * told apart from this one.
 *
 * Layout: `0xB5` (tag) `0x01` (version), then varint actor count and, per actor in ascending
 * order: varint actor, varint base, varint cloud length, and the cloud as varint gaps (each
 * counter minus the previous one, starting from the base), so dense clouds stay small.
 */
import { CausewayError } from '../errors.js'
import { clockActors, freshClock, type DotClock } from './clock.js'
import type { Actor } from './dot.js'

const CLOCK_TAG = 0xb5
const CLOCK_VERSION = 1

/** Encodes a clock for storage. */
export function encodeClock(clock: DotClock): Uint8Array {
  const out: number[] = [CLOCK_TAG, CLOCK_VERSION]
  const actors = clockActors(clock)
  writeVarint(out, actors.length)
  for (const actor of actors) {
    const base = clock.vv.get(actor) ?? 0
    const cloud = clock.cloud.get(actor) ?? []
    writeVarint(out, actor)
    writeVarint(out, base)
    writeVarint(out, cloud.length)
    let previous = base
    for (const c of cloud) {
      writeVarint(out, c - previous)
      previous = c
    }
  }
  return Uint8Array.from(out)
}

/**
 * Decodes a stored clock; `undefined` (no key yet) is the fresh clock. Throws `INTERNAL` when the
 * bytes are not a clock this version wrote: that is corruption, not bad input.
 */
export function decodeClock(bytes: Uint8Array | undefined): DotClock {
  if (bytes === undefined || bytes.length === 0) return freshClock()
  if (bytes[0] !== CLOCK_TAG) throw corrupt('wrong tag')
  if (bytes[1] !== CLOCK_VERSION) throw corrupt(`unknown version ${bytes[1]}`)
  const reader = { bytes, at: 2 }
  const vv = new Map<Actor, number>()
  const cloud = new Map<Actor, readonly number[]>()
  const count = readVarint(reader)
  let lastActor = -1
  for (let i = 0; i < count; i++) {
    const actor = readVarint(reader)
    if (actor <= lastActor || actor > 0xffff_ffff) throw corrupt('actors out of order')
    lastActor = actor
    const base = readVarint(reader)
    const length = readVarint(reader)
    if (length > bytes.length) throw corrupt('cloud longer than the value')
    const counters: number[] = []
    let previous = base
    for (let j = 0; j < length; j++) {
      const gap = readVarint(reader)
      // A gap of 1 right after the base would have been folded into it.
      if (gap < 1 || (j === 0 && gap < 2)) throw corrupt('cloud not normalised')
      previous += gap
      counters.push(previous)
    }
    if (base > 0) vv.set(actor, base)
    if (counters.length > 0) cloud.set(actor, counters)
  }
  if (reader.at !== bytes.length) throw corrupt('trailing bytes')
  return { vv, cloud }
}

function corrupt(why: string): CausewayError {
  return new CausewayError('INTERNAL', `corrupt bigset clock: ${why}`)
}

// LEB128 with arithmetic instead of bit operations, so values up to 2^53 survive.
function writeVarint(out: number[], value: number): void {
  let v = value
  while (v >= 0x80) {
    out.push((v % 0x80) + 0x80)
    v = Math.floor(v / 0x80)
  }
  out.push(v)
}

function readVarint(reader: { bytes: Uint8Array; at: number }): number {
  let value = 0
  let scale = 1
  for (let i = 0; i < 8; i++) {
    const byte = reader.bytes[reader.at++]
    if (byte === undefined) throw corrupt('truncated')
    value += (byte & 0x7f) * scale
    if (byte < 0x80) {
      if (!Number.isSafeInteger(value)) throw corrupt('number too large')
      return value
    }
    scale *= 0x80
  }
  throw corrupt('varint too long')
}
