/** Log entries and shipping envelopes for storage and replication tests. */
import {
  type Hlc,
  type KeyEntry,
  type LogEntry,
  type SetOpEntry,
  type ShipEnvelope,
  type SiblingsEntry,
  keyEntry,
  setOpEntry,
  siblingsEntry,
} from '@causeway/core'

/** A shipped or replicated key write: a put of `value`, or a delete when it is undefined. */
export function entry(
  origin: number,
  idx: number,
  key: string,
  value: string | undefined,
  ts: Hlc,
  at = Date.now(),
): KeyEntry {
  return keyEntry({ origin, idx, key, ts, at }, value)
}

/** A shipped or replicated write of a siblings key, carrying the key's set after it. */
export function siblingEntry(
  origin: number,
  idx: number,
  key: string,
  siblings: string,
  ts: Hlc,
  at = Date.now(),
): SiblingsEntry {
  return siblingsEntry({ origin, idx, key, ts, at }, siblings)
}

/** A shipped or replicated set write. */
export function setEntry(
  origin: number,
  idx: number,
  name: string,
  setDelta: string,
  ts: Hlc,
  at = Date.now(),
): SetOpEntry {
  return setOpEntry({ origin, idx, key: name, ts, at }, setDelta)
}

/**
 * The envelope of `entries` from region `from`, as a sender makes it but unchecked, so a test can
 * also ship what a sender never should (a hole, another origin's entry): the receiver checks it.
 */
export function ship(from: number, entries: readonly LogEntry[], epoch = 1): ShipEnvelope {
  return {
    v: 1,
    from,
    epoch,
    first: entries[0]?.idx ?? 1,
    last: entries.at(-1)?.idx ?? 0,
    entries,
  }
}
