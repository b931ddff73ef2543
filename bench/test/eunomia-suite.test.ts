/**
 * The `eunomia` suite's probes against a real causal cluster (the write load stops on time and
 * counts only acknowledged writes; remote visibility is never below the injected WAN delay, so it
 * measures shipping, not a local echo), and its report's verdicts against the goals.
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { measureVisibility } from '../src/eunomia/visibility.js'
import { writeLoad } from '../src/eunomia/write-load.js'
import { type EunomiaResults, eunomiaSuite } from '../src/suites/eunomia.js'

const WAN_DELAY_MS = 30

describe('the eunomia probes on a causal cluster', () => {
  let dev: { urls: string[]; close(): Promise<void> }
  beforeAll(async () => {
    dev = await startDevCluster({
      regions: 2,
      partitions: 4,
      replicas: 1,
      port: 0,
      wanDelayMs: WAN_DELAY_MS,
      shipping: 'causal',
    })
  })
  afterAll(() => dev.close())

  it('the write load counts acknowledged causal writes and stops on time', async () => {
    const started = performance.now()
    const result = await writeLoad({
      urls: dev.urls,
      concurrency: 4,
      warmupMs: 100,
      measureMs: 400,
      level: 'causal',
      prefix: 'wl',
    })
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(result.failed).toBe(0)
    expect(result.ok).toBeGreaterThan(0)
    expect(result.opsPerS).toBeCloseTo(result.ok / 0.4, 6)
  })

  it('remote visibility is never below the one-way WAN delay', async () => {
    const v = await measureVisibility({
      urls: dev.urls,
      samples: 8,
      wanDelayMs: WAN_DELAY_MS,
      prefix: 'vt',
    })
    expect(v.latenciesMs).toHaveLength(8)
    expect(v.latenciesMs[0]).toBeGreaterThanOrEqual(WAN_DELAY_MS)
    expect(v.p50Ms).toBeLessThanOrEqual(v.p99Ms)
  })
})

/** Results whose three ratios are `ordering`, `throughput` and the causal visibility p50. */
function results(ordering: number, throughput: number, p50Ms: number): EunomiaResults {
  const row = (mode: 'fifo' | 'causal', p50: number) => ({
    mode,
    samples: 2,
    p50Ms: p50,
    p90Ms: p50,
    p99Ms: p50,
    writeMedianMs: 1,
    latenciesMs: [p50, p50],
  })
  return {
    backend: 'memory',
    cluster: { regions: 2, partitions: 4, replicas: 2 },
    ordering: {
      partitions: 60,
      thetaMs: 5,
      batchMs: 2,
      measureS: 1,
      rounds: [
        { service: 'sequencer', opsPerS: 1000 },
        { service: 'stabiliser', opsPerS: 1000 * ordering },
      ],
      sequencerOpsPerS: 1000,
      stabiliserOpsPerS: 1000 * ordering,
      ratio: ordering,
    },
    throughput: {
      concurrency: 16,
      measureS: 1,
      rounds: [],
      fifoOpsPerS: 1000,
      causalOpsPerS: 1000 * throughput,
      ratio: throughput,
    },
    visibility: {
      wanDelayMs: 50,
      thetaMs: 5,
      deltaMs: 10,
      boundMs: 70,
      rows: [row('fifo', 52), row('causal', p50Ms)],
    },
    tradeoff: { wanDelayMs: 20, concurrency: 16, measureS: 1, rows: [] },
  }
}

describe('the eunomia report', () => {
  it('says which goals are met', () => {
    const { markdown, charts } = eunomiaSuite.report(results(7.9, 0.97, 69), false)
    expect(markdown).toContain(
      '| ordering service vs a synchronous sequencer >= 7.7x | 7.90× | **met** |',
    )
    expect(markdown).toContain('| causal vs fifo write throughput >= 0.95x | 0.97× | **met** |')
    expect(markdown).toMatch(/= 70 ms \| 69\.0 ms \| \*\*met\*\* \|/)
    expect(charts.map((c) => c.file)).toEqual([
      'visibility-cdf',
      'tradeoff-throughput',
      'tradeoff-visibility',
    ])
  })

  it('and which are not', () => {
    const { markdown } = eunomiaSuite.report(results(7.0, 0.9, 71), false)
    expect(markdown).toContain('| 7.00× | **not met** |')
    expect(markdown).toContain('| 0.90× | **not met** |')
    expect(markdown).toMatch(/= 70 ms \| 71\.0 ms \| \*\*not met\*\* \|/)
  })
})
