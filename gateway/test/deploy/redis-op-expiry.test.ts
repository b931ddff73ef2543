/**
 * The op-expiry suite (`../http/op-expiry-suite.ts`) on a gateway over real Redis servers (the
 * partition leaders' scripts and the transaction log's).
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway } from '../../src/gateway-server.js'
import { freePort, startRedis, stopAllRedis } from '../support/redis-server.js'
import { ADMIN_KEY, RETENTION_MS, TENANT_KEY, opExpirySuite } from '../http/op-expiry-suite.js'
import { gridConfig, startRedisGrid } from './redis-grid.js'

opExpirySuite('gateway over Redis', async () => {
  const grid = await startRedisGrid(1, 2, 1)
  const txServer = await startRedis()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const file = gridConfig(grid, [[url]], {
    auth: {
      apiKeys: [
        { key: ADMIN_KEY, name: 'admin' },
        { key: TENANT_KEY, name: 'tenant-a' },
      ],
      clusterSecret: 'op-expiry-cluster-secret-0123456789',
    },
    namespaces: { cart: { conflicts: 'siblings' }, acct: { transactions: true } },
  })
  file.regions[0]!.transactions = [txServer.url]
  const gateway = await startGateway({
    config: parseClusterConfig(file),
    region: 0,
    port,
    cluster: { onEvent: () => {}, opRetentionMs: RETENTION_MS },
  })
  return {
    async request(key, method, path, init = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...init.headers }
      if (init.json !== undefined) headers['content-type'] = 'application/json'
      const res = await fetch(url + path, {
        method,
        headers,
        ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
      })
      return {
        status: res.status,
        headers: Object.fromEntries(res.headers),
        body: (await res.json()) as Record<string, unknown>,
      }
    },
    async close() {
      await gateway.close()
      await stopAllRedis()
    },
  }
})
