/**
 * The body of a read reply. The service keeps values as JSON text, so the reply splices that text
 * in as it is instead of parsing it only for Fastify to stringify it again (for a 64 KiB value
 * that round trip costs more than the rest of the request; see `docs/protocol.md`).
 *
 * A read of a siblings namespace lists every sibling (tombstones included) with its version and
 * value, and the causal context to send back with a superseding write. `found` says whether any
 * sibling holds a value; `value` is set only when exactly one does (otherwise the caller must
 * choose or merge); `ts`, `dc` and `idx` name the newest sibling.
 */
import type { ReadReply } from '@causeway/core'
import type { ReadResult } from '../cluster/cluster-service.js'
import { type ContextIssuer, issueContext } from '../cluster/sibling-contexts.js'

/**
 * The reply fields other than `value` and `siblings`, in the shape of the wire schema; `context`
 * is the signed context of a siblings read ({@link contextHeader}).
 */
export function readReplyFields(result: ReadResult, region: number, context?: string): ReadReply {
  const version = result.version
  const found =
    result.siblings !== undefined
      ? result.siblings.some((s) => s.value !== undefined)
      : version !== undefined && version.value !== undefined
  const reply: ReadReply = {
    found,
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
  if (context !== undefined) reply.context = context
  if (result.tid !== undefined) reply.tid = result.tid
  return reply
}

/**
 * The `causeway-context` of a siblings read of `key`, signed by `issuer`'s cluster; undefined for
 * a last-writer-wins read.
 */
export function contextHeader(
  result: ReadResult,
  key: string,
  issuer: ContextIssuer,
): string | undefined {
  return result.context === undefined ? undefined : issueContext(issuer, key, result.context)
}

/** The JSON text of a read reply, with the stored value texts spliced in. */
export function readReplyJson(result: ReadResult, region: number, context?: string): string {
  const fields = JSON.stringify(readReplyFields(result, region, context))
  // `fields` is a non-empty object ending in `}`: append members before that brace.
  let extra = ''
  if (result.siblings !== undefined) {
    const live = result.siblings.filter((s) => s.value !== undefined)
    if (live.length === 1) extra += ',"value":' + live[0]!.value
    const listed = result.siblings.map((s) => {
      const head = JSON.stringify({ ts: s.ts, dc: s.dc, idx: s.idx })
      return s.value === undefined ? head : head.slice(0, -1) + ',"value":' + s.value + '}'
    })
    extra += ',"siblings":[' + listed.join(',') + ']'
  } else {
    const value = result.version?.value
    if (value !== undefined) extra = ',"value":' + value
  }
  return extra === '' ? fields : fields.slice(0, -1) + extra + '}'
}
