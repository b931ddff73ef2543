/**
 * Backing off when the gateway says `RATE_LIMITED` (429). The gateway refuses such a request
 * before doing anything, so resending it is safe for reads and writes alike. The SDK waits what
 * the reply says (`retry-after`, in seconds, or the body's `details.retryAfterMs`, which is more
 * precise) and sends the same request again, as long as the wait ends within the call's deadline;
 * otherwise it gives up at once with the 429, which the caller throws as a `RateLimitedError`
 * carrying `retryAfterMs`. Each call's attempts are bounded by its deadline and by a count.
 */
import type { Transport, TransportRequest, TransportResponse } from './transport.js'

/** What the backoff needs of a call's deadline. */
export interface BackoffBudget {
  /** Milliseconds left of the call. */
  remaining(): number
  /** Aborted when the call ends (deadline, caller, close): a wait stops with it. */
  readonly signal: AbortSignal
}

/** The 429 status. */
const TOO_MANY_REQUESTS = 429
/** Resends of one request at most, however short the waits. */
const MAX_RESENDS = 8
/** Room kept after a wait for the resent request to travel and be answered. */
const REPLY_ROOM_MS = 20
/** The wait when a 429 names none (never from a Causeway gateway). */
const UNSPECIFIED_WAIT_MS = 1000

/** How long a 429 reply asks to wait, in ms: the body's precise value, else the header's. */
export function retryAfterMs(response: TransportResponse): number | undefined {
  const details = (response.body as { details?: { retryAfterMs?: unknown } } | undefined)?.details
  const precise = details?.retryAfterMs
  if (typeof precise === 'number' && Number.isFinite(precise) && precise >= 0) return precise
  const header = response.retryAfter?.trim()
  if (header !== undefined && /^[0-9]{1,9}$/.test(header)) return Number(header) * 1000
  // An HTTP date (never sent by a Causeway gateway; a proxy might).
  const at = header === undefined ? NaN : Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = (): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

/** A 429 that gives up, with the wait it asked for in its details whatever told it. */
function givingUp(response: TransportResponse, waitMs: number | undefined): TransportResponse {
  if (waitMs === undefined) return response
  const body = (response.body ?? {}) as { details?: Record<string, unknown> }
  if (typeof body !== 'object' || body.details?.['retryAfterMs'] !== undefined) return response
  return { ...response, body: { ...body, details: { ...body.details, retryAfterMs: waitMs } } }
}

/**
 * Sends `request` on `transport`; on a 429 whose wait fits in `budget`, waits and sends it again.
 * Resolves with the first reply that is not a 429, or the 429 that could not be waited for.
 * Rejects, like `transport.request`, when no reply arrived, and with the signal's reason when
 * the budget's signal aborts a wait.
 */
export async function sendWithRateLimitBackoff(
  transport: Transport,
  request: TransportRequest,
  budget: BackoffBudget,
): Promise<TransportResponse> {
  for (let resends = 0; ; resends++) {
    const response = await transport.request(request)
    if (response.status !== TOO_MANY_REQUESTS) return response
    const waitMs = retryAfterMs(response)
    const wait = waitMs ?? UNSPECIFIED_WAIT_MS
    if (resends >= MAX_RESENDS || wait + REPLY_ROOM_MS >= budget.remaining())
      return givingUp(response, waitMs)
    await sleep(wait, budget.signal)
    // Cut short by the deadline, the caller or close(): the caller says which.
    budget.signal.throwIfAborted()
  }
}
