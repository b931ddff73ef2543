/**
 * The classification every queued write goes through: applied, still pending, or refused for
 * good, and the write result's wire form as it travels between tabs.
 */
import { CausewayError, type Hlc } from '@causeway/core'
import type { WriteResult } from '../client.js'

/** A write result as JSON (what the gateway answered, plus the op id). */
export interface WriteResultBody {
  ts: Hlc
  dc: number
  idx: number
  epoch: number
  region: number
  context?: string
  opId: string
}

/**
 * Whether a failed write may succeed later unchanged: no reply at all, the deadline, a gateway
 * that cannot serve now (5xx), a rate limit (429) or a request that did not arrive in time
 * (408). Everything else (4xx) is about the request itself, so the same request fails again.
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof CausewayError)) return true
  if (error.code === 'NETWORK_ERROR' || error.code === 'TIMEOUT') return true
  if (error.code === 'SHUTTING_DOWN' && error.details === undefined) return true
  return error.status >= 500 || error.status === 429 || error.status === 408
}

/** Whether a failure means the gateway could not be reached at all. */
export function isUnreachable(error: unknown): boolean {
  return (
    error instanceof CausewayError && (error.code === 'NETWORK_ERROR' || error.code === 'TIMEOUT')
  )
}

/** A write result as it travels between tabs. */
export function bodyOf(result: WriteResult): WriteResultBody {
  const body: WriteResultBody = {
    ts: result.ts,
    dc: result.dc,
    idx: result.idx,
    epoch: result.epoch,
    region: result.region,
    opId: result.opId,
  }
  if (result.context !== undefined) body.context = result.context
  return body
}

/** ... and back. */
export function resultOf(body: WriteResultBody): WriteResult {
  return { pending: false, ...body, context: body.context }
}

/** `error` as a `CausewayError` (`INTERNAL` for anything else), for the `error` event. */
export function asCausewayError(error: unknown): CausewayError {
  return error instanceof CausewayError
    ? error
    : new CausewayError('INTERNAL', (error as Error)?.message ?? String(error), undefined, {
        cause: error,
      })
}
