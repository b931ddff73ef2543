/** `GET /v1/topology`: what an SDK learns on connect (shape, region URLs, limits, epochs). */
import { PROTOCOL_VERSION, type Topology } from '@causeway/core'
import { ErrorReplySchema, TopologySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ClusterShape } from '../../cluster/cluster-service.js'

/** Options of the topology route. */
export interface TopologyRouteOptions {
  shape: () => ClusterShape
  /** The public URL of each region's gateway, by region id. */
  regionUrls: () => readonly string[]
}

/** The topology a gateway publishes. */
export function topologyOf(shape: ClusterShape, regionUrls: readonly string[]): Topology {
  return {
    cluster: shape.cluster,
    protocol: PROTOCOL_VERSION,
    region: shape.region,
    regions: shape.regionNames.map((name, id) => ({ id, name, url: regionUrls[id] ?? '' })),
    partitions: shape.partitions,
    replicas: shape.replicas,
    epochs: [...shape.epochs],
    limits: { ...shape.limits },
    shipping: shape.shipping,
    // Checked namespaces always name their conflict mode; the wire form says it explicitly.
    namespaces: Object.fromEntries(
      Object.entries(shape.namespaces).map(([name, config]) => [
        name,
        { ...config, conflicts: config.conflicts ?? 'lww' },
      ]),
    ),
  }
}

/** The topology route. */
export const topologyRoute: FastifyPluginAsyncTypebox<TopologyRouteOptions> = async (
  app,
  options,
) => {
  app.get(
    '/v1/topology',
    {
      config: { operation: 'topology' },
      schema: {
        summary: 'Cluster topology',
        description:
          'Regions and their gateway URLs, partitions, epochs, limits and protocol version.',
        operationId: 'getTopology',
        tags: ['cluster'],
        // 4xx: without a valid key (401) or over a rate limit (429) when the gateway has keys.
        response: { 200: TopologySchema, '4xx': ErrorReplySchema, '5xx': ErrorReplySchema },
      },
    },
    async () => topologyOf(options.shape(), options.regionUrls()),
  )
}
