/**
 * Update labels of the causal shipping mode (Eunomia, thesis sections 3.1–3.4): the metadata of an
 * update, without its data. A region's stabiliser orders its partitions' labels by timestamp once
 * they are stable and ships them to the other regions as one stream; the data travels on its own,
 * by the per-partition shippers, and a receiver applies an update once both have arrived and its
 * dependencies are applied (Algorithm 5).
 *
 * A label is `{ p, idx, vts }`: the update's partition, its idx in its origin's log of that
 * partition (which names its data), and its vector timestamp: `vts[origin]` is the update's HLC,
 * the other entries what it depends on in each other region.
 *
 * The label envelope, `{ v, from, stable, labels }`, is what a stabiliser sends another region:
 * labels of region `from` in stream order (timestamp, then partition; each partition's labels in
 * idx order, consecutive), and `stable`, a time up to which `from` has sent every label (in this
 * envelope or before it; an envelope in the middle of a run repeats an earlier one). An envelope
 * without labels only moves `stable` on (a heartbeat of the region).
 */
import { isRegionId, isSafeCounter } from './counter-bounds.js'
import { CausewayError } from './errors.js'
import { type Hlc, hlcMillis, isHlc } from './hlc.js'

/** One update label. Frozen. */
export interface Label {
  /** Partition of the update. */
  readonly p: number
  /** The update's idx in its origin region's log of partition `p`. */
  readonly idx: number
  /** The update's vector timestamp, one HLC per region; the origin's entry is the update's HLC. */
  readonly vts: readonly Hlc[]
}

/** The label envelope format this version writes and reads. */
export const LABEL_ENVELOPE_VERSION = 1

/** The label envelope versions this version reads. */
export const LABEL_ENVELOPE_VERSIONS: readonly number[] = [LABEL_ENVELOPE_VERSION]

/** Labels of one region on their way to another. Frozen. */
export interface LabelEnvelope {
  readonly v: typeof LABEL_ENVELOPE_VERSION
  /** The origin region of the labels. */
  readonly from: number
  /** `from` has sent every label with a timestamp up to this one. */
  readonly stable: Hlc
  readonly labels: readonly Label[]
}

/** What a label check needs to know of the cluster. */
export interface LabelScope {
  regions: number
  partitions: number
  /**
   * The wall clock, in ms, and how far past it a timestamp may be: one further ahead is refused
   * with `CLOCK_SKEW_EXCEEDED`. Without `nowMs`, times are not checked against a clock.
   */
  nowMs?: number
  /** @default an hour and a half */
  maxAheadMs?: number
}

/** The default {@link LabelScope.maxAheadMs}: past any clock offset a cluster allows. */
export const DEFAULT_LABEL_MAX_AHEAD_MS = 5_400_000

/** Most labels in one envelope. */
export const MAX_LABELS_PER_ENVELOPE = 100_000

/** A label, frozen (its `vts` too). */
export function label(p: number, idx: number, vts: readonly Hlc[]): Label {
  return Object.freeze({ p, idx, vts: Object.freeze([...vts]) })
}

/** The HLC of a label of region `origin`. */
export function labelTs(l: Label, origin: number): Hlc {
  return l.vts[origin]!
}

/** Stream order of two labels of one origin: by timestamp, then by partition. */
export function compareLabels(a: Label, b: Label, origin: number): number {
  const ta = a.vts[origin]!
  const tb = b.vts[origin]!
  if (ta !== tb) return ta < tb ? -1 : 1
  return a.p - b.p
}

/** The envelope of `labels` (already in stream order) of region `from`, frozen. */
export function labelEnvelope(from: number, stable: Hlc, labels: readonly Label[]): LabelEnvelope {
  return Object.freeze({
    v: LABEL_ENVELOPE_VERSION,
    from,
    stable,
    labels: Object.freeze([...labels]),
  })
}

/**
 * Checks one label of region `origin` and returns it frozen.
 * @throws `INVALID_LABEL` for a partition the cluster does not have (`details.field: 'p'`) or an
 * idx that is not a counter; `INVALID_VECTOR` for a `vts` without one entry per region;
 * `INVALID_HLC` for an entry that is not an HLC; `CLOCK_SKEW_EXCEEDED` for a time too far ahead.
 */
export function checkLabel(raw: unknown, origin: number, scope: LabelScope): Label {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid('a label must be an object { p, idx, vts }', 'label')
  const l = raw as Record<string, unknown>
  if (typeof l.p !== 'number' || !Number.isInteger(l.p) || l.p < 0 || l.p >= scope.partitions)
    throw invalid(
      `partition ${JSON.stringify(l.p)} does not exist (the cluster has ${scope.partitions})`,
      'p',
      { partition: typeof l.p === 'number' ? l.p : null, partitions: scope.partitions },
    )
  if (!isSafeCounter(l.idx)) throw invalid('idx is not in 1..2^53 - 2', 'idx')
  checkVector(l.vts, scope, 'vts')
  const vts = l.vts as Hlc[]
  checkAhead(vts[origin]!, scope, `the label of partition ${l.p} idx ${l.idx}`)
  if (Object.isFrozen(raw) && Object.isFrozen(l.vts)) return raw as Label
  return label(l.p, l.idx, vts)
}

/**
 * Checks a label envelope received by region `to` and returns it frozen.
 * @throws `UNSUPPORTED_LOG_FORMAT` for a version this version does not read; `INVALID_LABEL` for
 * an envelope that is not one, of a region that is not another one, or with labels out of stream
 * order (each partition's idx consecutive, timestamps growing); and the label errors of
 * {@link checkLabel}. Nothing of a refused envelope may be taken.
 */
export function checkLabelEnvelope(json: unknown, to: number, scope: LabelScope): LabelEnvelope {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw invalid('a label envelope must be an object { v, from, stable, labels }', 'envelope')
  const e = json as Record<string, unknown>
  if (typeof e.v !== 'number' || !LABEL_ENVELOPE_VERSIONS.includes(e.v))
    throw new CausewayError(
      'UNSUPPORTED_LOG_FORMAT',
      `label envelope version ${JSON.stringify(e.v) ?? 'undefined'} is not one this gateway reads (it reads ${LABEL_ENVELOPE_VERSIONS.join(', ')})`,
      {
        field: 'v',
        got: typeof e.v === 'number' ? e.v : null,
        supported: [...LABEL_ENVELOPE_VERSIONS],
      },
    )
  if (!isRegionId(e.from, scope.regions) || e.from === to)
    throw invalid(
      `from ${JSON.stringify(e.from)} is not another region of ${scope.regions}`,
      'from',
    )
  const from = e.from
  if (!isHlc(e.stable))
    throw new CausewayError('INVALID_HLC', 'stable is not an HLC (16 lowercase hex digits)')
  checkAhead(e.stable, scope, 'stable')
  if (!Array.isArray(e.labels)) throw invalid('labels must be an array', 'labels')
  if (e.labels.length > MAX_LABELS_PER_ENVELOPE)
    throw invalid(`more than ${MAX_LABELS_PER_ENVELOPE} labels`, 'labels')
  const labels = (e.labels as unknown[]).map((raw) => checkLabel(raw, from, scope))
  const last = new Map<number, Label>()
  labels.forEach((l, i) => {
    if (i > 0 && compareLabels(labels[i - 1]!, l, from) >= 0)
      throw invalid(
        `label ${i} (partition ${l.p} idx ${l.idx}) is not after the one before it in (timestamp, partition) order`,
        'labels',
      )
    const before = last.get(l.p)
    if (before !== undefined && l.idx !== before.idx + 1)
      throw invalid(
        `partition ${l.p}: idx ${l.idx} does not follow idx ${before.idx} (labels of a partition are consecutive)`,
        'idx',
      )
    last.set(l.p, l)
  })
  if (Object.isFrozen(json) && labels.every((l, i) => l === (e.labels as unknown[])[i]))
    return json as LabelEnvelope
  return labelEnvelope(from, e.stable, labels)
}

/**
 * Checks a vector timestamp (or clock) given as data: an array of one HLC per region.
 * @throws `INVALID_VECTOR` for the wrong length, `INVALID_HLC` for an entry that is not an HLC.
 */
export function checkVector(
  value: unknown,
  scope: Pick<LabelScope, 'regions'>,
  what: string,
): void {
  if (!Array.isArray(value) || value.length !== scope.regions)
    throw new CausewayError(
      'INVALID_VECTOR',
      `${what} must have one HLC per region (${scope.regions}), not ${Array.isArray(value) ? value.length : typeof value}`,
      { regions: scope.regions, entries: Array.isArray(value) ? value.length : null },
    )
  value.forEach((t, d) => {
    if (!isHlc(t))
      throw new CausewayError(
        'INVALID_HLC',
        `${what}[${d}] is not an HLC (16 lowercase hex digits)`,
      )
  })
}

/**
 * Throws `CLOCK_SKEW_EXCEEDED` when `ts` is further ahead of `scope.nowMs` than
 * `scope.maxAheadMs` (nothing without a clock).
 */
export function checkAhead(
  ts: Hlc,
  scope: Omit<LabelScope, 'regions' | 'partitions'>,
  what: string,
): void {
  if (scope.nowMs === undefined) return
  const aheadMs = hlcMillis(ts) - scope.nowMs
  const maxAheadMs = scope.maxAheadMs ?? DEFAULT_LABEL_MAX_AHEAD_MS
  if (aheadMs > maxAheadMs)
    throw new CausewayError(
      'CLOCK_SKEW_EXCEEDED',
      `${what} is ${Math.round(aheadMs)} ms ahead of this region's clock; at most ${maxAheadMs} ms is taken`,
      { aheadMs, maxAheadMs },
    )
}

function invalid(why: string, field: string, details: Record<string, unknown> = {}): CausewayError {
  return new CausewayError('INVALID_LABEL', `invalid label: ${why}`, { field, ...details })
}
