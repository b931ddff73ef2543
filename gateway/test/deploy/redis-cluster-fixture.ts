/**
 * A two-region Redis deployment in this process for the hostile-input tests: real `redis-server`s
 * (2 regions × `partitions` × 2 replicas, followers REPLICAOF their leader), one gateway per
 * region shipping to the other over the internal endpoint, and a `cart` siblings namespace.
 * Fails (never skips) when `redis-server` cannot be started.
 */
import { parseClusterConfig, type ClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { keysIn } from '../support/forged-context.js'
import { afterWrite, getKey, putKey } from '../support/http-calls.js'
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
  // Each region's shippers start before the other region's gateway listens, so their first sends
  // may fail and be retried. Once a write of each partition has crossed each way, shipping works
  // and every such start-up failure has been reported: the tests count failures from there on.
  for (const [d, from] of urls.entries())
    for (let p = 0; p < partitions; p++) {
      const [key] = keysIn(p, partitions, 1, `fixture:${d}:`)
      const put = await putKey(from, key!, 'ready')
      const read = await getKey(urls[1 - d]!, key!, '?timeoutMs=10000', {
        'causeway-after': afterWrite(put),
      })
      if (read.status !== 200) throw new Error(`shipping from region ${d} never started`)
    }
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
