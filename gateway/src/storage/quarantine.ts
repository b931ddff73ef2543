/**
 * Quarantine: what a replica does with stored data it cannot decode (a corrupt store, or a value
 * an older, buggy version wrote), so that one bad key never stops its partition.
 *
 * A replica that finds a key's stored value undecodable
 * - refuses reads of that key with `VALUE_QUARANTINED` (500), never a guess;
 * - keeps applying and shipping its partition's log: entries for the key are logged and `sv`
 *   advances, only their merge into the bad value is left out;
 * - rebuilds the key from its own log (`repair`): every sibling write's log entry carries its
 *   origin's whole set of the key, so the `sync` of every decodable logged set of a key is what
 *   the replica would hold, and for a last-writer-wins key the logged version with the highest
 *   `(ts, dc)` is the winner. That is sound only because partition logs are never trimmed.
 *   Logged sets that do not decode are left out: a write whose set does not decode was refused
 *   when it was made (the forged contexts of issue 12), or the log itself is damaged.
 *
 * Every such event goes to a {@link QuarantineSink}; the gateway's {@link QuarantineRegistry}
 * reports it once per key in the log (rate-limited), counts it for `/metrics` and lists the keys
 * still quarantined in `GET /v1/status`.
 */
import { CausewayError, type QuarantineStatus } from '@causeway/core'
import { processLogger } from '../log.js'

/** Which stored form could not be decoded. */
export type QuarantineKind = 'siblings' | 'version'

/** Where: one key of one replica. */
export interface QuarantinePlace {
  region: number
  partition: number
  replica: number
  key: string
}

/** A key whose stored value could not be decoded. */
export interface QuarantineEvent extends QuarantinePlace {
  kind: QuarantineKind
  /** What the decoder said. */
  reason: string
}

/** A log entry applied without merging its (undecodable) sibling set. */
export interface SkippedEntryEvent extends QuarantinePlace {
  origin: number
  idx: number
  reason: string
}

/** Where replicas report quarantine events. */
export interface QuarantineSink {
  /** The stored value of a key could not be decoded: the key is quarantined at that replica. */
  quarantined(event: QuarantineEvent): void
  /** The key was rebuilt from the replica's log and is served again. */
  repaired(place: QuarantinePlace): void
  /** An entry's sibling set could not be decoded; the entry was logged, not merged. */
  skipped(event: SkippedEntryEvent): void
}

/** The error a read of a quarantined key fails with. */
export function quarantinedError(event: QuarantineEvent): CausewayError {
  return new CausewayError(
    'VALUE_QUARANTINED',
    `the stored value of ${JSON.stringify(event.key)} at replica ${event.replica} of partition ${event.partition} does not decode; the key is quarantined and being rebuilt from the log`,
    {
      key: event.key,
      region: event.region,
      partition: event.partition,
      replica: event.replica,
      kind: event.kind,
    },
  )
}

/** A sink that drops everything (replicas made without one, in tests). */
export const IGNORE_QUARANTINE: QuarantineSink = Object.freeze({
  quarantined: () => {},
  repaired: () => {},
  skipped: () => {},
})

/** Options of a {@link QuarantineRegistry}. */
export interface QuarantineRegistryOptions {
  /**
   * Where report lines go.
   * @default a warning of `log.ts`'s process logger
   */
  log?: (line: string) => void
  /**
   * Most report lines per minute, whatever the number of keys; lines past it are counted and
   * mentioned in the next line that is written.
   * @default 10
   */
  linesPerMinute?: number
  /**
   * Most quarantined keys listed in the status (the counts are always exact).
   * @default 100
   */
  maxListed?: number
  /** The wall clock in ms. @default Date.now */
  now?: () => number
}

interface Listed extends QuarantineEvent {
  since: number
}

const MAX_REASON = 200
// Past this many reported subjects only the rate limit holds the lines back (bounded memory).
const MAX_REMEMBERED = 10_000

/** The quarantine events of one region: reported, counted and listed. */
export class QuarantineRegistry implements QuarantineSink {
  readonly #log: (line: string) => void
  readonly #linesPerMinute: number
  readonly #maxListed: number
  readonly #now: () => number
  /** Keys quarantined now, by place. */
  readonly #current = new Map<string, Listed>()
  /** Keys already reported, so each is reported once (per process) however often it is hit. */
  readonly #reported = new Set<string>()
  #detected = 0
  #repaired = 0
  #skipped = 0
  #windowStart = 0
  #linesInWindow = 0
  #suppressed = 0

  constructor(options: QuarantineRegistryOptions = {}) {
    this.#log = options.log ?? ((line) => processLogger().warn(line))
    this.#linesPerMinute = options.linesPerMinute ?? 10
    this.#maxListed = options.maxListed ?? 100
    this.#now = options.now ?? Date.now
  }

  quarantined(event: QuarantineEvent): void {
    const id = placeId(event)
    if (this.#current.has(id)) return
    this.#detected++
    const reason = event.reason.slice(0, MAX_REASON)
    this.#current.set(id, { ...event, reason, since: this.#now() })
    this.#report(
      id,
      `causeway: quarantined ${JSON.stringify(event.key)} at replica ${event.replica} of partition ${event.partition} in region ${event.region}: its stored ${event.kind === 'siblings' ? 'sibling set' : 'version'} does not decode (${reason}); reads of it fail with VALUE_QUARANTINED until it is rebuilt from the log`,
    )
  }

  repaired(place: QuarantinePlace): void {
    const id = placeId(place)
    if (!this.#current.delete(id)) return
    this.#repaired++
    this.#report(
      `${id}/repaired`,
      `causeway: rebuilt ${JSON.stringify(place.key)} from the log at replica ${place.replica} of partition ${place.partition} in region ${place.region}`,
    )
  }

  skipped(event: SkippedEntryEvent): void {
    this.#skipped++
    this.#report(
      `${placeId(event)}/entry`,
      `causeway: entry ${event.origin}:${event.idx} for ${JSON.stringify(event.key)} at replica ${event.replica} of partition ${event.partition} in region ${event.region} carries a sibling set that does not decode (${event.reason.slice(0, MAX_REASON)}); it is logged but not merged`,
    )
  }

  /** The status section: counts since start and the keys quarantined now. */
  status(): QuarantineStatus {
    const keys = [...this.#current.values()].slice(0, this.#maxListed).map((e) => ({
      partition: e.partition,
      replica: e.replica,
      key: e.key,
      kind: e.kind,
      reason: e.reason,
      since: new Date(e.since).toISOString(),
    }))
    return {
      quarantined: this.#current.size,
      detected: this.#detected,
      repaired: this.#repaired,
      skippedEntries: this.#skipped,
      keys,
    }
  }

  // One line per subject for the life of the process, at most `linesPerMinute` a minute.
  #report(subject: string, line: string): void {
    if (this.#reported.has(subject)) return
    if (this.#reported.size < MAX_REMEMBERED) this.#reported.add(subject)
    const now = this.#now()
    if (now - this.#windowStart >= 60_000) {
      this.#windowStart = now
      this.#linesInWindow = 0
    }
    if (this.#linesInWindow >= this.#linesPerMinute) {
      this.#suppressed++
      return
    }
    this.#linesInWindow++
    const more = this.#suppressed
    this.#suppressed = 0
    this.#log(more > 0 ? `${line} (${more} more quarantine reports were dropped)` : line)
  }
}

function placeId(place: QuarantinePlace): string {
  return `${place.region}/${place.partition}/${place.replica}/${place.key}`
}
