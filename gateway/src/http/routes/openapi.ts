/**
 * The OpenAPI description, generated from the same TypeBox schemas that validate requests and
 * serialise replies, served as JSON at `GET /v1/openapi.json` (no UI).
 */
import { PROTOCOL_VERSION } from '@causeway/core'
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { SwaggerOptions } from '@fastify/swagger'
import type { FastifyPluginAsync } from 'fastify'

/** Path of the served OpenAPI document. */
export const OPENAPI_PATH = '/v1/openapi.json'

/**
 * Options of `@fastify/swagger`. Register it at the root before any route, so its `onRoute` hook
 * sees every route of the tree.
 */
export const openApiOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'Causeway gateway',
      description:
        'Per-call session guarantees over a partitioned, replicated, multi-region key-value store. ' +
        'docs/protocol.md describes the session protocol and the error codes.',
      version: `${PROTOCOL_VERSION}`,
    },
    tags: [
      { name: 'kv', description: 'Reads and writes with per-call consistency levels' },
      { name: 'cluster', description: 'Topology and replication status' },
      {
        name: 'transactions',
        description:
          'Multi-key transactions (Nami) of transactional namespaces: reads at a snapshot, commits ordered by the region’s transaction log',
      },
      { name: 'operations', description: 'Health, metrics and this document' },
    ],
  },
}

/** Options of {@link openApiRoute}. */
export interface OpenApiRouteOptions {
  /** How the cluster ships between regions: the `causal` level exists only with `'causal'`. */
  shipping: () => 'fifo' | 'causal'
}

/**
 * The route serving the document. It describes what this gateway enforces (issue 12): on a
 * cluster that ships fifo, the `causal` level is left out of every level enum, since such a
 * gateway refuses it (`INVALID_LEVEL`).
 */
export const openApiRoute: FastifyPluginAsync<OpenApiRouteOptions> = async (app, options) => {
  let fifoDocument: unknown
  app.get(
    OPENAPI_PATH,
    {
      config: { operation: 'openapi' },
      schema: {
        summary: 'This OpenAPI document',
        operationId: 'getOpenApi',
        tags: ['operations'],
        // Without a valid key (401) or over a rate limit (429) when the gateway has keys.
        response: { '4xx': ErrorReplySchema },
      },
    },
    async () => {
      if (options.shipping() === 'causal') return app.swagger()
      fifoDocument ??= withoutCausalLevel(structuredClone(app.swagger()))
      return fifoDocument
    },
  )
}

// A level enum: it names `session`, and `causal` beside it.
function withoutCausalLevel<T>(node: T): T {
  if (Array.isArray(node)) {
    for (const item of node) withoutCausalLevel(item)
  } else if (typeof node === 'object' && node !== null) {
    const record = node as Record<string, unknown>
    const values = record['enum']
    if (Array.isArray(values) && values.includes('session') && values.includes('causal'))
      record['enum'] = values.filter((v) => v !== 'causal')
    for (const value of Object.values(record)) withoutCausalLevel(value)
  }
  return node
}
