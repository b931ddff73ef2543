/**
 * The `nami` suite's driver runs the banking workload against a cluster and the baseline, and its
 * report renders the paper's tables from results.
 */
import { startDevCluster } from '@causeway/gateway'
import { describe, expect, it } from 'vitest'
import { type NamiResults, namiSuite, runDriver } from '../src/suites/nami.js'

describe('the nami suite', () => {
  it('drives the banking workload on Causeway and sums the balances to zero', async () => {
    const dev = await startDevCluster({
      regions: 1,
      partitions: 2,
      replicas: 1,
      port: 0,
      sync: false,
      namespaces: { acct: { transactions: true } },
    })
    try {
      const target = ['--target', 'causeway', '--url', dev.urls[0]!, '--accounts', '200']
      expect(await runDriver([...target, '--setup'])).toEqual({ setup: 200 })
      const run = await runDriver([...target, '--workers', '3', '--seconds', '1', '--check'])
      expect(run).toMatchObject({ workers: 3, failed: 0, sum: 0 })
      expect(run['transactions']).toBeGreaterThan(0)
      expect(run['attempts']).toBeGreaterThanOrEqual(run['transactions'] as number)
    } finally {
      await dev.close()
    }
  }, 120_000)

  it('reports Table 2, the conflict rate, Table 3 and the goals', () => {
    const row = (system: string, cache: boolean, workers: number, throughput: number) => ({
      system,
      cache,
      workers,
      throughput,
      p50: 10,
      p95: 20,
      p99: 30,
      conflictRate: 0.01,
      transactions: 100,
      failed: 0,
      driverCpuS: 0.05,
      serverCpuMsPerTx: 1,
    })
    const results = {
      accounts: 30_000,
      descriptionBytes: 1000,
      movements: 5,
      seconds: 10,
      workers: [1, 10],
      embeddedBackend: 'memory',
      redisAvailable: true,
      rows: [
        row('embedded', true, 1, 100),
        row('embedded', true, 10, 1400),
        row('embedded', false, 10, 700),
        row('redis', true, 10, 300),
        row('redis-watch', true, 10, 600),
      ],
      sums: { embedded: 0, redis: 0 },
      cores: 2,
    } as NamiResults
    const { markdown } = namiSuite.report(results, false)
    expect(markdown).toContain('Table 2')
    expect(markdown).toContain('Table 3')
    expect(markdown).toContain('**1,400 tx/s**')
    expect(markdown).toMatch(/\*\*0\.50×\*\*/)
    expect(markdown).toContain('embedded 0, redis 0')
    // 100 transactions: 1 ms of the system's CPU and 0.5 ms of the driver's each; on 2 cores 1,333/s.
    expect(markdown).toContain('1.00 + 0.50 ms (1,333 tx/s)')
    expect(markdown).toContain('2 idle cores would allow about 1,333 tx/s')
  })
})
