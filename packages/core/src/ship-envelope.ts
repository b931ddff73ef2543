/**
 * The shipping envelope: how a batch of one region's log entries travels to the leader of the same
 * partition in another region (cross-region shipping), in process or over HTTP
 * (`POST /v1/internal/ship/:partition/:origin`).
 *
 * `{ v, from, epoch, first, last, entries }`: the format version, the sending (origin) region, the
 * sender's partition epoch, the idx of the first and last entry, and the entries, consecutive
 * from `first` to `last`. On the wire an entry leaves out its `origin` (it is `from`).
 *
 * A receiver checks the whole envelope before it applies anything: an unknown `v` or entry kind is
 * `UNSUPPORTED_LOG_FORMAT` (a newer sender: the receiving region needs upgrading), anything else
 * wrong is `INVALID_REQUEST`, and either way nothing of the batch is applied, so the sender's
 * checkpoint stays where it was and it retries.
 */
import { isRegionId, isSafeCounter, withoutNegativeZero } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { checkEntryKind, checkLogEntry } from './log-entry-check.js'
import type { LogEntry } from './log-entry.js'

/** The envelope format this version writes and reads. */
export const SHIP_ENVELOPE_VERSION = 1

/** The envelope versions this version reads. */
export const SHIP_ENVELOPE_VERSIONS: readonly number[] = [SHIP_ENVELOPE_VERSION]

/** A batch of one region's log entries on its way to another region, as replicas take it. */
export interface ShipEnvelope {
  readonly v: typeof SHIP_ENVELOPE_VERSION
  /** The region the entries come from (their origin). */
  readonly from: number
  /** The sender's epoch of the partition (failover with real epochs will compare it). */
  readonly epoch: number
  /** The idx of the first entry. */
  readonly first: number
  /** The idx of the last entry. */
  readonly last: number
  /** Entries of `from`, consecutive from `first` to `last`. */
  readonly entries: readonly LogEntry[]
}

/** An entry as the wire carries it: without its origin. */
export type ShippedEntry = LogEntry extends infer E
  ? E extends LogEntry
    ? Omit<E, 'origin'>
    : never
  : never

/** The JSON form of a {@link ShipEnvelope}. */
export interface ShipEnvelopeWire {
  v: number
  from: number
  epoch: number
  first: number
  last: number
  entries: ShippedEntry[]
}

/**
 * The envelope of `entries` (at least one, all of region `from`, consecutive), frozen. Throws a
 * `RangeError` for anything else: a sender's bug.
 */
export function shipEnvelope(
  from: number,
  epoch: number,
  entries: readonly LogEntry[],
): ShipEnvelope {
  const first = entries[0]
  if (first === undefined) throw new RangeError('an envelope carries at least one entry')
  entries.forEach((e, i) => {
    if (e.origin !== from || e.idx !== first.idx + i)
      throw new RangeError(`entry ${e.origin}:${e.idx} does not follow in an envelope of ${from}`)
  })
  return Object.freeze({
    v: SHIP_ENVELOPE_VERSION,
    from,
    epoch,
    first: first.idx,
    last: first.idx + entries.length - 1,
    entries: Object.freeze([...entries]),
  })
}

/** The JSON form of `envelope`. */
export function envelopeToWire(envelope: ShipEnvelope): ShipEnvelopeWire {
  return {
    v: envelope.v,
    from: envelope.from,
    epoch: envelope.epoch,
    first: envelope.first,
    last: envelope.last,
    entries: envelope.entries.map(({ origin: _origin, ...shipped }) => shipped as ShippedEntry),
  }
}

/**
 * Puts each wire entry's origin (`from`) back, unchecked: {@link checkShipEnvelope} checks the
 * result. Leaves anything that is not an envelope with an array of entries as it is.
 */
export function envelopeFromWire(json: unknown): unknown {
  if (typeof json !== 'object' || json === null) return json
  const wire = json as { from?: unknown; entries?: unknown }
  if (!Array.isArray(wire.entries)) return json
  return {
    ...wire,
    entries: wire.entries.map((e: unknown) =>
      typeof e === 'object' && e !== null ? { ...e, origin: wire.from } : e,
    ),
  }
}

/**
 * Refuses with `UNSUPPORTED_LOG_FORMAT` an envelope (in either form) of a version or with an entry
 * kind this version does not read, looking at nothing else: what a receiver checks first, before
 * any other rule of the version it knows can refuse what a newer version allows.
 */
export function checkEnvelopeFormat(json: unknown): void {
  if (typeof json !== 'object' || json === null) return
  const { v, entries } = json as { v?: unknown; entries?: unknown }
  if (typeof v !== 'number' || !SHIP_ENVELOPE_VERSIONS.includes(v))
    throw new CausewayError(
      'UNSUPPORTED_LOG_FORMAT',
      `shipping envelope version ${JSON.stringify(v) ?? 'undefined'} is not one this gateway reads (it reads ${SHIP_ENVELOPE_VERSIONS.join(', ')})`,
      { field: 'v', got: typeof v === 'number' ? v : null, supported: [...SHIP_ENVELOPE_VERSIONS] },
    )
  if (!Array.isArray(entries)) return
  for (const [i, e] of (entries as unknown[]).entries()) {
    const kind = typeof e === 'object' && e !== null ? (e as { kind?: unknown }).kind : undefined
    if (typeof kind === 'string') checkEntryKind(kind, `entry ${i} of the envelope`)
  }
}

/**
 * Checks an envelope of a cluster of `regions` regions received by region `to`, and returns it
 * with every entry checked and frozen (`checkLogEntry`).
 * @throws `CausewayError('UNSUPPORTED_LOG_FORMAT')` for an unknown version or entry kind,
 * `CausewayError('INVALID_REQUEST')` for anything else: `from` not another region, an epoch that
 * is not a positive counter, entries not consecutive from `first` to `last`, or not of `from`.
 */
export function checkShipEnvelope(json: unknown, regions: number, to: number): ShipEnvelope {
  checkEnvelopeFormat(json)
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw bad('an envelope must be an object')
  const e = json as Record<string, unknown>
  if (!isRegionId(e.from, regions)) throw bad(`from is not a region of ${regions}`)
  if (e.from === to) throw bad(`region ${to} does not receive its own entries`)
  if (!isSafeCounter(e.epoch)) throw bad('epoch is not in 1..2^53 - 2')
  if (!isSafeCounter(e.first) || !isSafeCounter(e.last) || e.last < e.first)
    throw bad('first and last are not idx in order')
  if (!Array.isArray(e.entries) || e.entries.length !== e.last - e.first + 1)
    throw bad(`entries must hold idx ${String(e.first)} to ${String(e.last)}, one each`)
  // A `-0` region is region 0 (`counter-bounds.ts`); the counters start at 1.
  const from = withoutNegativeZero(e.from)
  const first = e.first
  const raws = e.entries as unknown[]
  const entries = raws.map((raw, i) => {
    const entry = checkLogEntry(raw, regions)
    if (entry.origin !== from)
      throw bad(`entry ${entry.origin}:${entry.idx} is in an envelope of region ${from}`)
    if (entry.idx !== first + i)
      throw bad(`entry ${entry.origin}:${entry.idx} is where idx ${first + i} belongs`)
    return entry
  })
  if (
    Object.isFrozen(json) &&
    Object.is(from, e.from) &&
    entries.every((entry, i) => entry === raws[i])
  )
    return json as ShipEnvelope
  return Object.freeze({
    v: SHIP_ENVELOPE_VERSION,
    from,
    epoch: e.epoch,
    first,
    last: e.last,
    entries: Object.freeze(entries),
  })
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed shipping envelope: ${why}`)
}
