/**
 * Turns the parts of a `/v1/kv/:key` request that the route schemas cannot check (the key's
 * UTF-8 length, the `causeway-after`, `causeway-dt`, `causeway-context` and `causeway-clock`
 * headers, limits from the cluster's shape)
 * into a validated `ReadRequest` or `WriteRequest`. Everything is checked before the cluster
 * service is called, so a bad request never writes anything.
 *
 * The `causal` levels are taken only by the kv routes of a cluster with `shipping: 'causal'`
 * (`INVALID_LEVEL` elsewhere: in a FIFO cluster, a causal read would be served as a session one,
 * which does not give what it asks for).
 */
import {
  CausewayError,
  HEADER_AFTER,
  HEADER_CLOCK,
  HEADER_CONTEXT,
  HEADER_DT,
  HLC_ZERO,
  checkKey,
  isHlc,
  parseClock,
  parseReadNeed,
  partitionOf,
  type CausalContext,
  type Durability,
  type Hlc,
  type ReadLevel,
  type ReadNeed,
  type ReplicaChoice,
  type WriteLevel,
} from '@causeway/core'
import type { IncomingHttpHeaders } from 'node:http'
import type { ClusterShape, ReadRequest, WriteRequest } from '../cluster/cluster-service.js'
import { type ContextIssuer, acceptContext } from '../cluster/sibling-contexts.js'

/** The query of a read, as the route schema has validated it. */
export interface ReadOptions {
  level?: ReadLevel
  replica?: ReplicaChoice
  timeoutMs?: number
}

/** The query of a write, as the route schema has validated it. */
export interface WriteOptions {
  level?: WriteLevel
  durability?: Durability
}

/** A read request and the size of the `causeway-after` header it came with (0 when absent). */
export interface ParsedRead {
  request: ReadRequest
  afterBytes: number
}

function singleHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  // Node joins repeated unknown headers with ", "; an array would only come from a raw client.
  if (Array.isArray(value)) return value.join(', ')
  return value
}

function parseNeed(header: string | undefined, shape: ClusterShape): ReadNeed | undefined {
  return header === undefined ? undefined : parseReadNeed(header, shape.regionNames.length)
}

function parseDt(header: string | undefined): Hlc {
  if (header === undefined) return HLC_ZERO
  const dt: string = header
  if (isHlc(dt)) return dt
  throw new CausewayError(
    'INVALID_HLC',
    `invalid ${HEADER_DT} ${JSON.stringify(header.slice(0, 32))}: an HLC is 16 lowercase hex digits`,
  )
}

/**
 * A write's `causeway-context`, decoded strictly and checked to be one the cluster issued for
 * `key` (`INVALID_CONTEXT` when it is not one).
 */
function parseContext(
  header: string | undefined,
  key: string,
  shape: ClusterShape,
  issuer: ContextIssuer,
): CausalContext | undefined {
  if (header === undefined) return undefined
  return acceptContext(issuer, key, header.trim(), shape.regionNames.length)
}

/** Where a request is made: the kv routes take the `causal` levels, others do not. */
export interface LevelScope {
  /** The route takes `causal` levels (in a causal cluster). @default false */
  causal?: boolean
  /** What the route is, for the refusal's message. @default 'this route' */
  route?: string
  /** Who checks a write's `causeway-context` (the cluster service). @default the process's signer */
  contexts?: ContextIssuer
}

/**
 * Refuses a `causal` level where it cannot be honoured: in a cluster that ships FIFO, or on a
 * route that does not carry a vector clock (`INVALID_LEVEL`).
 */
export function checkCausalLevel(
  level: string,
  shape: Pick<ClusterShape, 'shipping'>,
  scope: LevelScope = {},
): void {
  if (level !== 'causal') return
  if (shape.shipping !== 'causal')
    throw new CausewayError(
      'INVALID_LEVEL',
      `level causal needs a cluster with shipping: 'causal'; this one ships ${shape.shipping} (use session)`,
      { level, shipping: shape.shipping },
    )
  if (scope.causal !== true)
    throw new CausewayError(
      'INVALID_LEVEL',
      `level causal is taken by get, put and delete of keys, not by ${scope.route ?? 'this route'}`,
      { level },
    )
}

function parseCausalClock(
  level: string,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
): Hlc[] | undefined {
  if (level !== 'causal') return undefined
  const header = singleHeader(headers, HEADER_CLOCK)
  return header === undefined ? undefined : parseClock(header, shape.regionNames.length)
}

function checkTimeout(timeoutMs: number | undefined, shape: ClusterShape): number {
  if (timeoutMs === undefined) return shape.limits.defaultTimeoutMs
  if (timeoutMs > shape.limits.maxTimeoutMs) {
    throw new CausewayError(
      'INVALID_OPTION',
      `timeoutMs ${timeoutMs} is above the limit of ${shape.limits.maxTimeoutMs}`,
      { option: 'timeoutMs', limit: shape.limits.maxTimeoutMs },
    )
  }
  return timeoutMs
}

/**
 * A read of `key`. The header is validated whatever the level; an `eventual` read sends no need
 * to the service, as the SDK sends none.
 */
export function parseRead(
  key: string,
  query: ReadOptions,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
  scope: LevelScope = {},
): ParsedRead {
  checkKey(key, shape.limits.maxKeyBytes)
  const level = query.level ?? 'session'
  checkCausalLevel(level, shape, scope)
  const clock = parseCausalClock(level, headers, shape)
  const header = singleHeader(headers, HEADER_AFTER)
  const need = parseNeed(header, shape)
  const request: ReadRequest = {
    key,
    partition: partitionOf(key, shape.partitions),
    replica: query.replica ?? 'any',
    timeoutMs: checkTimeout(query.timeoutMs, shape),
    level,
  }
  if (need !== undefined && level !== 'eventual') request.need = need
  if (clock !== undefined) request.clock = clock
  return { request, afterBytes: header === undefined ? 0 : Buffer.byteLength(header) }
}

/**
 * A put (`value` given) or a delete (`value` undefined) of `key`. `value` is encoded to the JSON
 * text the service stores; an `eventual` write has no dependency (dt = 0).
 */
export function parseWrite(
  key: string,
  value: { json: string } | undefined,
  query: WriteOptions,
  headers: IncomingHttpHeaders,
  shape: ClusterShape,
  scope: LevelScope = {},
): WriteRequest {
  checkKey(key, shape.limits.maxKeyBytes)
  const level = query.level ?? 'session'
  checkCausalLevel(level, shape, scope)
  const clock = parseCausalClock(level, headers, shape)
  const dt = parseDt(singleHeader(headers, HEADER_DT))
  const context = parseContext(
    singleHeader(headers, HEADER_CONTEXT),
    key,
    shape,
    scope.contexts ?? {},
  )
  if (value !== undefined) {
    const bytes = Buffer.byteLength(value.json)
    if (bytes > shape.limits.maxValueBytes) {
      throw new CausewayError(
        'VALUE_TOO_LARGE',
        `value is ${bytes} bytes of JSON; the limit is ${shape.limits.maxValueBytes}`,
        { bytes, limit: shape.limits.maxValueBytes },
      )
    }
  }
  const request: WriteRequest = {
    key,
    partition: partitionOf(key, shape.partitions),
    value: value?.json,
    dt: level === 'eventual' ? HLC_ZERO : dt,
    durability: query.durability ?? 'leader',
    level,
  }
  // Whether the key's namespace takes a context is the cluster service's to say.
  if (context !== undefined) request.context = context
  if (clock !== undefined) request.clock = clock
  // Only the "without HLC" benchmark ablation sends (and reads) a write's dependency vector.
  const need = parseNeed(singleHeader(headers, HEADER_AFTER), shape)
  if (need !== undefined && level !== 'eventual') request.need = need
  return request
}

/**
 * The JSON text of a PUT body's value. `JSON.stringify` can only fail here on values JSON.parse
 * never produces, but a custom body parser could; say so instead of storing `undefined`.
 */
export function encodeValue(value: unknown): { json: string } {
  let json: string | undefined
  try {
    json = JSON.stringify(value)
  } catch (cause) {
    throw new CausewayError('INVALID_VALUE', 'the value cannot be encoded as JSON', undefined, {
      cause,
    })
  }
  if (json === undefined)
    throw new CausewayError('INVALID_VALUE', 'the value cannot be encoded as JSON')
  return { json }
}
