/**
 * Read vectors: what a read needs a replica to have applied, one log index per origin region.
 * Wire form (`causeway-after` header): `epoch@region:idx,region:idx`, only non-zero entries,
 * e.g. `1@0:12,1:7`. A replica may serve the read once `sv[d] >= need[d]` for every `d`.
 */
import { MAX_SAFE_COUNTER } from './counter-bounds.js'
import { CausewayError } from './errors.js'

/** A read's requirement: the partition epoch it was built in and a dense vector of length D. */
export interface ReadNeed {
  /** The partition's epoch when the session learned these indexes; absent when unknown. */
  epoch?: number
  /** `need[d]`: the lowest origin index of region `d` the replica must have applied (0 = none). */
  need: number[]
}

const MAX_HEADER_LENGTH = 2048

/** True when every entry of `sv` is at least the matching entry of `need`. */
export function covers(sv: readonly number[], need: readonly number[]): boolean {
  for (let d = 0; d < need.length; d++) {
    if ((sv[d] ?? 0) < need[d]!) return false
  }
  return true
}

/** Elementwise maximum, into `into`. */
export function maxInto(into: number[], other: readonly number[]): number[] {
  for (let d = 0; d < other.length; d++) {
    const v = other[d]!
    if (v > (into[d] ?? 0)) into[d] = v
  }
  return into
}

/** `{ "0": 12, "1": 7 }`: a vector as a JSON object, for error details and status pages. */
export function vectorToObject(v: readonly number[]): Record<string, number> {
  const out: Record<string, number> = {}
  v.forEach((idx, d) => {
    out[d] = idx
  })
  return out
}

/** The `causeway-after` header for a need, or `undefined` when it needs nothing. */
export function formatReadNeed(need: ReadNeed): string | undefined {
  let body = ''
  for (let d = 0; d < need.need.length; d++) {
    const idx = need.need[d]!
    if (idx > 0) body += (body ? ',' : '') + d + ':' + idx
  }
  if (!body) return undefined
  return need.epoch !== undefined ? `${need.epoch}@${body}` : body
}

function invalid(header: string, why: string): CausewayError {
  return new CausewayError(
    'INVALID_VECTOR',
    `invalid causeway-after ${JSON.stringify(header.slice(0, 64))}: ${why}`,
  )
}

const DIGITS = /^(0|[1-9][0-9]{0,15})$/

function parseNumber(text: string, header: string, what: string): number {
  if (!DIGITS.test(text)) throw invalid(header, `${what} must be a non-negative integer`)
  const n = Number(text)
  // The bound of every counter and index (counter-bounds.ts): one more stays a safe integer.
  if (n > MAX_SAFE_COUNTER)
    throw invalid(header, `${what} is too large (most: ${MAX_SAFE_COUNTER})`)
  return n
}

/** Parses a `causeway-after` header strictly; throws `INVALID_VECTOR` on anything malformed. */
export function parseReadNeed(header: string, regions: number): ReadNeed {
  if (header.length > MAX_HEADER_LENGTH) throw invalid(header, 'too long')
  const need: number[] = new Array<number>(regions).fill(0)
  let body = header.trim()
  let epoch: number | undefined
  const at = body.indexOf('@')
  if (at !== -1) {
    epoch = parseNumber(body.slice(0, at), header, 'epoch')
    if (epoch < 1) throw invalid(header, 'epoch must be at least 1')
    body = body.slice(at + 1)
  }
  if (body === '') throw invalid(header, 'no entries')
  const seen = new Set<number>()
  for (const part of body.split(',')) {
    const colon = part.indexOf(':')
    if (colon === -1) throw invalid(header, `entry ${JSON.stringify(part)} is not region:idx`)
    const d = parseNumber(part.slice(0, colon), header, 'region')
    const idx = parseNumber(part.slice(colon + 1), header, 'idx')
    if (d >= regions) throw invalid(header, `region ${d} does not exist (cluster has ${regions})`)
    if (seen.has(d)) throw invalid(header, `region ${d} appears twice`)
    seen.add(d)
    need[d] = idx
  }
  return epoch === undefined ? { need } : { epoch, need }
}
