/**
 * The shipping envelope: how a batch of one region's log entries travels to the leader of the same
 * partition in another region (cross-region shipping), in process or over HTTP
 * (`POST /v1/internal/ship/:partition/:origin`).
 *
 * `{ v, from, epoch, first, last, entries }`: the format version, the sending (origin) region, the
 * sender's partition epoch, the idx of the first and last entry, and the entries, consecutive
 * from `first` to `last`. On the wire an entry leaves out its `origin` (it is `from`).
 *
 * Version 2 adds `epochs`, the sender's epoch history of its own index sequence
 * (`epoch-history.ts`, as `[[epoch, first, last?], ...]`): the receiver keeps it, refuses an
 * envelope whose history does not extend the one it learned before (`SHIPPING_DIVERGED`), and
 * takes an envelope that starts a new epoch above a lost range as following on from the last
 * index the sender kept. A sender whose history is still the initial one sends version 1, which
 * every receiver reads.
 *
 * A receiver checks the whole envelope before it applies anything: an unknown `v` or entry kind is
 * `UNSUPPORTED_LOG_FORMAT` (a newer sender: the receiving region needs upgrading), anything else
 * wrong is `INVALID_REQUEST`, and either way nothing of the batch is applied, so the sender's
 * checkpoint stays where it was and it retries.
 */
import { isRegionId, isSafeCounter, withoutNegativeZero } from './counter-bounds.js'
import {
  type EpochHistory,
  type EpochHistoryWire,
  type EpochSpan,
  checkHistory,
  currentEpoch,
  historyToWire,
} from './epoch-history.js'
import { CausewayError } from './errors.js'
import { checkEntryKind, checkLogEntry } from './log-entry-check.js'
import type { LogEntry } from './log-entry.js'

/** The newest envelope format this version writes (it writes 1 while a history is initial). */
export const SHIP_ENVELOPE_VERSION = 2

/** The envelope versions this version reads. */
export const SHIP_ENVELOPE_VERSIONS: readonly number[] = [1, SHIP_ENVELOPE_VERSION]

/** A batch of one region's log entries on its way to another region, as replicas take it. */
export interface ShipEnvelope {
  readonly v: 1 | 2
  /** The region the entries come from (their origin). */
  readonly from: number
  /** The sender's current epoch of the partition (the last of `epochs`). */
  readonly epoch: number
  /** Version 2: the sender's epoch history of its own index sequence. */
  readonly epochs?: EpochHistory
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
  epochs?: EpochHistoryWire
  first: number
  last: number
  entries: ShippedEntry[]
}

/**
 * The envelope of `entries` (at least one, all of region `from`, consecutive), frozen: version 2
 * with the sender's `history` when it has more than the initial epoch, else version 1 with
 * `epoch`. Throws a `RangeError` for anything else: a sender's bug.
 */
export function shipEnvelope(
  from: number,
  epoch: number | EpochHistory,
  entries: readonly LogEntry[],
): ShipEnvelope {
  const first = entries[0]
  if (first === undefined) throw new RangeError('an envelope carries at least one entry')
  entries.forEach((e, i) => {
    if (e.origin !== from || e.idx !== first.idx + i)
      throw new RangeError(`entry ${e.origin}:${e.idx} does not follow in an envelope of ${from}`)
  })
  const history = typeof epoch === 'number' ? undefined : epoch
  const initial = history === undefined || (history.length === 1 && history[0]!.first === 1)
  return Object.freeze({
    v: initial ? 1 : SHIP_ENVELOPE_VERSION,
    from,
    epoch: history === undefined ? (epoch as number) : currentEpoch(history),
    ...(initial ? {} : { epochs: history }),
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
    ...(envelope.epochs === undefined ? {} : { epochs: historyToWire(envelope.epochs) }),
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
  const wire = json as { from?: unknown; entries?: unknown; epochs?: unknown }
  if (!Array.isArray(wire.entries)) return json
  return {
    ...wire,
    ...(Array.isArray(wire.epochs) ? { epochs: wire.epochs.map(spanFromWire) } : {}),
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
  let epochs: EpochHistory | undefined
  if (e.v === 2) {
    if (!Array.isArray(e.epochs)) throw bad('a version 2 envelope carries its epochs')
    try {
      epochs = checkHistory(e.epochs as EpochSpan[])
    } catch (error) {
      throw bad((error as Error).message)
    }
    if (currentEpoch(epochs) !== e.epoch) throw bad('epoch is not the last of epochs')
  } else if (e.epochs !== undefined) throw bad('a version 1 envelope has no epochs')
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
    entries.every((entry, i) => entry === raws[i]) &&
    (epochs === undefined || epochs === e.epochs)
  )
    return json as ShipEnvelope
  return Object.freeze({
    v: e.v as 1 | 2,
    from,
    epoch: e.epoch,
    ...(epochs === undefined ? {} : { epochs }),
    first,
    last: e.last,
    entries: Object.freeze(entries),
  })
}

// `[epoch, first, last?]` as a span, unchecked (checkHistory checks it); anything else as it is.
function spanFromWire(item: unknown): unknown {
  if (!Array.isArray(item)) return item
  const [epoch, first, last] = item as unknown[]
  return item.length === 3 ? { epoch, first, last } : item.length === 2 ? { epoch, first } : item
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed shipping envelope: ${why}`)
}
