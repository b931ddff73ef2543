/**
 * `GET /healthz`: liveness. While the gateway drains for shutdown it answers 503 SHUTTING_DOWN.
 * Gateways of other regions ask it to choose where to ship (`replication/gateway-health.ts`).
 */
import { ErrorReplySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

/** Options of the health route. */
export interface HealthRouteOptions {
  region: number
}

const HealthSchema = Type.Object({
  status: Type.Literal('ok'),
  region: Type.Integer({ minimum: 0 }),
})

/** The health route. */
export const healthRoute: FastifyPluginAsyncTypebox<HealthRouteOptions> = async (
  app,
  { region },
) => {
  app.get(
    '/healthz',
    {
      config: { operation: 'health', rateLimit: false as const },
      // Asked several times a second by every gateway that ships here (`gateway-health.ts`) and
      // by load balancers: not worth a request log line each at `info`.
      logLevel: 'warn',
      schema: {
        summary: 'Liveness',
        operationId: 'getHealth',
        tags: ['operations'],
        response: { 200: HealthSchema, '5xx': ErrorReplySchema },
      },
    },
    async () => ({ status: 'ok' as const, region }),
  )
}
