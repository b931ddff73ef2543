/**
 * `@causeway/gateway`: the HTTP gateway over a cluster service, the embedded multi-region
 * cluster, and the dev server that runs both in one process (`causeway dev`).
 * @packageDocumentation
 */
export { buildGateway, type Gateway, type GatewayOptions } from './http/build-gateway.js'
export { GatewayMetrics, type GatewayMetricsOptions } from './http/gateway-metrics.js'
export { OPENAPI_PATH } from './http/routes/openapi.js'
export {
  startDevCluster,
  serveCluster,
  type DevCluster,
  type DevClusterOptions,
  type ServableCluster,
  type ServeOptions,
  type ServedCluster,
} from './dev-server.js'
export { EmbeddedCluster, type EmbeddedClusterOptions } from './cluster/embedded-cluster.js'
export type {
  ClusterService,
  ClusterShape,
  ReadRequest,
  ReadResult,
  WriteRequest,
  WriteResult,
} from './cluster/cluster-service.js'
export {
  Stabiliser,
  type StabiliserCounts,
  type StabiliserOptions,
} from './replication/causal/stabiliser.js'
export type { CausalOptions } from './cluster/embedded-cluster.js'
