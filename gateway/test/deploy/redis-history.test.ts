/**
 * The session guarantees on the real thing: `causeway dev --backend redis` with two gateway
 * processes per region (behind each region's balancer), concurrent SDK clients switching regions,
 * and the history checker. In the second run the gateway process that ships region 0's
 * partitions (the lease holder) is killed (SIGKILL) in the middle: the other gateway of the region
 * takes the leases over, and still no session sees a violation, the regions converge, and every
 * region's copy of every partition log is the same, gap-free and without duplicates.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readFile } from 'node:fs/promises'
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import {
  checkHistory,
  formatReport,
  isWrite,
  runWorkload,
  type WorkloadResult,
} from '@causeway/history'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { parseClusterConfig, type ClusterConfig } from '../../src/config/cluster-config.js'
import { ReplicaKeys } from '../../src/storage/redis/index.js'
import { startCli, stopCli, urlsOf, type CliProcess } from '../cli/cli-process.js'

const GUARANTEES = [
  'monotonic-reads',
  'read-your-writes',
  'monotonic-writes',
  'writes-follow-reads',
] as const

let cli: CliProcess
let urls: string[]
let config: ClusterConfig
let gateways: { region: number; index: number; url: string; pid: number }[]

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
    '--gateways',
    '2',
  ])
  urls = await urlsOf(cli, 2, 30_000)
  const out = cli.stdout()
  gateways = [...out.matchAll(/^gateway (\d+)\.(\d+) (\S+) pid (\d+)$/gm)].map((m) => ({
    region: Number(m[1]),
    index: Number(m[2]),
    url: m[3]!,
    pid: Number(m[4]),
  }))
  const path = /^config (\S+)$/m.exec(out)![1]!
  config = parseClusterConfig(JSON.parse(await readFile(path, 'utf8')), path)
}, 40_000)

afterAll(async () => {
  if (cli) await stopCli(cli, 'SIGTERM')
})

function workload(seed: number, opsPerClient: number): Promise<WorkloadResult> {
  return runWorkload({
    connect,
    url: urls,
    regions: 2,
    clients: 6,
    keys: 3,
    opsPerClient,
    durationMs: 6_000,
    switchRegionProbability: 0.5,
    level: { read: 'session', write: 'session' },
    seed,
    timeoutMs: 8_000,
    convergence: { timeoutMs: 10_000 },
  })
}

/** How many entries the shippers of the gateway at `url` have had acknowledged so far. */
async function shippedBy(url: string): Promise<number> {
  const res = await fetch(`${url}/v1/status`)
  const status = (await res.json()) as { shippers: { shipped: number }[] }
  return status.shippers.reduce((sum, s) => sum + s.shipped, 0)
}

async function shippersOf(url: string): Promise<number[]> {
  const res = await fetch(`${url}/v1/status`)
  const status = (await res.json()) as { shippers: { partition: number }[] }
  return [...new Set(status.shippers.map((s) => s.partition))].sort()
}

/** Every region's leader holds the same log of every origin: ids 1..n, no gap, no duplicate. */
async function checkLogs(result: WorkloadResult): Promise<void> {
  const { regions, partitions } = { regions: config.regions.length, partitions: config.partitions }
  const clients = config.regions.map((r) =>
    r.replicas.map((list) => new Redis(list[0]!, { lazyConnect: true, maxRetriesPerRequest: 1 })),
  )
  try {
    await Promise.all(clients.flat().map((c) => c.connect()))
    for (let p = 0; p < partitions; p++) {
      for (let origin = 0; origin < regions; origin++) {
        const logs = await Promise.all(
          clients.map(async (region, d) => {
            const keys = new ReplicaKeys(config.redis.namespace, d, p)
            const rows = await region[p]!.xrange(keys.log(origin), '-', '+')
            const sv = Number((await region[p]!.hget(keys.sv, String(origin))) ?? 0)
            return { rows, sv }
          }),
        )
        const reference = logs[origin]!
        reference.rows.forEach(([id], i) => expect(id).toBe(`${i + 1}-0`))
        for (const { rows, sv } of logs) {
          expect(sv).toBe(reference.rows.length)
          expect(rows).toEqual(reference.rows)
        }
      }
    }
    // Every acknowledged write is in every region's log, where its origin put it.
    for (const op of result.history.operations) {
      if (!isWrite(op) || !op.ok || !op.reply) continue
      const p = partitionOf(op.key, partitions)
      for (const [d, region] of clients.entries()) {
        const keys = new ReplicaKeys(config.redis.namespace, d, p)
        const id = `${op.reply.idx}-0`
        const rows = await region[p]!.xrange(keys.log(op.reply.dc), id, id)
        expect(rows, `${op.key} ${op.reply.dc}:${op.reply.idx} in region ${d}`).toHaveLength(1)
        const fields = rows[0]![1]
        expect(fields[fields.indexOf('ts') + 1]).toBe(op.reply.ts)
        expect(fields[fields.indexOf('k') + 1]).toBe(op.key)
      }
    }
  } finally {
    for (const c of clients.flat()) c.disconnect()
  }
}

function expectClean(result: WorkloadResult, allowed: readonly string[]): void {
  const report = checkHistory(result.history)
  const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
  expect(report.violations, context).toEqual([])
  expect(result.converged, context).toBe(true)
  for (const check of GUARANTEES)
    expect(report.results[check]!.crossRegion, `${check}\n${context}`).toBeGreaterThan(2)
  const calls = result.history.operations.length
  expect(
    Object.keys(result.failures).filter((code) => !allowed.includes(code)),
    context,
  ).toEqual([])
  const failed = Object.values(result.failures).reduce((a, b) => a + b, 0)
  expect(failed, context).toBeLessThan(calls / 10)
}

describe('causeway dev --backend redis, two gateway processes per region', () => {
  it('starts every gateway and publishes each region behind one URL', () => {
    expect(gateways).toHaveLength(4)
    expect(config.regions.map((r) => r.gateways.length)).toEqual([2, 2])
    expect(config.regions.map((r) => r.url)).toEqual(urls)
  })

  it('keeps the session guarantees and converges', async () => {
    const result = await workload(11, 30)
    expectClean(result, ['SESSION_NOT_AVAILABLE'])
    await checkLogs(result)
  }, 30_000)

  it('loses and duplicates nothing when the shipping gateway is killed mid-run', async () => {
    const region0 = gateways.filter((g) => g.region === 0)
    const held = await Promise.all(region0.map((g) => shippersOf(g.url)))
    expect(held.flat().sort()).toEqual([0, 1])
    const victim = region0[held.findIndex((h) => h.length > 0)]!
    const survivor = region0.find((g) => g !== victim)!

    const before = await shippedBy(victim.url)
    const running = workload(12, 90)
    // Mid-run: once the victim has shipped some of this run's writes.
    await vi.waitFor(
      async () => expect(await shippedBy(victim.url)).toBeGreaterThanOrEqual(before + 20),
      { timeout: 5000, interval: 50 },
    )
    process.kill(victim.pid, 'SIGKILL')
    const killedAt = performance.now()
    // How long until the survivor ships every partition (bounded: 200 polls of 50 ms).
    const takeover = (async () => {
      for (let i = 0; i < 200; i++) {
        const partitions = await shippersOf(survivor.url).catch(() => [])
        if (partitions.length === 2) return performance.now() - killedAt
        await new Promise((r) => setTimeout(r, 50))
      }
      return Infinity
    })()
    const result = await running

    // The survivor took every lease within a few seconds (the lease lasts 3 s).
    expect(await takeover).toBeLessThan(6_000)
    expect(await shippersOf(survivor.url)).toEqual([0, 1])
    // Not vacuous: region 0 took writes after the kill, which only the survivor could ship.
    const later = result.history.operations.filter(
      (op) => isWrite(op) && op.ok && op.region === 0 && op.invokedAt > killedAt,
    )
    expect(later.length, JSON.stringify(result.failures)).toBeGreaterThan(10)
    // Calls in flight on the killed gateway failed as network errors; nothing else failed.
    expectClean(result, ['SESSION_NOT_AVAILABLE', 'NETWORK_ERROR', 'TIMEOUT'])
    await checkLogs(result)
    expect(cli.stderr()).toMatch(/gateway \d of region 0 .* exited \(SIGKILL\)/)
  }, 35_000)

  it('stops every process on SIGTERM', async () => {
    const code = await stopCli(cli, 'SIGTERM')
    expect(code).toBe(0)
    const leader = new Redis(config.regions[0]!.replicas[0]![0]!, {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    })
    leader.on('error', () => {})
    await expect(leader.connect()).rejects.toThrow()
    leader.disconnect()
    for (const g of gateways) expect(() => process.kill(g.pid, 0)).toThrow()
  })
})
