/**
 * Epoch histories: which log positions of one origin region's index sequence (of one partition)
 * exist, as Kafka's leader-epoch cache and Raft's terms record them.
 *
 * A region's partition leader issues that region's log indexes (`idx = ++counter`). When the
 * leader changes, or a leader starts with possibly fewer entries than it acknowledged, a new
 * *epoch* begins: the history closes the old epoch at the last entry the new leader holds
 * (`last`) and opens the new one at `first`, above every index the old leader may have issued
 * (the reserved ceiling), so no index is ever used for two writes. A position is `(epoch, idx)`:
 *
 * - **kept**: the history holds it (it is, or will be once replicated, in the log);
 * - **lost**: it was issued in an epoch that ended before it (`idx > last`), or it names an epoch
 *   that the history says began after `idx`: a write acknowledged there is gone for good;
 * - **unknown**: it names an epoch newer than the history knows (this replica has not heard of it
 *   yet, and waits like for any entry it has not applied).
 *
 * Histories are small (one span per failover), travel with shipping envelopes (version 2), and
 * are kept per origin by every replica. Pure: no I/O.
 */
import { MAX_SAFE_COUNTER, isSafeCounter } from './counter-bounds.js'
import { CausewayError } from './errors.js'

/** One epoch of an origin's index sequence. */
export interface EpochSpan {
  /** The epoch, 1, 2, ... (increasing along a history; gaps allowed). */
  readonly epoch: number
  /** Its first index. */
  readonly first: number
  /**
   * The last index it kept, once it ended (`first - 1` when it kept none); absent while it is the
   * current epoch. Indexes between `last` and the next epoch's `first` were lost or never used.
   */
  readonly last?: number
}

/** An origin's epochs, oldest first; never empty. */
export type EpochHistory = readonly EpochSpan[]

/** The history of a sequence that never changed leader: epoch 1 from index 1. */
export const INITIAL_HISTORY: EpochHistory = Object.freeze([Object.freeze({ epoch: 1, first: 1 })])

/** Most spans a history may have on the wire (one per failover of one partition). */
export const MAX_HISTORY_SPANS = 10_000

/** What a history says of a position. */
export type PositionState = 'kept' | 'lost' | 'unknown'

/** The current (last) epoch of a history. */
export function currentEpoch(history: EpochHistory): number {
  return history[history.length - 1]!.epoch
}

/** The epoch whose index range holds `idx` (from its `first` up to the next epoch's), if any. */
export function epochAt(history: EpochHistory, idx: number): number | undefined {
  let found: number | undefined
  for (const span of history) {
    if (span.first > idx) break
    found = span.epoch
  }
  return found
}

/**
 * What `history` says of position `(epoch, idx)`; `epoch` undefined (or 0) when the holder does
 * not know it: then only whether `idx` fell in a lost range is judged.
 */
export function positionState(
  history: EpochHistory,
  epoch: number | undefined,
  idx: number,
): PositionState {
  if (idx <= 0) return 'kept'
  if (!epoch) {
    const at = spanAt(history, idx)
    if (at === undefined) return 'kept'
    return at.last !== undefined && idx > at.last ? 'lost' : 'kept'
  }
  const span = history.find((s) => s.epoch === epoch)
  if (span === undefined) return epoch > currentEpoch(history) ? 'unknown' : 'lost'
  if (idx < span.first) return 'lost'
  if (span.last !== undefined && idx > span.last) return 'lost'
  // A later epoch starting at or below idx took over that index range.
  const next = history[history.indexOf(span) + 1]
  if (next !== undefined && idx >= next.first) return 'lost'
  return 'kept'
}

/** The span whose index range holds `idx`. */
function spanAt(history: EpochHistory, idx: number): EpochSpan | undefined {
  let found: EpochSpan | undefined
  for (const span of history) {
    if (span.first > idx) break
    found = span
  }
  return found
}

/**
 * The highest index below `idx` that the history keeps (0 when none): where the log's previous
 * entry is when `idx` is the first index of an epoch.
 */
export function lastKeptBefore(history: EpochHistory, idx: number): number {
  let kept = 0
  for (let i = 0; i < history.length; i++) {
    const span = history[i]!
    if (span.first >= idx) break
    const next = history[i + 1]
    let end = span.last ?? (next ? next.first - 1 : idx - 1)
    end = Math.min(end, idx - 1)
    if (end >= span.first) kept = end
  }
  return kept
}

/** A lost index range of a history: what epoch `epoch` issued after `last` and did not keep. */
export interface LostRange {
  epoch: number
  /** First index lost (the epoch's `last + 1`). */
  from: number
  /** Last index possibly issued in that epoch (the next epoch's `first - 1`). */
  to: number
}

/** The index ranges a history says were lost (or reserved and never used), oldest first. */
export function lostRanges(history: EpochHistory): LostRange[] {
  const out: LostRange[] = []
  for (let i = 0; i + 1 < history.length; i++) {
    const span = history[i]!
    const next = history[i + 1]!
    const from = Math.max(span.first, (span.last ?? next.first - 1) + 1)
    if (from <= next.first - 1) out.push({ epoch: span.epoch, from, to: next.first - 1 })
  }
  return out
}

/**
 * Whether `theirs` (a sender's history of its own sequence) extends `mine` (what a receiver
 * learned of it before): every epoch of `mine` is in `theirs` with the same `first`, and every
 * epoch `mine` saw end ended at the same `last`. `theirs` may end `mine`'s current epoch and add
 * newer ones. Anything else means the two disagree on which write some position holds.
 */
export function historyExtends(mine: EpochHistory, theirs: EpochHistory): boolean {
  for (const span of mine) {
    const other = theirs.find((s) => s.epoch === span.epoch)
    if (other === undefined || other.first !== span.first) return false
    if (span.last !== undefined && other.last !== span.last) return false
  }
  return currentEpoch(theirs) >= currentEpoch(mine)
}

/** A history as compact text: `epoch:first[:last]` per span, `;` between spans. */
export function encodeHistory(history: EpochHistory): string {
  return history
    .map((s) =>
      s.last === undefined ? `${s.epoch}:${s.first}` : `${s.epoch}:${s.first}:${s.last}`,
    )
    .join(';')
}

/** Parses {@link encodeHistory}'s text; throws `INVALID_REQUEST` on anything else. */
export function decodeHistory(text: string): EpochHistory {
  if (typeof text !== 'string' || text === '') throw bad('empty')
  const spans = text.split(';').map((part) => {
    const fields = part.split(':')
    if (
      fields.length < 2 ||
      fields.length > 3 ||
      fields.some((f) => !/^(0|[1-9][0-9]{0,15})$/.test(f))
    )
      throw bad(`span ${JSON.stringify(part.slice(0, 40))}`)
    const [epoch, first, last] = fields.map(Number) as [number, number, number | undefined]
    return last === undefined ? { epoch, first } : { epoch, first, last }
  })
  return checkHistory(spans)
}

/** A history in its JSON form: `[[epoch, first, last?], ...]`. */
export type EpochHistoryWire = ([number, number] | [number, number, number])[]

/** The JSON form of a history. */
export function historyToWire(history: EpochHistory): EpochHistoryWire {
  return history.map((s) =>
    s.last === undefined ? [s.epoch, s.first] : [s.epoch, s.first, s.last],
  )
}

/** Parses a history's JSON form; throws `INVALID_REQUEST` on anything malformed. */
export function historyFromWire(json: unknown): EpochHistory {
  if (!Array.isArray(json)) throw bad('not an array')
  return checkHistory(
    json.map((item: unknown) => {
      if (!Array.isArray(item) || item.length < 2 || item.length > 3)
        throw bad('a span is [epoch, first, last?]')
      const [epoch, first, last] = item as unknown[]
      return last === undefined
        ? { epoch: epoch as number, first: first as number }
        : { epoch: epoch as number, first: first as number, last: last as number }
    }),
  )
}

/**
 * Checks a history: 1 to {@link MAX_HISTORY_SPANS} spans, epochs and firsts increasing, every span
 * but the last ended (`first - 1 <= last < next.first`), the last one open; returns it frozen.
 * @throws `INVALID_REQUEST`
 */
export function checkHistory(spans: readonly EpochSpan[]): EpochHistory {
  if (!Array.isArray(spans) || spans.length === 0) throw bad('no spans')
  if (spans.length > MAX_HISTORY_SPANS) throw bad(`more than ${MAX_HISTORY_SPANS} spans`)
  const out: EpochSpan[] = []
  spans.forEach((s, i) => {
    if (!isSafeCounter(s.epoch) || !isSafeCounter(s.first))
      throw bad(`span ${i}: epoch and first are counters`)
    const prev = out[i - 1]
    // The next epoch starts above what the previous kept (at its first when it kept none).
    if (prev && (s.epoch <= prev.epoch || s.first <= prev.last! || s.first < prev.first))
      throw bad(`span ${i} does not follow span ${i - 1}`)
    const lastSpan = i === spans.length - 1
    if (lastSpan && s.last !== undefined) throw bad('the current epoch has no last index yet')
    if (!lastSpan) {
      if (!Number.isSafeInteger(s.last) || s.last! < s.first - 1 || s.last! > MAX_SAFE_COUNTER)
        throw bad(`span ${i}: an ended epoch needs its last index (first - 1 when it kept none)`)
      if (s.last! >= spans[i + 1]!.first) throw bad(`span ${i} overlaps the next`)
    }
    out.push(
      Object.freeze(
        s.last === undefined
          ? { epoch: s.epoch, first: s.first }
          : { epoch: s.epoch, first: s.first, last: s.last },
      ),
    )
  })
  return Object.freeze(out)
}

/**
 * The history after a leader change: `history` with its current epoch ended at `last` (what the
 * new leader holds) and a new epoch `epoch` opened at `first`.
 */
export function nextEpoch(
  history: EpochHistory,
  last: number,
  epoch: number,
  first: number,
): EpochHistory {
  const current = history[history.length - 1]!
  const ended = {
    epoch: current.epoch,
    first: current.first,
    last: Math.max(current.first - 1, last),
  }
  return checkHistory([...history.slice(0, -1), ended, { epoch, first }])
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_REQUEST', `malformed epoch history: ${why}`)
}
