/**
 * Turns what ioredis and Redis throw into `CausewayError`s with stable codes: anything that means
 * "the server is not there or not able to serve now" is `BACKEND_UNAVAILABLE` (503); a reply error
 * we did not expect is `INTERNAL`.
 */
import { CausewayError } from '@causeway/core'

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
]

/** Maps `error` from one backend operation to a `CausewayError`. */
export function backendError(error: unknown, backend: string, operation: string): CausewayError {
  if (error instanceof CausewayError) return error
  const message = error instanceof Error ? error.message : String(error)
  const details = { backend, operation, reason: message }
  const isReply = error instanceof Error && error.name === 'ReplyError'
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
