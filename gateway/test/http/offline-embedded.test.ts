/**
 * The offline-first HTTP suite on the embedded cluster, kept on disk (classic-level) so that a
 * restart reopens every replica from what it persisted.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { type Deployment, SUITE_OPTIONS, offlineSuite } from './offline-suite.js'

offlineSuite('embedded cluster (LevelDB on disk)', async (): Promise<Deployment> => {
  const dataDir = await mkdtemp(join(tmpdir(), 'causeway-offline-'))
  const start = () =>
    startDevCluster({
      regions: 2,
      partitions: 4,
      replicas: 2,
      port: 0,
      dataDir,
      sync: false,
      wanDelayMs: SUITE_OPTIONS.wanDelayMs,
      namespaces: SUITE_OPTIONS.namespaces,
      // The suite fills the whole gateway's cap with one key: its share is the cap here (the
      // per-key share has its own test, http/tenant-shares.test.ts).
      watch: {
        maxWatchers: SUITE_OPTIONS.maxWatchers,
        maxWatchersPerKey: SUITE_OPTIONS.maxWatchers,
      },
    })
  let dev: DevCluster = await start()
  const deployment: Deployment = {
    urls: [...dev.urls],
    partitions: 4,
    headers: {},
    maxWatchers: SUITE_OPTIONS.maxWatchers,
    async restart() {
      await dev.close()
      dev = await start()
      deployment.urls.splice(0, 2, ...dev.urls)
    },
    closeRegion1: () => dev.gateways[1]!.close(),
    async close() {
      await dev.close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
  return deployment
})
