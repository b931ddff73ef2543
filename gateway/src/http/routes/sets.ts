/**
 * `/v1/sets/:name/...`: CRDT sets (Bigsets) over HTTP. `POST .../add` and `.../remove` write at
 * the leader of the set's partition like a key write; `GET .../has`, `.../size` and `.../scan`
 * read from a replica covering `causeway-after` like a key read, and report the set's stamp
 * (`seen`, `ts`) for the session. A scan streams its reply as it walks the set (chunked JSON), so
 * no part of the path holds the whole set.
 */
import { Readable } from 'node:stream'
import {
  CausewayError,
  HEADER_AFTER,
  HEADER_DT,
  HEADER_OP_ID,
  HEADER_OP_REPLAYED,
  HLC_ZERO,
  type SetHasReply,
  type SetScanReply,
  type SetSizeReply,
  type WriteReply,
} from '@causeway/core'
import {
  ErrorReplySchema,
  SetHasQuerySchema,
  SetHasReplySchema,
  SetParamsSchema,
  SetScanQuerySchema,
  SetScanReplySchema,
  SetSizeQuerySchema,
  SetSizeReplySchema,
  SetWriteBodySchema,
  SetWriteQuerySchema,
  WriteReplySchema,
} from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { ClusterService } from '../../cluster/cluster-service.js'
import type { SetReadMeta, SetScanResult, SetService } from '../../cluster/region-sets.js'
import { toCausewayError } from '../errors.js'
import type { GatewayMetrics } from '../gateway-metrics.js'
import { opIdHeader, opTenantOf, writeOpOf } from '../op-request.js'
import { DT_HEADER, OP_ID_HEADER, afterHeader } from '../header-schemas.js'
import { withTimeoutMaximum } from '../query-limits.js'
import {
  hasElement,
  parseSetRead,
  parseSetWrite,
  queryElement,
  setValidationError,
} from '../set-request.js'

/** Options of the set routes plugin. */
export interface SetRoutesOptions {
  service: ClusterService
  sets: SetService
  metrics: GatewayMetrics
}

const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

// Room for MAX_SET_WRITE_ELEMENTS elements of 1 KiB each, escaped, with their contexts.
const SET_BODY_LIMIT = 8 * 1024 * 1024
// Elements written to the socket in one chunk of a scan.
const SCAN_CHUNK_BYTES = 16 * 1024
// Chunks of a scan reply made ahead of the socket.
const SCAN_READ_AHEAD = 2

/** The reply fields every set read carries. */
function metaFields(meta: SetReadMeta, region: number) {
  const fields: {
    seen: number[]
    ts?: string
    epoch: number
    region: number
    replica: number
    waitedMs: number
    merged?: number
  } = {
    seen: [...meta.stamp.seen],
    epoch: meta.epoch,
    region,
    replica: meta.replica,
    waitedMs: meta.waitedMs,
  }
  if (meta.stamp.ts !== HLC_ZERO) fields.ts = meta.stamp.ts
  if (meta.merged !== undefined) fields.merged = meta.merged
  return fields
}

/** The chunks of a scan reply: elements as they stream, then the meta (or an error). */
export async function* scanBody(result: SetScanResult, region: number): AsyncGenerator<string> {
  let chunk = '{"elements":['
  let first = true
  try {
    for await (const e of result.elements) {
      const item = e.ctx === undefined ? JSON.stringify(e.element) : JSON.stringify(e)
      chunk += first ? item : ',' + item
      first = false
      if (chunk.length >= SCAN_CHUNK_BYTES) {
        yield chunk
        chunk = ''
      }
    }
    const meta = await result.finish()
    const tail: Record<string, unknown> = metaFields(meta, region)
    if (meta.next !== undefined) tail.next = meta.next
    yield chunk + '],' + JSON.stringify(tail).slice(1)
  } catch (error) {
    // The status line is gone: the document ends with the error instead of the meta.
    const known =
      toCausewayError(error, '/v1/sets') ?? new CausewayError('INTERNAL', 'the scan failed midway')
    yield chunk + '],"error":' + JSON.stringify(known.toBody()) + '}'
  }
}

/** The set routes. */
export const setRoutes: FastifyPluginAsyncTypebox<SetRoutesOptions> = async (
  app,
  { service, sets, metrics },
) => {
  // As in the kv routes: requests read only the limits, partitions and regions, which a service
  // keeps for its life, and shape() builds a fresh copy per call.
  const shape = service.shape()
  const regions = shape.regionNames.length
  const maxTimeoutMs = shape.limits.maxTimeoutMs
  const ReadHeadersSchema = Type.Object({ [HEADER_AFTER]: Type.Optional(afterHeader(regions)) })
  const WriteHeadersSchema = Type.Object({
    [HEADER_DT]: Type.Optional(DT_HEADER),
    [HEADER_AFTER]: Type.Optional(
      afterHeader(
        regions,
        'removes of elements sent without a context: the leader first catches up with this vector (same grammar as on reads)',
      ),
    ),
    [HEADER_OP_ID]: Type.Optional(OP_ID_HEADER),
  })
  for (const op of ['add', 'remove'] as const) {
    app.post(
      `/v1/sets/:name/${op}`,
      {
        config: { operation: `set-${op}` },
        bodyLimit: SET_BODY_LIMIT,
        schemaErrorFormatter: setValidationError,
        schema: {
          summary: op === 'add' ? 'Add elements to a set' : 'Remove elements from a set',
          description:
            op === 'add'
              ? 'Each element gets a new dot at the leader of the set’s partition; one log entry, shipped like any write.'
              : 'Removes the contexts sent back from `has`/`scan`, or, for an element sent without one, what the leader holds once it covers `causeway-after`.',
          operationId: op === 'add' ? 'addToSet' : 'removeFromSet',
          tags: ['sets'],
          params: SetParamsSchema,
          querystring: withTimeoutMaximum(SetWriteQuerySchema, maxTimeoutMs),
          headers: WriteHeadersSchema,
          body: SetWriteBodySchema,
          response: { 200: WriteReplySchema, ...errors },
        },
      },
      async (request, reply): Promise<WriteReply> => {
        const write = parseSetWrite(
          request.params.name,
          op,
          request.body.elements,
          request.query,
          request.headers,
          shape,
        )
        const opId = opIdHeader(request.headers)
        if (opId !== undefined)
          write.opId = writeOpOf(
            opId,
            { kind: `set-${op}`, key: write.name, elements: write.elements },
            opTenantOf(request),
          )
        const result = await sets.write(write)
        if (result.replayed === true) reply.header(HEADER_OP_REPLAYED, '1')
        return {
          ts: result.ts,
          dc: result.dc,
          idx: result.idx,
          epoch: result.epoch,
          region: service.region,
        }
      },
    )
  }

  app.get(
    '/v1/sets/:name/has',
    {
      config: { operation: 'set-has' },
      schemaErrorFormatter: setValidationError,
      schema: {
        summary: 'Whether an element is in a set, with its context',
        operationId: 'setHas',
        tags: ['sets'],
        params: SetParamsSchema,
        querystring: withTimeoutMaximum(SetHasQuerySchema, maxTimeoutMs),
        headers: ReadHeadersSchema,
        response: { 200: SetHasReplySchema, ...errors },
      },
    },
    async (request): Promise<SetHasReply> => {
      const query = request.query
      const element = hasElement(query.element, request.url)
      const { request: read, afterBytes } = parseSetRead(
        request.params.name,
        query,
        request.headers,
        shape,
      )
      metrics.observeAfterHeader(read.level, afterBytes)
      const result = await sets.has({
        name: read.name,
        partition: read.partition,
        need: read.need,
        replica: read.replica,
        timeoutMs: read.timeoutMs,
        level: read.level,
        element,
      })
      metrics.observeReadWait(read.level, result.waitedMs)
      const reply: SetHasReply = { found: result.found, ...metaFields(result, service.region) }
      if (result.ctx !== undefined) reply.ctx = result.ctx
      return reply
    },
  )

  app.get(
    '/v1/sets/:name/size',
    {
      config: { operation: 'set-size' },
      schemaErrorFormatter: setValidationError,
      schema: {
        summary: 'The number of elements of a set (exact)',
        operationId: 'setSize',
        tags: ['sets'],
        params: SetParamsSchema,
        querystring: withTimeoutMaximum(SetSizeQuerySchema, maxTimeoutMs),
        headers: ReadHeadersSchema,
        response: { 200: SetSizeReplySchema, ...errors },
      },
    },
    async (request): Promise<SetSizeReply> => {
      const { request: read, afterBytes } = parseSetRead(
        request.params.name,
        request.query,
        request.headers,
        shape,
      )
      metrics.observeAfterHeader(read.level, afterBytes)
      const result = await sets.size(read)
      metrics.observeReadWait(read.level, result.waitedMs)
      return { size: result.size, ...metaFields(result, service.region) }
    },
  )

  app.get(
    '/v1/sets/:name/scan',
    {
      config: { operation: 'set-scan' },
      schemaErrorFormatter: setValidationError,
      schema: {
        summary: 'The elements of a set in order, streamed',
        description:
          'Chunked JSON written as the replica walks the set: `elements` first, then where the scan stopped (`next`) and what it reflects (`seen`, `ts`). A failure after the first bytes ends the document with `error`.',
        operationId: 'setScan',
        tags: ['sets'],
        params: SetParamsSchema,
        querystring: withTimeoutMaximum(SetScanQuerySchema, maxTimeoutMs),
        headers: ReadHeadersSchema,
        response: { 200: SetScanReplySchema, ...errors },
      },
    },
    async (request, reply) => {
      const { from, after, limit, ctx, merge, ...options } = request.query
      const { request: read, afterBytes } = parseSetRead(
        request.params.name,
        options,
        request.headers,
        shape,
      )
      metrics.observeAfterHeader(read.level, afterBytes)
      const scan = {
        ...read,
        limit: limit ?? Number.MAX_SAFE_INTEGER,
        withContext: ctx === true,
        merge: merge === true,
      }
      if (from !== undefined) Object.assign(scan, { from: queryElement(request.url, 'from') })
      if (after !== undefined) Object.assign(scan, { after: queryElement(request.url, 'after') })
      const result = await sets.scan(scan)
      // A stream is sent as it is (the schema documents it; it does not serialise it).
      // Two chunks read ahead of the socket: what one scan holds in memory beyond the socket's
      // own buffer, whatever the set's size (the walk pulls keys only as the stream asks).
      const body = Readable.from(scanBody(result, service.region), {
        highWaterMark: SCAN_READ_AHEAD,
      }) as unknown as SetScanReply
      return reply.type('application/json; charset=utf-8').send(body)
    },
  )
}
