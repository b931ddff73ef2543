/**
 * Vector clocks of the causal mode (Eunomia, thesis section 3.4): one HLC per region. A client's
 * clock (`VClock_c`) covers everything its session has read or written: entry `d` is the newest
 * HLC of a version of region `d` it has seen. A region's `SiteTime` is the same shape: entry `k` is
 * the time up to which every update of region `k` is applied there. A causal call may be served
 * once the region's `SiteTime` covers the client's clock in every other region's entry (its own
 * region's updates are visible there as soon as they are written).
 *
 * Wire form (`causeway-clock` header): the entries in region order, comma-separated, each 16
 * lowercase hex digits or `0` for none, e.g. `0000018f2a3b4c0001,0`.
 */
import { CausewayError } from './errors.js'
import { HLC_ZERO, type Hlc, hlcMax, isHlc } from './hlc.js'

/** A vector clock: one HLC per region, by region id. */
export type VectorClock = readonly Hlc[]

/** Most characters a `causeway-clock` header may have (255 regions of 17 characters). */
const MAX_HEADER_LENGTH = 255 * 17

/** The clock of `regions` regions that has seen nothing. */
export function zeroClock(regions: number): Hlc[] {
  return new Array<Hlc>(regions).fill(HLC_ZERO)
}

/** True when the clock has seen nothing. */
export function isZeroClock(clock: VectorClock): boolean {
  return clock.every((t) => t === HLC_ZERO)
}

/** Elementwise maximum of `other` into `into`; returns `into`. */
export function clockMaxInto(into: Hlc[], other: VectorClock): Hlc[] {
  for (let d = 0; d < other.length; d++) into[d] = hlcMax(into[d] ?? HLC_ZERO, other[d]!)
  return into
}

/** The newest entry of a clock (`HLC_ZERO` for an empty one). */
export function clockTop(clock: VectorClock): Hlc {
  let top = HLC_ZERO
  for (const t of clock) if (t > top) top = t
  return top
}

/**
 * True when `site` covers `clock` in every entry but `except` (the region whose own updates need
 * no waiting): `site[d] >= clock[d]`.
 */
export function clockCovers(site: VectorClock, clock: VectorClock, except = -1): boolean {
  for (let d = 0; d < clock.length; d++) {
    if (d === except) continue
    if ((site[d] ?? HLC_ZERO) < clock[d]!) return false
  }
  return true
}

/** The `causeway-clock` header of a clock, or undefined when it has seen nothing. */
export function formatClock(clock: VectorClock): string | undefined {
  if (isZeroClock(clock)) return undefined
  return clock.map((t) => (t === HLC_ZERO ? '0' : t)).join(',')
}

/**
 * Parses a `causeway-clock` header strictly for a cluster of `regions` regions.
 * @throws `INVALID_VECTOR` when it has not one entry per region, `INVALID_HLC` for an entry that
 * is neither an HLC nor `0`.
 */
export function parseClock(header: string, regions: number): Hlc[] {
  const text = header.trim()
  if (text.length > MAX_HEADER_LENGTH)
    throw new CausewayError('INVALID_VECTOR', 'causeway-clock is too long')
  const parts = text === '' ? [] : text.split(',')
  if (parts.length !== regions)
    throw new CausewayError(
      'INVALID_VECTOR',
      `causeway-clock has ${parts.length} entries; the cluster has ${regions} regions (one each, in region order)`,
      { regions, entries: parts.length },
    )
  return parts.map((part, d) => {
    const t: string = part.trim()
    if (t === '0') return HLC_ZERO
    if (isHlc(t)) return t
    throw new CausewayError(
      'INVALID_HLC',
      `causeway-clock entry ${d} ${JSON.stringify(part.trim().slice(0, 32))} is not an HLC (16 lowercase hex digits) or 0`,
      { region: d },
    )
  })
}

/** Checks a clock given as data (a session's `vc`): one HLC per region. */
export function isVectorClock(value: unknown, regions: number): value is Hlc[] {
  return Array.isArray(value) && value.length === regions && value.every((t) => isHlc(t))
}
