/**
 * The body of a read reply. The service keeps values as JSON text, so the reply splices that text
 * in as it is instead of parsing it only for Fastify to stringify it again (for a 64 KiB value
 * that round trip costs more than the rest of the request; see `docs/protocol.md`).
 */
import type { ReadReply } from '@causeway/core'
import type { ReadResult } from '../cluster/cluster-service.js'

/** The reply fields other than `value`, in the shape of the wire schema. */
export function readReplyFields(result: ReadResult, region: number): ReadReply {
  const version = result.version
  const reply: ReadReply = {
    found: version !== undefined && version.value !== undefined,
    epoch: result.epoch,
    region,
    replica: result.replica,
    waitedMs: result.waitedMs,
  }
  // A tombstone is not found, but it is a version: its ts/dc/idx still advance the session.
  if (version !== undefined) {
    reply.ts = version.ts
    reply.dc = version.dc
    if (result.idx !== undefined) reply.idx = result.idx
  }
  return reply
}

/** The JSON text of a read reply, with the stored value text spliced in. */
export function readReplyJson(result: ReadResult, region: number): string {
  const fields = JSON.stringify(readReplyFields(result, region))
  const value = result.version?.value
  if (value === undefined) return fields
  // `fields` is a non-empty object ending in `}`: append `,"value":<text>` before that brace.
  return fields.slice(0, -1) + ',"value":' + value + '}'
}
