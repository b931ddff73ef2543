/**
 * Header names and the protocol version: kept apart from the schemas in `wire.ts` so a browser
 * bundle that needs only these does not pull in the schema library.
 */

/** Request header: the read vector a read needs (`epoch@d:idx,d:idx`). */
export const HEADER_AFTER = 'causeway-after'
/** Request header: a write's HLC dependency (16 hex digits). */
export const HEADER_DT = 'causeway-dt'
/**
 * Request header of a `causal` read or write: the session's vector clock, one HLC per region in
 * region order, comma-separated (`causal-clock.ts`).
 */
export const HEADER_CLOCK = 'causeway-clock'
/** Request header: a siblings-namespace causal context. */
export const HEADER_CONTEXT = 'causeway-context'
/**
 * Reply header of a write: how long it waited at the leader for its dependencies, in ms. Only the
 * "without HLC" benchmark ablation makes writes wait (NuKV section 6), so only it sends this.
 */
export const HEADER_WAITED = 'causeway-waited-ms'
/**
 * Request header of a write: its operation id, `<client>.<seq>` (see `op-id.ts`). A write repeated
 * with the same id is applied once; the repeat answers the first result.
 */
export const HEADER_OP_ID = 'causeway-op-id'
/** Reply header of a write whose operation id had already been applied: `1`. */
export const HEADER_OP_REPLAYED = 'causeway-op-replayed'
/** Request header of a change feed: the cursor to resume after (as `since`). */
export const HEADER_LAST_EVENT_ID = 'last-event-id'
/** Wire protocol version, sent in the topology. */
export const PROTOCOL_VERSION = 1

/**
 * Every request header the SDK sends (lower case). A gateway that allows cross-origin requests
 * lets a browser send exactly these (its CORS preflight answer); a test checks the SDK sends no
 * other. `accept` is CORS-safelisted for `application/json`, listed for completeness.
 */
export const SDK_REQUEST_HEADERS: readonly string[] = [
  'accept',
  'authorization',
  'content-type',
  HEADER_AFTER,
  HEADER_DT,
  HEADER_CONTEXT,
  HEADER_CLOCK,
  HEADER_OP_ID,
]

/**
 * Reply headers of the protocol beyond the CORS-safelisted ones, which a gateway exposes to pages
 * of other origins: the context of a siblings read, the wait of a write in the "without HLC"
 * ablation, the challenge of a 401, the methods of a 405 and the pause a 429 or 503 asks for.
 */
export const EXPOSED_REPLY_HEADERS: readonly string[] = [
  HEADER_CONTEXT,
  HEADER_WAITED,
  'www-authenticate',
  'allow',
  'retry-after',
]
