/**
 * Checks of the gateway's success replies. A reply updates the session, so a malformed one must
 * be refused before it can corrupt the vectors; hand-written checks keep this to a few compares
 * per call and keep schema code out of the browser bundle.
 */
import {
  CausewayError,
  type ReadReply,
  type SiblingReply,
  type WriteReply,
  isHlc,
} from '@causeway/core'
import { invalidReply, isReplyHlc, isReplyIndex } from './reply-guard.js'

function isIndex(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min
}

function isRegion(v: unknown, regions: number): v is number {
  return isIndex(v, 0) && v < regions
}

const OUT_OF_BOUNDS = 'an index over 2^53 - 2 or a time far ahead'

function malformed(what: string, body: unknown): CausewayError {
  return new CausewayError('INTERNAL', `the gateway sent a malformed ${what} reply`, { body })
}

/** A `GET /v1/kv/:key` reply, or `INTERNAL` when it is malformed. */
export function checkReadReply(body: unknown, regions: number): ReadReply {
  const r = body as Partial<ReadReply> | null
  if (
    typeof r !== 'object' ||
    r === null ||
    typeof r.found !== 'boolean' ||
    !isIndex(r.epoch, 1) ||
    !isRegion(r.region, regions) ||
    (r.ts !== undefined && !isHlc(r.ts)) ||
    (r.dc !== undefined && !isRegion(r.dc, regions)) ||
    (r.idx !== undefined && !isIndex(r.idx, 0)) ||
    (r.tid !== undefined && !isIndex(r.tid, 0)) ||
    (r.found && (r.ts === undefined || r.dc === undefined || r.idx === undefined)) ||
    (r.context !== undefined && typeof r.context !== 'string') ||
    (r.siblings !== undefined && !areSiblings(r.siblings, regions))
  ) {
    throw malformed('read', body)
  }
  // Within the gateway's own bounds, or INVALID_REPLY: these go out in the next call's headers.
  // Checked without allocating on the common path (every read passes here).
  const now = Date.now()
  if (
    !isReplyIndex(r.epoch, 1) ||
    (r.idx !== undefined && !isReplyIndex(r.idx, 0)) ||
    (r.tid !== undefined && !isReplyIndex(r.tid, 0)) ||
    (r.ts !== undefined && !isReplyHlc(r.ts, now)) ||
    (r.siblings !== undefined &&
      !r.siblings.every((s) => isReplyIndex(s.idx, 0) && isReplyHlc(s.ts, now)))
  )
    throw invalidReply('read', OUT_OF_BOUNDS, body)
  return r as ReadReply
}

function areSiblings(siblings: unknown, regions: number): boolean {
  return (
    Array.isArray(siblings) &&
    siblings.every((s: Partial<SiblingReply> | null) => {
      return (
        typeof s === 'object' &&
        s !== null &&
        isHlc(s.ts) &&
        isRegion(s.dc, regions) &&
        isIndex(s.idx, 0)
      )
    })
  )
}

/** A `PUT`/`DELETE /v1/kv/:key` reply, or `INTERNAL` when it is malformed. */
export function checkWriteReply(body: unknown, regions: number): WriteReply {
  const r = body as Partial<WriteReply> | null
  if (
    typeof r !== 'object' ||
    r === null ||
    !isHlc(r.ts) ||
    !isRegion(r.dc, regions) ||
    !isIndex(r.idx, 1) ||
    !isIndex(r.epoch, 1) ||
    !isRegion(r.region, regions) ||
    (r.context !== undefined && typeof r.context !== 'string')
  ) {
    throw malformed('write', body)
  }
  if (!isReplyIndex(r.idx, 1) || !isReplyIndex(r.epoch, 1) || !isReplyHlc(r.ts))
    throw invalidReply('write', OUT_OF_BOUNDS, body)
  return r as WriteReply
}
