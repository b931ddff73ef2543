/**
 * `GET`, `PUT` and `DELETE /v1/kv/:key`: NuKV's get and put (Algorithm 1) over HTTP. The routes
 * validate, route the key to its partition and call the cluster service; the service does the
 * waiting, the HLC stamping and the replication.
 */
import {
  HEADER_AFTER,
  HEADER_CLOCK,
  HEADER_CONTEXT,
  HEADER_DT,
  HEADER_OP_ID,
  HEADER_OP_REPLAYED,
  HEADER_WAITED,
  type ReadReply,
  type WriteReply,
} from '@causeway/core'
import {
  ErrorReplySchema,
  KeyParamsSchema,
  PutBodySchema,
  ReadQuerySchema,
  ReadReplySchema,
  WriteQuerySchema,
  WriteReplySchema,
} from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { ClusterService, WriteResult } from '../../cluster/cluster-service.js'
import { issueContext } from '../../cluster/sibling-contexts.js'
import type { GatewayMetrics } from '../gateway-metrics.js'
import {
  CONTEXT_HEADER,
  DT_HEADER,
  OP_ID_HEADER,
  afterHeader,
  clockHeader,
} from '../header-schemas.js'
import { withTimeoutMaximum } from '../query-limits.js'
import { encodeValue, parseRead, parseWrite } from '../kv-request.js'
import { opIdHeader, opTenantOf, writeOpOf } from '../op-request.js'
import { contextHeader, readReplyJson } from '../read-reply.js'

/** Options of the kv routes plugin. */
export interface KvRoutesOptions {
  service: ClusterService
  metrics: GatewayMetrics
}

const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

function writeReply(
  result: WriteResult,
  key: string,
  service: ClusterService,
  http: { header(name: string, value: string): unknown },
): WriteReply {
  if (result.waitedMs !== undefined) http.header(HEADER_WAITED, result.waitedMs.toFixed(3))
  if (result.replayed === true) http.header(HEADER_OP_REPLAYED, '1')
  const reply: WriteReply = {
    ts: result.ts,
    dc: result.dc,
    idx: result.idx,
    epoch: result.epoch,
    region: service.region,
  }
  if (result.context !== undefined) reply.context = issueContext(service, key, result.context)
  return reply
}

/** The kv routes. */
export const kvRoutes: FastifyPluginAsyncTypebox<KvRoutesOptions> = async (
  app,
  { service, metrics },
) => {
  // Requests read only the limits, partitions and regions, which a service keeps for its life
  // (the gateway's body limit is taken from them once too); shape() builds a fresh copy per call.
  const shape = service.shape()
  const ReadHeadersSchema = Type.Object({
    [HEADER_AFTER]: Type.Optional(afterHeader(shape.regionNames.length)),
    [HEADER_CLOCK]: Type.Optional(clockHeader(shape.regionNames.length)),
  })
  const WriteHeadersSchema = Type.Object({
    [HEADER_DT]: Type.Optional(DT_HEADER),
    [HEADER_CONTEXT]: Type.Optional(CONTEXT_HEADER),
    [HEADER_OP_ID]: Type.Optional(OP_ID_HEADER),
    [HEADER_CLOCK]: Type.Optional(clockHeader(shape.regionNames.length)),
    [HEADER_AFTER]: Type.Optional(
      afterHeader(
        shape.regionNames.length,
        'the positions the write follows (the session’s writes for monotonic-writes, its reads for writes-follow-reads), as for reads: a write that follows a position a failover lost is refused with EPOCH_MISMATCH before anything is written',
      ),
    ),
  })
  app.get(
    '/v1/kv/:key',
    {
      config: { operation: 'get' },
      schema: {
        summary: 'Read a key',
        description:
          'Served by a replica whose stable vector covers `causeway-after` (waiting up to `timeoutMs`).',
        operationId: 'getKey',
        tags: ['kv'],
        params: KeyParamsSchema,
        querystring: withTimeoutMaximum(ReadQuerySchema, shape.limits.maxTimeoutMs),
        headers: ReadHeadersSchema,
        response: { 200: ReadReplySchema, ...errors },
      },
    },
    async (request, reply) => {
      const { request: read, afterBytes } = parseRead(
        request.params.key,
        request.query,
        request.headers,
        shape,
        { causal: true },
      )
      metrics.observeAfterHeader(read.level, afterBytes)
      const result = await service.read(read)
      metrics.observeReadWait(read.level, result.waitedMs)
      // Already JSON: Fastify sends a string with a JSON content type as it is.
      const context = contextHeader(result, read.key, service)
      const body = readReplyJson(result, service.region, context) as unknown as ReadReply
      if (context !== undefined) reply.header(HEADER_CONTEXT, context)
      return reply.type('application/json; charset=utf-8').send(body)
    },
  )

  app.put(
    '/v1/kv/:key',
    {
      config: { operation: 'put' },
      schema: {
        summary: 'Write a key',
        description:
          'Written at the partition leader of this region, stamped with an HLC past `causeway-dt`.',
        operationId: 'putKey',
        tags: ['kv'],
        params: KeyParamsSchema,
        querystring: WriteQuerySchema,
        headers: WriteHeadersSchema,
        body: PutBodySchema,
        response: { 200: WriteReplySchema, ...errors },
      },
    },
    async (request, reply) => {
      const value = encodeValue(request.body.value)
      const write = parseWrite(request.params.key, value, request.query, request.headers, shape, {
        causal: true,
        contexts: service,
      })
      const opId = opIdHeader(request.headers)
      if (opId !== undefined)
        write.op = writeOpOf(
          opId,
          {
            kind: 'put',
            key: write.key,
            value: value.json,
            context: request.headers[HEADER_CONTEXT],
          },
          opTenantOf(request),
        )
      return writeReply(await service.write(write), write.key, service, reply)
    },
  )

  app.delete(
    '/v1/kv/:key',
    {
      config: { operation: 'delete' },
      schema: {
        summary: 'Delete a key',
        description: 'Writes a tombstone version, ordered and replicated like any write.',
        operationId: 'deleteKey',
        tags: ['kv'],
        params: KeyParamsSchema,
        querystring: WriteQuerySchema,
        headers: WriteHeadersSchema,
        response: { 200: WriteReplySchema, ...errors },
      },
    },
    async (request, reply) => {
      const write = parseWrite(
        request.params.key,
        undefined,
        request.query,
        request.headers,
        shape,
        { causal: true, contexts: service },
      )
      const opId = opIdHeader(request.headers)
      if (opId !== undefined)
        write.op = writeOpOf(
          opId,
          {
            kind: 'delete',
            key: write.key,
            context: request.headers[HEADER_CONTEXT],
          },
          opTenantOf(request),
        )
      return writeReply(await service.write(write), write.key, service, reply)
    },
  )
}
