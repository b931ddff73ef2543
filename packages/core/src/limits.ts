/** Input limits shared by the SDK (to fail early) and the gateway (to enforce them). */
import { CausewayError } from './errors.js'

/** A cluster's limits; the gateway publishes them in its topology. */
export interface Limits {
  /** Longest key, in bytes of UTF-8. @default 512 */
  maxKeyBytes: number
  /** Largest value, in bytes of its JSON encoding. @default 1 MiB */
  maxValueBytes: number
  /** How far ahead of the gateway's clock a write's dependency may be, in ms. @default 30000 */
  maxSkewMs: number
  /** Deadline of a read that waits for a replica, when the call gives none, in ms. @default 5000 */
  defaultTimeoutMs: number
  /** Longest deadline a call may ask for, in ms. @default 60000 */
  maxTimeoutMs: number
  /** Most distinct keys a transaction may read and write. @default 128 */
  maxTxKeys: number
  /** Largest sum of a transaction's written values, in bytes of JSON. @default 4 MiB */
  maxTxBytes: number
}

/** The defaults of {@link Limits}. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxKeyBytes: 512,
  maxValueBytes: 1024 * 1024,
  maxSkewMs: 30_000,
  defaultTimeoutMs: 5_000,
  maxTimeoutMs: 60_000,
  maxTxKeys: 128,
  maxTxBytes: 4 * 1024 * 1024,
})

const encoder = new TextEncoder()

/** UTF-8 length of a string. */
export function utf8Length(text: string): number {
  return encoder.encode(text).length
}

/** Throws `INVALID_KEY` or `KEY_TOO_LARGE` unless `key` is a usable key. */
export function checkKey(
  key: unknown,
  maxKeyBytes: number = DEFAULT_LIMITS.maxKeyBytes,
): asserts key is string {
  if (typeof key !== 'string') throw new CausewayError('INVALID_KEY', 'key must be a string')
  if (key.length === 0) throw new CausewayError('INVALID_KEY', 'key must not be empty')
  // Lone surrogates have no UTF-8 encoding: such a key could not round-trip.
  if (!key.isWellFormed())
    throw new CausewayError('INVALID_KEY', 'key is not valid Unicode (lone surrogate)')
  const bytes = utf8Length(key)
  if (bytes > maxKeyBytes) {
    throw new CausewayError(
      'KEY_TOO_LARGE',
      `key is ${bytes} bytes of UTF-8; the limit is ${maxKeyBytes}`,
      {
        bytes,
        limit: maxKeyBytes,
      },
    )
  }
}
