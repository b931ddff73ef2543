/** `GET /v1/status`: every replica of this region (role, `sv`, lag) and its shipping links. */
import { ErrorReplySchema, StatusSchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ClusterService } from '../../cluster/cluster-service.js'

/** Options of the status route. */
export interface StatusRouteOptions {
  service: ClusterService
}

/** The status route. */
export const statusRoute: FastifyPluginAsyncTypebox<StatusRouteOptions> = async (
  app,
  { service },
) => {
  app.get(
    '/v1/status',
    {
      config: { operation: 'status' },
      schema: {
        summary: 'Replica and shipping status',
        description:
          'Per replica: partition, role, stable vector and lag; per shipping link: backlog.',
        operationId: 'getStatus',
        tags: ['cluster'],
        // 4xx: without a valid key (401) or over a rate limit (429) when the gateway has keys.
        response: { 200: StatusSchema, '4xx': ErrorReplySchema, '5xx': ErrorReplySchema },
      },
    },
    async () => service.status(),
  )
}
