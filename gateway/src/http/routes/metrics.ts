/**
 * `GET /metrics` (Prometheus exposition) and the hook that times every request. Replication
 * gauges are read from the cluster service's status at scrape time, so they cost nothing between
 * scrapes.
 */
import { isReadLevel, isWriteLevel } from '@causeway/core'
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { ClusterService } from '../../cluster/cluster-service.js'
import type { GatewayMetrics } from '../gateway-metrics.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The `operation` label of the request latency metric. */
    operation?: string
  }
}

/** Options of the metrics route. */
export interface MetricsRouteOptions {
  service: ClusterService
  metrics: GatewayMetrics
}

const SET_READS = new Set(['set-has', 'set-size', 'set-scan'])
const SET_WRITES = new Set(['set-add', 'set-remove'])

// Only known levels become label values, so a client cannot blow up the series count.
function levelLabel(operation: string, query: unknown): string {
  const level = (query as { level?: unknown } | undefined)?.level
  if (operation === 'get' || SET_READS.has(operation))
    return level === undefined ? 'session' : isReadLevel(level) ? level : 'invalid'
  if (operation === 'put' || operation === 'delete' || SET_WRITES.has(operation)) {
    return level === undefined ? 'session' : isWriteLevel(level) ? level : 'invalid'
  }
  return ''
}

/** An `onResponse` hook recording every request's latency into `metrics`. */
export function requestTimer(metrics: GatewayMetrics) {
  return async function timeRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const operation = request.routeOptions.config.operation ?? 'unknown'
    metrics.observeRequest(
      operation,
      levelLabel(operation, request.query),
      reply.statusCode,
      reply.elapsedTime / 1000,
    )
  }
}

/** The metrics route. */
export const metricsRoute: FastifyPluginAsyncTypebox<MetricsRouteOptions> = async (
  app,
  { service, metrics },
) => {
  app.get(
    '/metrics',
    {
      config: { operation: 'metrics' },
      schema: {
        summary: 'Prometheus metrics',
        operationId: 'getMetrics',
        tags: ['operations'],
        // 4xx: without a valid key (401) or over a rate limit (429) when the gateway has keys,
        // as JSON like every error: each reply's own content type.
        response: {
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: Type.String() } },
          },
          '4xx': { content: { 'application/json': { schema: ErrorReplySchema } } },
        },
      },
    },
    async (_request, reply) => {
      metrics.updateFromStatus(await service.status())
      const { contentType, text } = await metrics.exposition()
      return reply.type(contentType).send(text)
    },
  )
}
