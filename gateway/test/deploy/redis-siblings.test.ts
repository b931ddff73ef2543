/**
 * Siblings namespaces on the Redis deployment (`causeway dev --backend redis --siblings hist`):
 * sibling sets written by the Lua scripts at the leaders, replicated to Redis followers and
 * shipped between regions over the internal HTTP endpoint. Concurrent SDK clients that write blind
 * or with their last read's context, switching regions, must keep every session guarantee, and
 * the regions must end on exactly the concurrent siblings; every replica of a partition (the
 * followers too) then holds the same set.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readFile } from 'node:fs/promises'
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import { checkHistory, formatReport, isRead, runWorkload } from '@causeway/history'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseClusterConfig, type ClusterConfig } from '../../src/config/cluster-config.js'
import { ReplicaKeys } from '../../src/storage/redis/index.js'
import { startCli, stopCli, urlsOf, type CliProcess } from '../cli/cli-process.js'

let cli: CliProcess
let urls: string[]
let config: ClusterConfig

beforeAll(async () => {
  cli = startCli([
    'dev',
    '--backend',
    'redis',
    '--port',
    '0',
    '--regions',
    '2',
    '--partitions',
    '2',
    '--replicas',
    '2',
    '--siblings',
    'hist',
  ])
  urls = await urlsOf(cli, 2, 30_000)
  const path = /^config (\S+)$/m.exec(cli.stdout())![1]!
  config = parseClusterConfig(JSON.parse(await readFile(path, 'utf8')), path)
}, 40_000)

afterAll(async () => {
  if (cli) await stopCli(cli, 'SIGTERM')
})

describe('siblings namespaces on the Redis deployment', () => {
  it('keep the session guarantees and converge on exactly the concurrent siblings', async () => {
    expect(config.namespaces).toEqual({ hist: { conflicts: 'siblings' } })
    const result = await runWorkload({
      connect,
      url: urls,
      regions: 2,
      clients: 6,
      keys: 3,
      namespace: 'hist',
      contextProbability: 0.6,
      opsPerClient: 30,
      durationMs: 6_000,
      switchRegionProbability: 0.5,
      level: { read: 'session', write: 'session' },
      seed: 21,
      timeoutMs: 8_000,
      convergence: { timeoutMs: 10_000 },
    })
    const report = checkHistory(result.history)
    const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    expect(Object.keys(result.history.finalSiblings ?? {}).length, context).toBe(3)
    const conflicts = result.history.operations.filter(
      (op) => isRead(op) && (op.reply?.siblings?.length ?? 0) > 1,
    )
    expect(conflicts.length, context).toBeGreaterThan(0)
    expect(Object.keys(result.failures).filter((c) => c !== 'SESSION_NOT_AVAILABLE')).toEqual([])

    // Every replica of every region (leaders and their Redis followers) holds the same set.
    const clients = config.regions.map((r) =>
      r.replicas.map((list) =>
        list.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })),
      ),
    )
    try {
      await Promise.all(clients.flat(2).map((c) => c.connect()))
      for (const key of result.keys) {
        const p = partitionOf(key, config.partitions)
        const sets = await Promise.all(
          clients.flatMap((region, d) =>
            region[p]!.map((c) =>
              c.get(new ReplicaKeys(config.redis.namespace, d, p).siblings(key)),
            ),
          ),
        )
        expect(sets[0], key).toBeTruthy()
        for (const set of sets) expect(set, key).toBe(sets[0])
      }
    } finally {
      for (const c of clients.flat(2)) c.disconnect()
    }
  }, 40_000)
})
