/**
 * Operation ids: what makes a write idempotent. The SDK gives every write it sends an id
 * `<client>.<seq>` (a client id of 8 to 64 characters of `[A-Za-z0-9_-]`, then a decimal sequence
 * number from 1, without leading zeros) in the `causeway-op-id` header (or a batch op's `opId`).
 * The gateway remembers applied ids per API key and client (a window of records above a mark that
 * never expires) and answers a repeat with the first result, or `OP_EXPIRED` once it no longer
 * knows it, so a replay after an unknown outcome never applies a write twice.
 */
import { CausewayError } from './errors.js'

/** Longest operation id, in characters. */
export const MAX_OP_ID_LENGTH = 96

const OP_ID = /^[A-Za-z0-9_-]{8,64}\.[1-9][0-9]{0,15}$/

/** An operation id, split. */
export interface OpId {
  /** The client part (8 to 64 characters of `[A-Za-z0-9_-]`). */
  client: string
  /** The sequence number (a safe integer, at least 1). */
  seq: number
}

/** True when `id` is a well-formed operation id. */
export function isOpId(id: unknown): id is string {
  if (typeof id !== 'string' || id.length > MAX_OP_ID_LENGTH || !OP_ID.test(id)) return false
  return Number.isSafeInteger(Number(id.slice(id.lastIndexOf('.') + 1)))
}

/**
 * Parses an operation id strictly.
 * @throws `CausewayError('INVALID_OP_ID')` for anything but `<client>.<seq>` of the grammar above.
 */
export function parseOpId(id: unknown): OpId {
  if (!isOpId(id)) {
    const shown =
      typeof id === 'string'
        ? JSON.stringify(id.slice(0, 32)) + (id.length > 32 ? '…' : '')
        : typeof id
    throw new CausewayError(
      'INVALID_OP_ID',
      `invalid operation id ${shown}: <client>.<seq>, client 8 to 64 characters of [A-Za-z0-9_-], ` +
        `seq a decimal integer from 1 without leading zeros, at most ${MAX_OP_ID_LENGTH} characters`,
    )
  }
  const dot = id.lastIndexOf('.')
  return { client: id.slice(0, dot), seq: Number(id.slice(dot + 1)) }
}

/** The id of operation `seq` of `client`. */
export function formatOpId(client: string, seq: number): string {
  const id = `${client}.${seq}`
  parseOpId(id)
  return id
}

/** The kinds of operation a `POST /v1/ops` batch takes (`OpSchema` in the schemas entry). */
export const OP_KINDS = ['put', 'delete', 'set-add', 'set-remove'] as const
/** Most operations in one `POST /v1/ops`. */
export const MAX_BATCH_OPS = 500
