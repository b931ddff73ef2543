/**
 * Read vectors: what a read needs a replica to have applied, one log position per origin region.
 * Wire form (`causeway-after` header): `region:idx[@epoch],...`, only non-zero entries, e.g.
 * `0:12@2,1:7` (region 0 up to index 12, which it issued in epoch 2; region 1 up to 7, epoch not
 * known). A replica may serve the read once `sv[d] >= need[d]` for every `d` and its epoch
 * history still holds each position (`epoch-history.ts`). The older form `epoch@region:idx,...`
 * (one epoch for the whole partition, protocol 1's first form) still parses; its epoch is kept in
 * {@link ReadNeed.epoch} and judges nothing.
 */
import { MAX_SAFE_COUNTER } from './counter-bounds.js'
import { CausewayError } from './errors.js'

/** A read's requirement: a dense vector of length D, and the epoch of each position when known. */
export interface ReadNeed {
  /**
   * The partition-wide epoch of the older header form (`epoch@...`): parsed for compatibility,
   * judged by nothing (per-position epochs replaced it).
   */
  epoch?: number
  /** `need[d]`: the lowest origin index of region `d` the replica must have applied (0 = none). */
  need: number[]
  /**
   * `epochs[d]`: the epoch in which region `d` issued index `need[d]`, 0 when not known (then only
   * whether that index was lost is judged). Absent: none known.
   */
  epochs?: number[]
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
    if (idx <= 0) continue
    const epoch = need.epochs?.[d] ?? 0
    body += (body ? ',' : '') + d + ':' + idx + (epoch > 0 ? '@' + epoch : '')
  }
  return body || undefined
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
  const epochs: number[] = new Array<number>(regions).fill(0)
  let body = header.trim()
  let epoch: number | undefined
  const at = body.indexOf('@')
  // The older form's partition epoch comes before the first entry's colon.
  if (at !== -1 && (body.indexOf(':') === -1 || at < body.indexOf(':'))) {
    epoch = parseNumber(body.slice(0, at), header, 'epoch')
    if (epoch < 1) throw invalid(header, 'epoch must be at least 1')
    body = body.slice(at + 1)
  }
  if (body === '') throw invalid(header, 'no entries')
  const seen = new Set<number>()
  let anyEpoch = false
  for (const part of body.split(',')) {
    const colon = part.indexOf(':')
    if (colon === -1) throw invalid(header, `entry ${JSON.stringify(part)} is not region:idx`)
    const d = parseNumber(part.slice(0, colon), header, 'region')
    let rest = part.slice(colon + 1)
    const mark = rest.indexOf('@')
    let e = 0
    if (mark !== -1) {
      e = parseNumber(rest.slice(mark + 1), header, 'epoch')
      if (e < 1) throw invalid(header, 'epoch must be at least 1')
      rest = rest.slice(0, mark)
    }
    const idx = parseNumber(rest, header, 'idx')
    if (d >= regions) throw invalid(header, `region ${d} does not exist (cluster has ${regions})`)
    if (seen.has(d)) throw invalid(header, `region ${d} appears twice`)
    seen.add(d)
    need[d] = idx
    // An entry of index 0 needs nothing, whatever its epoch.
    if (idx > 0 && e > 0) {
      epochs[d] = e
      anyEpoch = true
    }
  }
  const parsed: ReadNeed = { need }
  if (epoch !== undefined) parsed.epoch = epoch
  if (anyEpoch) parsed.epochs = epochs
  return parsed
}
