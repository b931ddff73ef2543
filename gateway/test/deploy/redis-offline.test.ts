/**
 * The offline-first HTTP suite on gateways over real Redis servers: two regions × two partitions
 * × two replicas (followers are Redis replicas), one gateway per region shipping to the other over
 * HTTP, with API keys. A restart closes region 0's gateway and starts a new one on the same port:
 * what it remembers is what Redis kept.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { freePort, stopAllRedis } from '../support/redis-server.js'
import { type Deployment, SUITE_OPTIONS, offlineSuite } from '../http/offline-suite.js'
import { gridConfig, startRedisGrid } from './redis-grid.js'

const API_KEY = 'offline-api-key-0123456789'
const SECRET = 'offline-cluster-secret-0123456789'
const PARTITIONS = 2

offlineSuite('gateways over Redis', async (): Promise<Deployment> => {
  const grid = await startRedisGrid(2, PARTITIONS, 2)
  const ports = await Promise.all([freePort(), freePort()])
  const urls = ports.map((port) => `http://127.0.0.1:${port}`)
  const config = parseClusterConfig(
    gridConfig(
      grid,
      urls.map((url) => [url]),
      {
        auth: { apiKeys: [API_KEY], clusterSecret: SECRET },
        shipping: { leaseMs: 900 },
        namespaces: SUITE_OPTIONS.namespaces,
        benchmark: { wanDelayMs: SUITE_OPTIONS.wanDelayMs },
        // The suite checks the watcher cap with 10,000 watch requests from one key: the default
        // rate limit (5,000 a second per key) would refuse some of them first whenever they run
        // faster than that, so the verdict would depend on the machine's speed. Off here; the
        // rate limit has its own tests (redis-gateway.test.ts, rate-limit tests).
        rateLimit: { max: 0 },
      },
    ),
  )
  const start = (region: number) =>
    startGateway({
      config,
      region,
      port: ports[region]!,
      // The suite fills the whole gateway's cap with one key: its share is the cap here (the
      // per-key share has its own test, http/tenant-shares.test.ts).
      watch: {
        maxWatchers: SUITE_OPTIONS.maxWatchers,
        maxWatchersPerKey: SUITE_OPTIONS.maxWatchers,
      },
      cluster: { onEvent: () => {} },
    })
  const gateways: GatewayServer[] = [await start(0), await start(1)]
  return {
    urls,
    partitions: PARTITIONS,
    headers: { authorization: `Bearer ${API_KEY}` },
    maxWatchers: SUITE_OPTIONS.maxWatchers,
    async restart() {
      await gateways[0]!.close()
      gateways[0] = await start(0)
    },
    closeRegion1: () => gateways[1]!.close(),
    async close() {
      await Promise.all(gateways.map((g) => g.close()))
      await stopAllRedis()
    },
  }
})
