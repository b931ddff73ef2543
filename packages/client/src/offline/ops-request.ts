/**
 * One request of the replay: `POST /v1/ops` with a batch of queued ops, cut from the head of the
 * outbox so the gateway can apply it in one go, and its reply read as results per op.
 */
import {
  CausewayError,
  HLC_ZERO,
  hlcMax,
  type ErrorBody,
  type Session,
  type Topology,
} from '@causeway/core'
import { CallDeadline } from '../call-deadline.js'
import type { ClientParts } from '../client-access.js'
import type { WriteResult } from '../client.js'
import { sendWithRateLimitBackoff } from '../rate-limit-backoff.js'
import { checkWriteReply } from '../replies.js'
import type { StoredOp } from './outbox-types.js'
import { isTransient } from './outcome.js'

// Bytes of JSON one batch may carry: the gateway takes 8 single-write bodies; leave room.
const BATCH_VALUE_FACTOR = 4

/** An outbox row: its key and the op. */
export type OutboxRow = [string, StoredOp]

/** What became of a batch. */
export type BatchOutcome =
  /** No answer, or one saying to try later: nothing is known of the ops. */
  | { kind: 'transient'; error: CausewayError }
  /** The gateway would not take a body that large: send fewer. */
  | { kind: 'too-large' }
  /**
   * The results of the ops applied, in order, and the error of the op the gateway stopped at
   * (`index` -1: the request as a whole was refused, every op of it).
   */
  | { kind: 'done'; results: WriteResult[]; error?: { index: number; error: CausewayError } }

/** A batch to send: its rows, and per op id sent the earlier rows folded into it. */
export interface Batch {
  rows: OutboxRow[]
  /**
   * Consecutive edits of one siblings key, each made over the one before, go as one op: the
   * last's id and value with the first's context (`foldable`). Keyed by the op id sent, the rows
   * it stands for besides its own, oldest first; they leave the outbox with it.
   */
  folded: Map<string, OutboxRow[]>
}

/**
 * Whether `op` can be folded into `into`, the op before it in the outbox: an edit of the same key
 * made over it (a local context, `~<opId>`, so the key is of a siblings namespace), for the same
 * region, durability and level. Sent one after the other, the second would need the first's
 * reply context, which cannot name the first's version alone when the region's leader holds a
 * version of the key the device never saw (a DVVSet keeps one counter per region: a context
 * covering the first's dot covers every earlier dot of that region too), so the two would stay
 * as siblings of each other. Folded, the key gets one version, superseding what the first was
 * based on.
 */
function foldable(into: StoredOp, op: StoredOp): boolean {
  return (
    op.afterOp === into.opId &&
    op.key === into.key &&
    (op.kind === 'put' || op.kind === 'delete') &&
    (into.kind === 'put' || into.kind === 'delete') &&
    op.region === into.region &&
    op.durability === into.durability &&
    op.level === into.level
  )
}

/**
 * The next batch: consecutive ops for one region with one durability, within the body budget,
 * ending before an op made over an op of the same batch (its context comes from that reply),
 * unless it directly follows that op: then the two are folded into one ({@link foldable}).
 * A chain of edits is never cut, so a batch sent again after a lost reply sends it whole again.
 */
export function cutBatch(rows: OutboxRow[], topology: Topology): Batch {
  const first = rows[0]![1]
  const budget = topology.limits.maxValueBytes * BATCH_VALUE_FACTOR
  const ids = new Set<string>()
  let bytes = 0
  const batch: OutboxRow[] = []
  const folded = new Map<string, OutboxRow[]>()
  // The original row behind the last op of `batch` (a folded one is a copy).
  let lastRow: OutboxRow | undefined
  for (const row of rows) {
    const op = row[1]
    const prev = batch.at(-1)
    if (prev !== undefined && foldable(lastRow![1], op)) {
      const into = prev[1]
      const merged: StoredOp = { ...op, dt: hlcMax(into.dt, op.dt) }
      delete merged.afterOp
      delete merged.context
      if (into.afterOp !== undefined) merged.afterOp = into.afterOp
      if (into.context !== undefined) merged.context = into.context
      folded.set(op.opId, [...(folded.get(into.opId) ?? []), lastRow!])
      folded.delete(into.opId)
      batch[batch.length - 1] = [row[0], merged]
      ids.add(op.opId)
      lastRow = row
      continue
    }
    if (op.region !== first.region || op.durability !== first.durability) break
    if (op.afterOp !== undefined && ids.has(op.afterOp)) break
    const size = op.value === undefined ? 64 : JSON.stringify(op.value).length + 64
    if (batch.length > 0 && bytes + size > budget) break
    bytes += size
    ids.add(op.opId)
    batch.push(row)
    lastRow = row
  }
  return { rows: batch, folded }
}

/** Sends `batch` to its region's gateway and reads the reply. */
export async function sendBatch(
  parts: ClientParts,
  session: Session,
  batch: OutboxRow[],
): Promise<BatchOutcome> {
  const region = parts.regions[batch[0]![1].region] ?? parts.home
  const ops = batch.map(([, op]) => wireOp(op, session))
  const body = JSON.stringify({ ops })
  const timeoutMs = Math.max(parts.defaults.timeoutMs, 10_000)
  const deadline = new CallDeadline(timeoutMs, undefined, parts.closing)
  let res
  try {
    res = await sendWithRateLimitBackoff(
      parts.transport,
      {
        method: 'POST',
        url: `${region.url}/v1/ops?durability=${batch[0]![1].durability}`,
        headers: { ...parts.headers, 'content-type': 'application/json' },
        body,
        signal: deadline.signal,
      },
      deadline,
    )
  } catch (cause) {
    const error =
      cause instanceof CausewayError
        ? cause
        : new CausewayError(
            deadline.signal.aborted ? 'TIMEOUT' : 'NETWORK_ERROR',
            `replay to region ${region.name} (${region.url}) failed: ${(cause as Error)?.message ?? String(cause)}`,
            { region: region.id, url: region.url },
            { cause },
          )
    return { kind: 'transient', error }
  } finally {
    deadline.dispose()
  }
  if (res.status !== 200) {
    const error = CausewayError.fromBody(res.body, res.status)
    if (isTransient(error)) return { kind: 'transient', error }
    if (res.status === 413 && batch.length > 1) return { kind: 'too-large' }
    // A malformed envelope cannot be made by this SDK for a valid op; what is left is about
    // the request as a whole (credentials, a batch the gateway will not take): every op of it.
    if (batch.length === 1) return { kind: 'done', results: [], error: { index: 0, error } }
    return { kind: 'done', results: [], error: { index: -1, error } }
  }
  const reply = res.body as {
    results?: unknown
    error?: Partial<ErrorBody> & { index?: unknown }
  } | null
  // A reply that does not account for every op (results for some, then the error that stopped
  // the rest) tells nothing sure: the replay stops and tries again later rather than loop on it.
  const raw: unknown[] | undefined = Array.isArray(reply?.results) ? reply.results : undefined
  const stoppedAt = reply?.error?.index
  const accounted =
    raw !== undefined &&
    (reply?.error === undefined
      ? raw.length === batch.length
      : raw.length < batch.length && (stoppedAt === undefined || stoppedAt === raw.length))
  if (!accounted)
    return {
      kind: 'transient',
      error: new CausewayError('INTERNAL', 'the gateway sent a malformed ops reply', {
        body: res.body,
      }),
    }
  const results: WriteResult[] = []
  try {
    for (const [i, r] of raw.entries()) {
      const checked = checkWriteReply(r, parts.regions.length)
      results.push({
        pending: false,
        opId: batch[i]![1].opId,
        ts: checked.ts,
        dc: checked.dc,
        idx: checked.idx,
        epoch: checked.epoch,
        region: checked.region,
        context: checked.context,
      })
    }
  } catch (error) {
    return { kind: 'transient', error: error as CausewayError }
  }
  if (reply?.error !== undefined) {
    const error = CausewayError.fromBody(reply.error, reply.error.statusCode)
    return { kind: 'done', results, error: { index: results.length, error } }
  }
  return { kind: 'done', results }
}

/** A queued op as `POST /v1/ops` takes it, with the dependency it needs now. */
function wireOp(op: StoredOp, session: Session): Record<string, unknown> {
  const dt = hlcMax(op.dt, session.writeDependency(op.level))
  const wire: Record<string, unknown> = { opId: op.opId, kind: op.kind }
  if (op.kind === 'put' || op.kind === 'delete') {
    wire.key = op.key
    if (op.kind === 'put') wire.value = op.value
    if (op.context !== undefined) wire.context = op.context
  } else {
    wire.name = op.key
    wire.elements = op.elements
  }
  wire.level = op.level
  if (dt !== HLC_ZERO) wire.dt = dt
  return wire
}
