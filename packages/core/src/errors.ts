/**
 * Every error Causeway reports, with its stable code and HTTP status. The gateway answers with
 * these codes and the SDK throws them as {@link CausewayError}s, so both sides share one list.
 */

/** Stable error codes and the HTTP status each maps to. */
export const ERROR_CODES = {
  /** The key is empty, not valid UTF-8 or otherwise unusable. */
  INVALID_KEY: 400,
  /** The key is longer than the cluster's limit (512 bytes of UTF-8 by default). */
  KEY_TOO_LARGE: 413,
  /** The value, encoded as JSON, is larger than the cluster's limit (1 MiB by default). */
  VALUE_TOO_LARGE: 413,
  /** The request body is missing a value or the value is not JSON-encodable. */
  INVALID_VALUE: 400,
  /** The request body is not valid JSON. */
  INVALID_JSON: 400,
  /** The body has the wrong content type. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The request does not match the route's schema (a wrong type, an unknown field, ...). */
  INVALID_REQUEST: 400,
  /** A `causeway-after` read vector is malformed. */
  INVALID_VECTOR: 400,
  /** A `causeway-dt` (or another HLC) is malformed. */
  INVALID_HLC: 400,
  /** An unknown read or write consistency level. */
  INVALID_LEVEL: 400,
  /** An unknown `replica`, `durability`, `timeoutMs` or other option. */
  INVALID_OPTION: 400,
  /** An unknown region name or id. */
  UNKNOWN_REGION: 400,
  /** A write dependency (`causeway-dt`) is further ahead of the gateway's clock than allowed. */
  CLOCK_SKEW_EXCEEDED: 400,
  /** A read vector asks for a log index that the origin leader has never written. */
  VECTOR_UNREACHABLE: 400,
  /**
   * The session depends on a log position the partition's history no longer holds: a leader
   * changed and writes it had acknowledged were lost. `details.lost` names each position, what
   * its epoch kept and where the next epoch starts; the SDK can re-base the session on what was
   * kept (`session.rebase`, or the client option `onEpochMismatch: 'rebase'`).
   */
  EPOCH_MISMATCH: 409,
  /**
   * A causal context (`causeway-context`) is malformed, oversized or of another format, names a
   * region the cluster lacks, a counter above 2^53 - 2, or writes of a region that region never made.
   */
  INVALID_CONTEXT: 400,
  /**
   * A siblings key's counter for this region cannot grow any more (2^53 - 2): it takes no more
   * writes in this region. Only a forged context can drive a counter there.
   */
  COUNTER_EXHAUSTED: 409,
  /** A set element is not a UTF-8 string of at most 1 KiB, or a set batch is too large. */
  INVALID_ELEMENT: 400,
  /** A `causeway-op-id` (or a batch op's `opId`) is malformed or too long. */
  INVALID_OP_ID: 400,
  /** An operation id was already used for another request (method, key, body or context). */
  OP_ID_REUSED: 409,
  /**
   * An operation id at or below what the gateway still remembers of its client (the client's
   * low-water mark, or everything of a client idle past the op-record retention): it may have
   * been applied, and its first result is no longer known. Nothing was written; never applied
   * twice. `details.opId`, `details.remembered` (the client's mark).
   */
  OP_EXPIRED: 409,
  /** A change-feed cursor (`since`, `Last-Event-ID`) is malformed or from another cluster shape. */
  INVALID_CURSOR: 400,
  /** The gateway serves as many change feeds as it may; retry after `retry-after` seconds. */
  TOO_MANY_WATCHERS: 429,
  /** A serialised session is malformed. */
  INVALID_SESSION: 400,
  /** A serialised session belongs to another cluster (or another shape of this one). */
  FOREIGN_SESSION: 400,
  /** No replica could serve the read with the requested guarantee before the deadline. */
  SESSION_NOT_AVAILABLE: 503,
  /** A client request lacks a valid API key. */
  UNAUTHORIZED: 401,
  /** The credentials are valid but not for this request. */
  FORBIDDEN: 403,
  /**
   * A CORS preflight the gateway refuses: a page of an origin it does not allow, a method or a
   * request header it does not take from other origins, or the internal routes (never cross-origin).
   */
  CROSS_ORIGIN_REFUSED: 403,
  /**
   * The API key is valid but scoped: not to this key's namespace, or not to this kind of call
   * (read or write). `details` names the namespace and the access the call needed.
   */
  OUT_OF_SCOPE: 403,
  /**
   * Too many requests from this API key (or, without one, this address) in the current window.
   * The reply's `retry-after` header says in how many seconds to retry, `details.retryAfterMs`
   * in milliseconds.
   */
  RATE_LIMITED: 429,
  /** A request's headers, or its body, did not arrive within the gateway's time limits. */
  REQUEST_TIMEOUT: 408,
  /** A request's headers are larger than the gateway accepts (Node's header size limit). */
  HEADERS_TOO_LARGE: 431,
  /** No such route. */
  NOT_FOUND: 404,
  /** The path exists but not with this method; the reply's `Allow` header lists the methods. */
  METHOD_NOT_ALLOWED: 405,
  /** A storage backend the request needs is down. */
  BACKEND_UNAVAILABLE: 503,
  /** The gateway is shutting down. */
  SHUTTING_DOWN: 503,
  /** The SDK gave up waiting for the gateway. */
  TIMEOUT: 504,
  /** The SDK could not reach the gateway. */
  NETWORK_ERROR: 503,
  /**
   * SDK, offline: the gateway cannot be reached and the local read cache has nothing for this
   * call (a key never read or written on this device, a set never scanned whole).
   */
  OFFLINE: 503,
  /**
   * SDK: the local store (IndexedDB, LevelDB) refused a write: its quota is used up, the disk is
   * full, or it failed otherwise. The write that hit it was not queued; what was queued before
   * is kept.
   */
  STORAGE_FULL: 507,
  /**
   * SDK, offline: the gateway now serves another cluster than the one this device's session,
   * read cache and queued writes belong to (it was reset, or restored from a copy of its data).
   * Nothing queued was sent; `db.resetCluster()` is the way on.
   */
  CLUSTER_CHANGED: 409,
  /**
   * The replica serving the request holds a value of this key that it cannot decode (corrupt, or
   * written by an older, buggy version). The key is quarantined: reported, counted and listed in
   * `GET /v1/status`, and rebuilt from the replica's log in the background; other keys are not
   * affected. Nothing was read or written.
   */
  VALUE_QUARANTINED: 500,
  /**
   * Internal (between regions): a shipping envelope of a version, or a log entry of a kind, that
   * this gateway does not know; a newer gateway sent it. Nothing of the batch was applied: upgrade
   * the receiving region, and its sender resumes from where it stopped.
   */
  UNSUPPORTED_LOG_FORMAT: 400,
  /**
   * A plain write (`PUT`/`DELETE /v1/kv`, a batch op) of a key of a namespace configured
   * `transactions: true`: such keys are written by transactions only. Nothing was written.
   */
  TRANSACTION_REQUIRED: 409,
  /**
   * A transaction reads or writes a key outside the namespaces configured `transactions: true`
   * (or the cluster has none). Nothing was read or written.
   */
  NOT_TRANSACTIONAL: 400,
  /** A transaction (or one transactional read) names more keys than `limits.maxTxKeys`. */
  TOO_MANY_KEYS: 413,
  /** A transaction's writes are larger than `limits.maxTxBytes` (or its body than the route takes). */
  TRANSACTION_TOO_LARGE: 413,
  /**
   * A commit's read set is malformed: not `[key, tid]` pairs, a key twice, a tid that is not an
   * integer, or one above the transaction's snapshot (a read cannot have seen a later version).
   */
  INVALID_READ_SET: 400,
  /**
   * A transaction's `minTid` or `snapshot` is beyond what the region's transaction log has ever
   * appended (`details.last`): it would wait forever.
   */
  TID_UNREACHABLE: 400,
  /**
   * A transactional read at a snapshot older than the region still keeps versions of (they are
   * collected behind the oldest open snapshot, within a limit), or older than writes the session
   * has seen. Start the transaction again (`runTransaction` does).
   */
  SNAPSHOT_TOO_OLD: 409,
  /**
   * SDK only: `runTransaction` gave up after its retries, every attempt a conflict (or a snapshot
   * collected under it). Nothing of the last attempt was written.
   */
  TRANSACTION_CONFLICT: 409,
  /**
   * Internal (causal shipping): an update label, a heartbeat or a batch of labels that cannot be
   * taken: from a partition the cluster does not have, not in order (its partition's idx must
   * follow on, its time must grow), or of a region that does not ship labels here. `details.field`
   * names what is wrong. A vector of the wrong length is `INVALID_VECTOR`, a time too far ahead
   * `CLOCK_SKEW_EXCEEDED`. Nothing of the batch was taken; the stabiliser goes on.
   */
  INVALID_LABEL: 400,
  /**
   * Internal (between regions): a shipping envelope disagrees with what the receiver already holds
   * of its origin (an entry at a known position differs, or the sender's epoch history does not
   * extend the one the receiver learned). Nothing of it was applied; the receiver flags the link
   * (status, metric) and takes the origin's entries again once the origin's history agrees.
   */
  SHIPPING_DIVERGED: 409,
  /**
   * SDK only: a gateway's reply body (or one change-feed event) is larger than the client's
   * `maxReplyBytes` (32 MiB by default); the SDK stopped reading it. A write's outcome is unknown.
   */
  REPLY_TOO_LARGE: 502,
  /**
   * SDK only: a reply carries a value the SDK refuses to record in the session: an index, counter,
   * epoch or tid above 2^53 - 2, an HLC more than two hours ahead of the device's clock, or a region
   * URL in the topology that is not http(s). Nothing of the reply was recorded.
   */
  INVALID_REPLY: 502,
  /**
   * SDK only: a call would send credentials (the API key, a token) to an origin other than the
   * gateway's `connect()` was given and those listed in `trustedOrigins`. Nothing was sent.
   */
  UNTRUSTED_ORIGIN: 403,
  /**
   * The request's body would take the body bytes this gateway holds in flight (bodies received and
   * not yet answered) past its limit: the API key's (or, without one, the address's) share, or the
   * whole gateway's (`details.scope`: `'key'` or `'gateway'`). Nothing was read or done; retry after
   * `retry-after` seconds.
   */
  BODY_BUDGET_EXCEEDED: 429,
  /** A bug: the request may or may not have taken effect. */
  INTERNAL: 500,
} as const

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_CODES

/** True when `code` is one of {@link ERROR_CODES}. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code)
}

/** The JSON body of every error reply. */
export interface ErrorBody {
  statusCode: number
  code: ErrorCode
  message: string
  details?: Record<string, unknown>
}

// A brand instead of plain `instanceof`, so two bundled copies of the SDK recognise each other's
// errors (undici does the same).
const kCausewayError = Symbol.for('causeway.error')

/** An error with a stable {@link ErrorCode}; thrown by the SDK and reported by the gateway. */
export class CausewayError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly details: Record<string, unknown> | undefined
  readonly [kCausewayError] = true

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = 'CausewayError'
    this.code = code
    this.status = ERROR_CODES[code]
    this.details = details
  }

  /** Subclasses that stand for one code name it here, so `instanceof` can check it by brand. */
  static readonly brandCode: ErrorCode | undefined = undefined

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false
    if ((value as Record<symbol, unknown>)[kCausewayError] !== true) return false
    const code = (this as { brandCode?: ErrorCode }).brandCode
    return code === undefined || (value as { code?: unknown }).code === code
  }

  /** The reply body the gateway sends for this error. */
  toBody(): ErrorBody {
    const body: ErrorBody = { statusCode: this.status, code: this.code, message: this.message }
    if (this.details !== undefined) body.details = this.details
    return body
  }

  /** Rebuilds an error from a reply body; unknown codes become `INTERNAL`. */
  static fromBody(body: unknown, status?: number): CausewayError {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Partial<ErrorBody>
    const code: ErrorCode = isErrorCode(b.code) ? b.code : 'INTERNAL'
    const message =
      typeof b.message === 'string' ? b.message : `gateway answered ${status ?? 'an error'}`
    const details = typeof b.details === 'object' && b.details !== null ? b.details : undefined
    if (code === 'SESSION_NOT_AVAILABLE') return new SessionNotAvailableError(message, details)
    if (code === 'EPOCH_MISMATCH') return new EpochMismatchError(message, details)
    if (code === 'RATE_LIMITED')
      return new RateLimitedError(message, retryAfterOf(details?.['retryAfterMs']), details)
    if (code === 'OFFLINE') return new OfflineError(message, details)
    if (code === 'STORAGE_FULL') return new StorageFullError(message, details)
    return new CausewayError(code, message, details)
  }
}

/**
 * No replica could serve a read with the requested guarantee in time. `details.need` is what the
 * read needed and `details.sv` what the replica had, both as `{ region: idx }`.
 */
export class SessionNotAvailableError extends CausewayError {
  static override readonly brandCode: ErrorCode = 'SESSION_NOT_AVAILABLE'

  constructor(message: string, details?: Record<string, unknown>) {
    super('SESSION_NOT_AVAILABLE', message, details)
    this.name = 'SessionNotAvailableError'
  }
}

/** One position a session depended on that its partition's history no longer holds. */
export interface LostPosition {
  /** The origin region of the position. */
  region: number
  /** Its epoch, when the session knew it (0: unknown). */
  epoch: number
  /** Its index. */
  idx: number
  /**
   * The highest index at or below `idx` that the region's history kept (0: none): a re-based
   * session depends on this instead.
   */
  kept: number
  /** The epoch of `kept` (0 when `kept` is 0). */
  keptEpoch: number
}

/**
 * `EPOCH_MISMATCH` (409): the session depends on positions a failover lost. `lost` lists them
 * (from `details.lost`); nothing was read or written. Re-base the session to go on without them:
 * `session.rebase(partition, error.lost)`, or connect with `onEpochMismatch: 'rebase'`.
 */
export class EpochMismatchError extends CausewayError {
  static override readonly brandCode: ErrorCode = 'EPOCH_MISMATCH'

  constructor(message: string, details?: Record<string, unknown>) {
    super('EPOCH_MISMATCH', message, details)
    this.name = 'EpochMismatchError'
  }

  /** The partition, from `details.partition` (undefined when the gateway did not say). */
  get partition(): number | undefined {
    const p = this.details?.['partition']
    return typeof p === 'number' && Number.isSafeInteger(p) && p >= 0 ? p : undefined
  }

  /** The lost positions, from `details.lost` (malformed items left out). */
  get lost(): LostPosition[] {
    const raw = this.details?.['lost']
    if (!Array.isArray(raw)) return []
    const count = (v: unknown): v is number =>
      typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
    const out: LostPosition[] = []
    for (const item of raw as unknown[]) {
      if (typeof item !== 'object' || item === null) continue
      const r = item as Record<string, unknown>
      if (!count(r.region) || !count(r.epoch) || !count(r.idx) || !count(r.kept)) continue
      if (!count(r.keptEpoch) || r.kept > r.idx) continue
      out.push({
        region: r.region,
        epoch: r.epoch,
        idx: r.idx,
        kept: r.kept,
        keptEpoch: r.keptEpoch,
      })
    }
    return out
  }
}

function retryAfterOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined
}

/**
 * The gateway refused a request for its rate limit (`RATE_LIMITED`, 429) and the SDK could not
 * wait for the limit to reset within the call's deadline. {@link RateLimitedError.retryAfterMs}
 * says when a retry may succeed; nothing was written.
 */
export class RateLimitedError extends CausewayError {
  static override readonly brandCode: ErrorCode = 'RATE_LIMITED'
  /** How long to wait before retrying, in ms; `undefined` when the gateway did not say. */
  readonly retryAfterMs: number | undefined

  constructor(message: string, retryAfterMs?: number, details?: Record<string, unknown>) {
    super(
      'RATE_LIMITED',
      message,
      retryAfterMs === undefined ? details : { ...details, retryAfterMs },
    )
    this.name = 'RateLimitedError'
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * SDK, offline: the gateway cannot be reached and the local read cache cannot answer this call
 * (`OFFLINE`). Thrown at once, never after a wait for the network.
 */
export class OfflineError extends CausewayError {
  static override readonly brandCode: ErrorCode = 'OFFLINE'

  constructor(message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super('OFFLINE', message, details, options)
    this.name = 'OfflineError'
  }
}

/**
 * SDK: the local store refused a write (`STORAGE_FULL`): an IndexedDB `QuotaExceededError`, a
 * full disk, or any other failure of the store. The call that hit it was not queued; operations
 * queued before it are intact. `cause` is the store's own error.
 */
export class StorageFullError extends CausewayError {
  static override readonly brandCode: ErrorCode = 'STORAGE_FULL'

  constructor(message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super('STORAGE_FULL', message, details, options)
    this.name = 'StorageFullError'
  }
}
