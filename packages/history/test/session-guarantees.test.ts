/**
 * The guarantees end to end: concurrent SDK clients on a two-region dev cluster with replica lag,
 * WAN delay and a region whose clock runs 300 ms behind, switching regions at random. At the
 * session levels the checker must find nothing; at `eventual`, checked as if session, it must
 * find violations of every guarantee (the negative control: it shows the checker can fail).
 */
import { connect } from '@causeway/client'
import { READ_LEVELS, WRITE_LEVELS } from '@causeway/core'
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  checkHistory,
  formatReport,
  runWorkload,
  type CheckName,
  type CheckReport,
  type WorkloadOptions,
  type WorkloadResult,
} from '../src/index.js'

const GUARANTEES: CheckName[] = [
  'monotonic-reads',
  'read-your-writes',
  'monotonic-writes',
  'writes-follow-reads',
]

let cluster: Awaited<ReturnType<typeof startDevCluster>> | undefined

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 3,
    port: 0,
    replicaLagMs: 40,
    wanDelayMs: 150,
    clockOffsetsMs: [0, -300],
  })
})

afterAll(async () => {
  await cluster?.close()
})

function workload(level: WorkloadOptions['level'], seed: number): Promise<WorkloadResult> {
  return runWorkload({
    connect,
    url: cluster!.urls,
    regions: 2,
    clients: 6,
    keys: 3,
    opsPerClient: 40,
    durationMs: 5_000,
    switchRegionProbability: 0.5,
    level,
    seed,
    convergence: { timeoutMs: 5_000 },
  })
}

/** Context for a failure: the seed, what failed and the first violations. */
function describeRun(result: WorkloadResult, report: CheckReport): string {
  return `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
}

describe('session guarantees on a two-region cluster under lag', () => {
  it('hold at the session levels, across region switches', async () => {
    const result = await workload({ read: 'session', write: 'session' }, 1)
    const report = checkHistory(result.history)
    const context = describeRun(result, report)
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    // Not vacuous: each guarantee was exercised where it is hard, across regions.
    for (const check of GUARANTEES)
      expect(report.results[check]!.crossRegion, `${check}\n${context}`).toBeGreaterThan(5)
    // Reads wait for the session rather than fail; a rare refused read is allowed.
    const calls = result.history.operations.length
    expect(result.failures.SESSION_NOT_AVAILABLE ?? 0, context).toBeLessThan(calls / 20)
    expect(Object.keys(result.failures).filter((c) => c !== 'SESSION_NOT_AVAILABLE')).toEqual([])
  })

  it('hold for what each call asks when levels are mixed call by call', async () => {
    const result = await workload({ read: READ_LEVELS, write: WRITE_LEVELS }, 2)
    const report = checkHistory(result.history)
    expect(report.violations, describeRun(result, report)).toEqual([])
    expect(result.converged).toBe(true)
  })

  it('are broken at eventual, and the checker says so (negative control)', async () => {
    const result = await workload({ read: 'eventual', write: 'eventual' }, 3)
    // Eventual promises nothing per session, and the cluster still converges.
    expect(checkHistory(result.history).violations).toEqual([])
    const report = checkHistory(result.history, { asIfSession: true })
    const context = describeRun(result, report)
    for (const check of GUARANTEES)
      expect(report.results[check]!.violations.length, `${check}\n${context}`).toBeGreaterThan(0)
    expect(report.results.convergence!.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
  })
})
