/**
 * The OpenAPI description, generated from the same TypeBox schemas that validate requests and
 * serialise replies, served as JSON at `GET /v1/openapi.json` (no UI).
 */
import { PROTOCOL_VERSION } from '@causeway/core'
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

/** The route serving the document. */
export const openApiRoute: FastifyPluginAsync = async (app) => {
  app.get(
    OPENAPI_PATH,
    {
      config: { operation: 'openapi' },
      schema: { summary: 'This OpenAPI document', operationId: 'getOpenApi', tags: ['operations'] },
    },
    async () => app.swagger(),
  )
}
