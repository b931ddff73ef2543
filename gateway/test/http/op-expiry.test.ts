/**
 * The op-expiry suite (`op-expiry-suite.ts`) on the embedded cluster (LevelDB replicas and
 * transaction log), through the gateway's routes.
 */
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import { buildGateway } from '../../src/http/build-gateway.js'
import { ADMIN_KEY, RETENTION_MS, TENANT_KEY, opExpirySuite } from './op-expiry-suite.js'

opExpirySuite('embedded cluster (LevelDB)', async () => {
  const cluster = await EmbeddedCluster.start({
    regions: 1,
    partitions: 2,
    replicas: 1,
    sync: false,
    opRetentionMs: RETENTION_MS,
    namespaces: { cart: { conflicts: 'siblings' }, acct: { transactions: true } },
  })
  const app = buildGateway({
    service: cluster.service(0),
    regionUrls: ['http://a'],
    processMetrics: false,
    auth: {
      apiKeys: [
        { key: ADMIN_KEY, name: 'admin' },
        { key: TENANT_KEY, name: 'tenant-a' },
      ],
    },
  })
  return {
    async request(key, method, path, init = {}) {
      const res = await app.inject({
        method,
        url: path,
        headers: { authorization: `Bearer ${key}`, ...init.headers },
        ...(init.json === undefined ? {} : { payload: init.json as object }),
      })
      return {
        status: res.statusCode,
        headers: res.headers as Record<string, string | undefined>,
        body: res.json(),
      }
    },
    async close() {
      await app.close()
      await cluster.close()
    },
  }
})
