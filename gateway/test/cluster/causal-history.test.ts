/**
 * Causality across keys on the embedded cluster, end to end (SDK over HTTP, concurrent clients in
 * both regions, the history checker): with per-partition WAN delays (partitions 0 and 2 ship
 * their data 500 ms late, 1 and 3 at once), FIFO shipping lets a client see a write of a fast
 * partition before an earlier write of a slow one that it causally follows (the negative control
 * must find such anomalies), and causal shipping never does, while every session guarantee still
 * holds and the regions converge.
 */
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import {
  checkHistory,
  formatReport,
  isWrite,
  runWorkload,
  type WorkloadResult,
} from '@causeway/history'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { crossKeyWorkload, keysOver } from '../support/cross-key-workload.js'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

const PARTITIONS = 4
const DELAYS = [500, 0, 500, 0]

let dev: DevCluster | undefined
afterEach(async () => {
  await dev?.close()
  dev = undefined
})

async function run(
  shipping: 'fifo' | 'causal',
  seed: number,
  stabilisers = 1,
  during?: (dev: DevCluster) => Promise<void>,
): Promise<WorkloadResult> {
  dev = await startDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 2,
    port: 0,
    sync: false,
    shipping,
    partitionWanDelaysMs: DELAYS,
    logger: false,
    ...(shipping === 'causal' ? { causal: { replicas: stabilisers } } : {}),
  })
  const running = dev
  const causal = shipping === 'causal'
  const workload = crossKeyWorkload({
    urls: dev.urls,
    causal,
    seed,
    keys: keysOver(PARTITIONS, 1, `${shipping}${seed}`),
    durationMs: 8_000,
    timeoutMs: 5_000,
    convergenceTimeoutMs: 10_000,
  })
  // Both settle before anything is judged (or the cluster closed).
  const [result, step] = await Promise.allSettled([workload, during?.(running)])
  if (step.status === 'rejected') throw step.reason
  if (result.status === 'rejected') throw result.reason
  return result.value
}

describe('causality across keys, embedded cluster, per-partition WAN delays', () => {
  it('FIFO shipping shows cross-key anomalies (the negative control)', async () => {
    const result = await run('fifo', 17)
    const report = checkHistory(result.history, { asIfCausal: true })
    const context = `seed ${result.seed}\n${formatReport(report)}`
    const causal = report.results.causal!
    const crossKey = causal.violations.filter((v) => v.crossKey === true)
    console.log(
      `fifo: ${causal.violations.length} causal violations (${crossKey.length} cross-key) in ${causal.checked} checked`,
    )
    expect(crossKey.length, context).toBeGreaterThan(0)
    // FIFO keeps its own promises: per-key session guarantees and convergence.
    expect(
      report.violations.filter((v) => v.check !== 'causal'),
      context,
    ).toEqual([])
    expect(result.converged, context).toBe(true)
  }, 60_000)

  it('causal shipping shows none, and keeps the session guarantees', async () => {
    const result = await run('causal', 17)
    const report = checkHistory(result.history)
    console.log(
      `causal: ${report.results.causal!.checked} checked, ${report.results.causal!.crossRegion} across regions, ${result.history.operations.length} calls`,
    )
    const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    // Not vacuous: many calls had a causal past, much of it written in the other region.
    expect(report.results.causal!.checked, context).toBeGreaterThan(200)
    // The checker saw enough reads across regions to mean something (a loaded run made 48 of
    // a usual hundred or more; none would mean the workload never crossed).
    expect(report.results.causal!.crossRegion, context).toBeGreaterThan(20)
    expect(Object.keys(result.failures), context).toEqual([])
  }, 60_000)

  it('three regions, clients that switch region: no anomaly, and the session guarantees', async () => {
    dev = await startDevCluster({
      regions: 3,
      partitions: PARTITIONS,
      replicas: 1,
      port: 0,
      sync: false,
      shipping: 'causal',
      partitionWanDelaysMs: [150, 0, 150, 0],
      wanDelayMs: 20,
      logger: false,
    })
    const result = await runWorkload({
      connect,
      url: dev.urls,
      regions: 3,
      clients: 9,
      keys: keysOver(PARTITIONS, 1, 'three'),
      opsPerClient: 60,
      durationMs: 8_000,
      pauseMs: 30,
      // A client that moves waits there until the new region has applied what it has seen.
      switchRegionProbability: 0.2,
      mix: { get: 3, put: 2, delete: 0 },
      level: { read: 'causal', write: 'causal' },
      seed: 31,
      timeoutMs: 5_000,
      convergence: { timeoutMs: 10_000 },
    })
    const report = checkHistory(result.history)
    const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    // The checker saw enough reads across regions to mean something (a loaded run made 48 of
    // a usual hundred or more; none would mean the workload never crossed).
    expect(report.results.causal!.crossRegion, context).toBeGreaterThan(20)
    expect(Object.keys(result.failures), context).toEqual([])
  }, 60_000)

  it('loses no update and shows no anomaly when a stabiliser leader stops mid-run', async () => {
    let takeoverMs = Infinity
    let before = ''
    const result = await run('causal', 23, 3, async (dev) => {
      const region0 = dev.cluster.causal(0)
      const region1 = dev.cluster.causal(1)
      // Mid-run: once region 0's leader has shipped some of the run's labels.
      await vi.waitFor(() => expect(region0.replicas[0]!.status().ordered).toBeGreaterThan(50), {
        timeout: 10_000,
        interval: 20,
      })
      before = region1.view.current()[0]!
      const stopped = performance.now()
      await region0.stopReplica(0)
      expect(region0.leader).toBe(1)
      // The new leader ships: region 1's SiteTime of region 0 moves past where it stood.
      await vi.waitFor(() => expect(region1.view.current()[0]! > before).toBe(true), {
        timeout: 10_000,
        interval: 10,
      })
      takeoverMs = performance.now() - stopped
    })
    const report = checkHistory(result.history)
    const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
    console.log(
      `a new stabiliser leader of region 0 shipped ${takeoverMs.toFixed(0)} ms after the old one stopped`,
    )
    expect(takeoverMs).toBeLessThan(3_000)
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    expect(Object.keys(result.failures), context).toEqual([])
    // Every acknowledged write of region 0 is in region 1's log, where its origin put it.
    const writes = result.history.operations
      .filter(isWrite)
      .filter((op) => op.ok && op.region === 0)
    expect(writes.length).toBeGreaterThan(100)
    for (const op of writes) {
      const p = partitionOf(op.key, PARTITIONS)
      const leader = dev!.cluster.replica(1, p, 0)
      const [entry] = await leader.readLog(0, op.reply!.idx - 1, 1)
      expect(entry?.ts, `${op.key} 0:${op.reply!.idx}`).toBe(op.reply!.ts)
    }
  }, 60_000)
})
