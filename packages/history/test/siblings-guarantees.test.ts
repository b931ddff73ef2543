/**
 * The guarantees on a siblings namespace, end to end: concurrent SDK clients on a two-region dev
 * cluster (replica lag, WAN delay, a region whose clock runs behind) write blind or with the
 * context of their last read, switching regions. At the session levels the checker, which reads a
 * siblings read as a set of versions, must find nothing, and the regions must end on exactly the
 * concurrent siblings; at `eventual`, checked as if session, reads must break monotonic reads and
 * read-your-writes (the negative control).
 */
import { connect } from '@causeway/client'
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  checkHistory,
  formatReport,
  isRead,
  isWrite,
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
    namespaces: { hist: { conflicts: 'siblings' } },
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
    namespace: 'hist',
    contextProbability: 0.6,
    opsPerClient: 40,
    durationMs: 5_000,
    switchRegionProbability: 0.5,
    level,
    seed,
    convergence: { timeoutMs: 5_000 },
  })
}

function describeRun(result: WorkloadResult, report: CheckReport): string {
  return `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
}

describe('session guarantees on a siblings namespace', () => {
  it('hold at the session levels, and the regions end on exactly the concurrent siblings', async () => {
    const result = await workload({ read: 'session', write: 'session' }, 11)
    const report = checkHistory(result.history)
    const context = describeRun(result, report)
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    const ops = result.history.operations
    // The keys really were siblings keys, and the run exercised what makes them interesting.
    expect(Object.keys(result.history.finalSiblings ?? {}).sort(), context).toEqual(
      [...result.keys].sort(),
    )
    expect(result.history.final, context).toEqual({})
    const conflicts = ops.filter((op) => isRead(op) && (op.reply?.siblings?.length ?? 0) > 1)
    expect(conflicts.length, context).toBeGreaterThan(3)
    expect(
      ops.filter((op) => isWrite(op) && op.ok && op.context !== undefined).length,
    ).toBeGreaterThan(10)
    expect(
      ops.filter((op) => isWrite(op) && op.ok && op.context === undefined).length,
    ).toBeGreaterThan(10)
    for (const check of GUARANTEES)
      expect(report.results[check]!.crossRegion, `${check}\n${context}`).toBeGreaterThan(3)
    expect(report.results.convergence!.checked, context).toBe(2 * result.keys.length)
    expect(Object.keys(result.failures).filter((c) => c !== 'SESSION_NOT_AVAILABLE')).toEqual([])
  })

  it('are broken at eventual, and the checker says so (negative control)', async () => {
    const result = await workload({ read: 'eventual', write: 'eventual' }, 12)
    expect(checkHistory(result.history).violations).toEqual([])
    const report = checkHistory(result.history, { asIfSession: true })
    const context = describeRun(result, report)
    for (const check of ['monotonic-reads', 'read-your-writes'] as const)
      expect(report.results[check]!.violations.length, `${check}\n${context}`).toBeGreaterThan(0)
    expect(report.results.convergence!.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
  })
})
