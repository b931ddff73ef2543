/**
 * Turns what ioredis and Redis throw into `CausewayError`s with stable codes: anything that means
 * "the server is not there or not able to serve now" is `BACKEND_UNAVAILABLE` (503); a refusal of
 * one of our scripts (`CW_...`) is its own code; a reply error we did not expect is `INTERNAL`.
 */
import { CausewayError, type ErrorCode } from '@causeway/core'

// The refusals of the replica scripts (replica-scripts.ts) that are the request's, not a fault.
const SCRIPT_REFUSALS = new Map<string, { code: ErrorCode; prefix: string }>([
  ['CW_BAD_CONTEXT', { code: 'INVALID_CONTEXT', prefix: 'invalid causeway-context: ' }],
  ['CW_COUNTER_EXHAUSTED', { code: 'COUNTER_EXHAUSTED', prefix: '' }],
  ['CW_QUARANTINED', { code: 'VALUE_QUARANTINED', prefix: '' }],
])

// Reply errors that mean "not now" rather than "wrong request".
const UNAVAILABLE_REPLIES = [
  'LOADING',
  'READONLY',
  'MASTERDOWN',
  'BUSY',
  'NOREPLICAS',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'OOM',
  'MISCONF',
  // The epoch scripts (epoch-scripts.ts): a write past the reserved ceiling (the writer reserves
  // more and tries again), a ceiling raise on a server that no longer holds the leader's claim.
  'CW_CEILING',
  'CW_NOT_LEADER',
]

/** Maps `error` from one backend operation to a `CausewayError`. */
export function backendError(error: unknown, backend: string, operation: string): CausewayError {
  if (error instanceof CausewayError) return error
  const message = error instanceof Error ? error.message : String(error)
  const details = { backend, operation, reason: message }
  const isReply = error instanceof Error && error.name === 'ReplyError'
  const refusal = isReply ? SCRIPT_REFUSALS.get(message.split(' ', 1)[0]!) : undefined
  if (refusal !== undefined)
    return new CausewayError(refusal.code, refusal.prefix + message.replace(/^\S+ /, ''), {
      backend,
      operation,
    })
  if (!isReply || UNAVAILABLE_REPLIES.some((prefix) => message.startsWith(prefix)))
    return new CausewayError(
      'BACKEND_UNAVAILABLE',
      `redis backend ${backend} is unavailable (${operation}): ${message}`,
      details,
      { cause: error },
    )
  return new CausewayError(
    'INTERNAL',
    `redis backend ${backend} failed (${operation}): ${message}`,
    details,
    {
      cause: error,
    },
  )
}
