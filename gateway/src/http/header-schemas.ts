/**
 * The session headers as the OpenAPI document describes them and as the routes validate them:
 * their grammar (a pattern), a length bound, and an example that a fresh `causeway dev` cluster
 * accepts (`openapi-examples.test.ts` sends each one). What a grammar cannot say is checked after
 * it, with the same code: a region named twice (`INVALID_VECTOR`),
 * an index not yet written (`VECTOR_UNREACHABLE`), an HLC too far ahead
 * (`CLOCK_SKEW_EXCEEDED`), a context that does not decode or is sent for a key outside a siblings
 * namespace (`INVALID_CONTEXT`).
 */
import { DEFAULT_MAX_CONTEXT_BYTES, MAX_OP_ID_LENGTH } from '@causeway/core'
import { Type } from 'typebox'

// A non-negative decimal without leading zeros, at most 16 digits (a safe integer has 16).
const NUMBER = '(0|[1-9][0-9]{0,15})'

/** A pattern matching exactly the region ids `0..regions-1`. */
function regionIds(regions: number): string {
  return `(${Array.from({ length: regions }, (_, d) => String(d)).join('|')})`
}

/**
 * `causeway-after` of a cluster of `regions` regions: `region:idx[@epoch][,region:idx[@epoch]]...`
 * (or the older `epoch@region:idx,...`), at most one entry per region.
 */
export function afterHeader(regions: number, description?: string) {
  const entry = `${regionIds(regions)}:${NUMBER}(@[1-9][0-9]{0,15})?`
  return Type.String({
    pattern: `^([1-9][0-9]{0,15}@)?${entry}(,${entry}){0,${regions - 1}}$`,
    maxLength: 2048,
    description:
      description ??
      'the read vector the serving replica must cover: `region:idx@epoch,region:idx` (per region the lowest log index the replica must have applied, and the epoch that region issued it in when the session knows it; the SDK sends only non-zero entries). Each region at most once (INVALID_VECTOR otherwise); an index the region has not written yet is VECTOR_UNREACHABLE; a position a failover lost is EPOCH_MISMATCH. The older form `epoch@region:idx,...` is accepted and its epoch ignored.',
    examples: ['0:0'],
  })
}

/**
 * `causeway-clock` of a cluster of `regions` regions: a `causal` call's vector clock, one HLC (or
 * `0`) per region in region order.
 */
export function clockHeader(regions: number) {
  const entry = '(0|[0-9a-f]{16})'
  return Type.String({
    pattern: `^${entry}(,${entry}){${regions - 1}}$`,
    maxLength: regions * 17,
    description:
      'causal calls only (clusters with shipping: causal): the session’s vector clock, one HLC (16 lowercase hex digits) or 0 per region, in region order. The call waits until the region has applied what it covers; another number of entries is INVALID_VECTOR.',
    examples: [Array.from({ length: regions }, () => '0').join(',')],
  })
}

/** `causeway-dt`: an HLC. */
export const DT_HEADER = Type.String({
  pattern: '^[0-9a-f]{16}$',
  description:
    "the write's HLC dependency: 16 lowercase hex digits (48-bit ms, 16-bit counter); at most `limits.maxSkewMs` ahead of the latest region clock the gateway knows",
  examples: ['00018f2a3b4c0001'],
})

/** `causeway-context`: a causal context, canonical base64url. */
export const CONTEXT_HEADER = Type.String({
  pattern: '^[A-Za-z0-9_-]+$',
  maxLength: Math.ceil((DEFAULT_MAX_CONTEXT_BYTES * 4) / 3),
  description:
    'siblings namespaces only: the causal context of a read (its `context`, opaque base64url, signed by the cluster for that key); the write supersedes the siblings that read returned. Without it the write adds a sibling. Sent for a key outside a siblings namespace, or one that does not decode or was not issued by this cluster for this key, it is INVALID_CONTEXT.',
  // The context of a key never written: accepted for any key of a siblings namespace.
  examples: ['wQA'],
})

/** `causeway-op-id` on writes: the grammar of `isOpId` in `@causeway/core`. */
export const OP_ID_HEADER = Type.String({
  pattern: '^[A-Za-z0-9_-]{8,64}\\.[1-9][0-9]{0,15}$',
  maxLength: MAX_OP_ID_LENGTH,
  description:
    'the operation id `<client>.<seq>`: applied at most once; a repeat with the same request answers the first result with `causeway-op-replayed: 1`, another request under the same id is 409 OP_ID_REUSED; an id at or below what the gateway still remembers of its client (per API key) is 409 OP_EXPIRED, never applied again',
  examples: ['phone-7f3a9c21.42'],
})

/**
 * `causeway-after` on a change feed: a read vector when the watch touches one partition, else
 * `p=<vector>` items joined by `;`, one per partition.
 */
export function watchAfterHeader(regions: number, partitions: number) {
  const entry = `${regionIds(regions)}:${NUMBER}(@[1-9][0-9]{0,15})?`
  const vector = `([1-9][0-9]{0,15}@)?${entry}(,${entry}){0,${regions - 1}}`
  const item = `${NUMBER}=${vector}`
  return Type.String({
    pattern: `^(${vector}|${item}(;${item}){0,${partitions - 1}})$`,
    maxLength: 2048 * Math.min(partitions, 64),
    description:
      'what the serving replicas must cover before the feed starts: a read vector when the watch touches one partition, else `p=<vector>` items joined by `;`',
    examples: ['0=1@0:0'],
  })
}

/** `Last-Event-ID` on a change feed: a cursor (an event `id`), base64url. */
export const LAST_EVENT_ID_HEADER = Type.String({
  pattern: '^[A-Za-z0-9_-]+$',
  maxLength: 1 << 20,
  description:
    'resume after this cursor (an event `id` of an earlier feed; wins over `since`). A cursor names its cluster, so no example fits every cluster',
})
