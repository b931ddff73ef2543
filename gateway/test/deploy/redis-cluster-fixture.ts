/**
 * A two-region Redis deployment in this process for the hostile-input tests: real `redis-server`s
 * (2 regions × `partitions` × 2 replicas, followers REPLICAOF their leader), one gateway per
 * region shipping to the other over the internal endpoint, and a `cart` siblings namespace.
 * Fails (never skips) when `redis-server` cannot be started.
 */
import { parseClusterConfig, type ClusterConfig } from '../../src/cluster/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { freePort, stopAllRedis } from '../support/redis-server.js'
import { gridConfig, startRedisGrid, type RedisGrid } from './redis-grid.js'

/** A running deployment. */
export interface RedisDeployment {
  grid: RedisGrid
  config: ClusterConfig
  /** `gateways[d]`: the gateway of region `d`. */
  gateways: GatewayServer[]
  urls: [string, string]
  /** Background events the gateways reported (shipping failures, ...). */
  events: string[]
  close(): Promise<void>
}

/** Starts the servers and the gateways. */
export async function startRedisDeployment(partitions: number): Promise<RedisDeployment> {
  const grid = await startRedisGrid(2, partitions, 2)
  const ports = await Promise.all([freePort(), freePort()])
  const urls = ports.map((port) => `http://127.0.0.1:${port}`) as [string, string]
  const config = parseClusterConfig(
    gridConfig(
      grid,
      urls.map((url) => [url]),
      {
        auth: { clusterSecret: 'test-cluster-secret-0123456789' },
        shipping: { leaseMs: 900 },
        namespaces: { cart: { conflicts: 'siblings' } },
      },
    ),
  )
  const events: string[] = []
  const gateways = await Promise.all(
    ports.map((port, d) =>
      startGateway({
        config,
        region: d,
        port,
        cluster: {
          onEvent: (message, error) =>
            events.push(`${message}${error === undefined ? '' : `: ${String(error)}`}`),
        },
      }),
    ),
  )
  // A shipper that asked the other region before its gateway listened was refused and retries:
  // how the gateways came up, not a failure of what the tests do.
  events.length = 0
  return {
    grid,
    config,
    gateways,
    urls,
    events,
    async close() {
      await Promise.all(gateways.map((g) => g.close()))
      await stopAllRedis()
    },
  }
}

/**
 * Events that say shipping or replication failed: not lease changes, nor the quarantine reports
 * (`quarantine.ts`), which the tests check through the status.
 */
export function failures(events: readonly string[]): string[] {
  return events.filter(
    (e) =>
      !/^(acquired|lost) the shipping lease/.test(e) &&
      !/^causeway: (quarantined|rebuilt|entry) /.test(e),
  )
}
