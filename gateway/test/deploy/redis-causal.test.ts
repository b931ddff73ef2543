/**
 * Causality across keys on the real thing: `causeway dev --backend redis`-style clusters (a
 * redis-server per replica, two gateway processes per region behind a balancer), SDK clients in
 * both regions, the history checker, and per-partition WAN delays (partitions 0 and 2 ship their
 * data 500 ms late). FIFO shipping shows cross-key anomalies (the negative control); causal
 * shipping shows none; and when the gateway process that leads region 0's stabiliser (the causal
 * lease holder) is killed with SIGKILL mid-run, the other gateway of the region takes the lease
 * and ships within seconds, no update is lost and still no anomaly shows.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import { checkHistory, formatReport, isWrite, type WorkloadResult } from '@causeway/history'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { crossKeyWorkload, keysOver } from '../support/cross-key-workload.js'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { ReplicaKeys } from '../../src/storage/redis/index.js'

const PARTITIONS = 4
const DELAYS = [500, 0, 500, 0]

const clusters: RedisDevCluster[] = []
/** The causal cluster, for the hostile-input test after the runs. */
let causalDev: RedisDevCluster | undefined
afterAll(async () => {
  await Promise.all(clusters.map((c) => c.close()))
}, 60_000)

async function start(mode: 'fifo' | 'causal'): Promise<RedisDevCluster> {
  const dev = await startRedisDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 1,
    gateways: 2,
    port: 0,
    appendfsync: 'everysec',
    shipping: { mode, leaseMs: 1500 },
    partitionWanDelaysMs: DELAYS,
  })
  clusters.push(dev)
  return dev
}

function workload(dev: RedisDevCluster, causal: boolean, seed: number): Promise<WorkloadResult> {
  return crossKeyWorkload({
    urls: dev.urls,
    causal,
    seed,
    keys: keysOver(PARTITIONS, 1, `${causal}${seed}`),
    durationMs: 10_000,
    timeoutMs: 8_000,
    convergenceTimeoutMs: 15_000,
  })
}

/** The gateways whose status says they lead their region's stabiliser. */
async function causalLeaders(dev: RedisDevCluster, region: number) {
  const out: typeof dev.gateways = []
  for (const g of dev.gateways.filter((g) => g.region === region)) {
    const res = await fetch(`${g.url}/v1/status`).catch(() => undefined)
    if (!res?.ok) continue
    const status = (await res.json()) as { causal?: { stabiliser: { leader: boolean } } }
    if (status.causal?.stabiliser.leader) out.push(g)
  }
  return out
}

/** Every acknowledged write is in every region's log, where its origin put it. */
async function expectLogged(dev: RedisDevCluster, result: WorkloadResult): Promise<void> {
  const { config } = dev
  const clients = config.regions.map((r) =>
    r.replicas.map((list) => new Redis(list[0]!, { lazyConnect: true, maxRetriesPerRequest: 1 })),
  )
  try {
    await Promise.all(clients.flat().map((c) => c.connect()))
    for (const op of result.history.operations.filter(isWrite)) {
      if (!op.ok || !op.reply) continue
      const p = partitionOf(op.key, PARTITIONS)
      for (const [d, region] of clients.entries()) {
        const keys = new ReplicaKeys(config.redis.namespace, d, p)
        const id = `${op.reply.idx}-0`
        const rows = await region[p]!.xrange(keys.log(op.reply.dc), id, id)
        expect(rows, `${op.key} ${op.reply.dc}:${op.reply.idx} in region ${d}`).toHaveLength(1)
        const fields = rows[0]![1]
        expect(fields[fields.indexOf('ts') + 1]).toBe(op.reply.ts)
      }
    }
  } finally {
    for (const c of clients.flat()) c.disconnect()
  }
}

describe('causality across keys on Redis, two gateway processes per region', () => {
  it('FIFO shipping shows cross-key anomalies (the negative control)', async () => {
    const dev = await start('fifo')
    const result = await workload(dev, false, 41)
    const report = checkHistory(result.history, { asIfCausal: true })
    const context = `seed ${result.seed}\n${formatReport(report)}`
    const crossKey = report.results.causal!.violations.filter((v) => v.crossKey === true)
    console.log(`fifo on redis: ${crossKey.length} cross-key anomalies`)
    expect(crossKey.length, context).toBeGreaterThan(5)
    expect(
      report.violations.filter((v) => v.check !== 'causal'),
      context,
    ).toEqual([])
    await dev.close()
  }, 90_000)

  it('causal shipping shows none; a killed stabiliser leader loses nothing', async () => {
    const dev = (causalDev = await start('causal'))
    const quiet = await workload(dev, true, 42)
    const first = checkHistory(quiet.history)
    const firstContext = `seed ${quiet.seed}, failures ${JSON.stringify(quiet.failures)}\n${formatReport(first)}`
    expect(first.violations, firstContext).toEqual([])
    expect(quiet.converged, firstContext).toBe(true)
    // The checker saw enough reads across regions to mean something (a loaded run made 48 of
    // a usual hundred or more; none would mean the workload never crossed).
    expect(first.results.causal!.crossRegion, firstContext).toBeGreaterThan(20)
    expect(Object.keys(quiet.failures), firstContext).toEqual([])
    await expectLogged(dev, quiet)

    // Again, and region 0's stabiliser leader is killed mid-run.
    const [victim] = await causalLeaders(dev, 0)
    expect(victim).toBeDefined()
    const survivor = dev.gateways.find((g) => g.region === 0 && g !== victim)!
    let killedAt = 0
    let takeoverMs = Infinity
    const running = workload(dev, true, 43)
    const kill = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      process.kill(victim!.pid!, 'SIGKILL')
      killedAt = performance.now()
      // The survivor takes the lease (it expires 1.5 s after the last renewal) and ships:
      // region 1's SiteTime of region 0 moves on.
      const siteOf = async () => {
        const res = await fetch(`${dev.urls[1]}/v1/status`)
        return ((await res.json()) as { causal: { receiver: { siteTime: string[] } } }).causal
          .receiver.siteTime[0]!
      }
      await vi.waitFor(async () => expect(await causalLeaders(dev, 0)).toEqual([survivor]), {
        timeout: 10_000,
        interval: 50,
      })
      const before = await siteOf()
      await vi.waitFor(async () => expect((await siteOf()) > before).toBe(true), {
        timeout: 10_000,
        interval: 20,
      })
      takeoverMs = performance.now() - killedAt
    })()
    const [result] = await Promise.all([running, kill])
    const report = checkHistory(result.history)
    const context = `seed ${result.seed}, failures ${JSON.stringify(result.failures)}\n${formatReport(report)}`
    console.log(
      `region 0's new stabiliser leader shipped ${Math.round(takeoverMs)} ms after SIGKILL`,
    )
    expect(takeoverMs).toBeLessThan(6_000)
    expect(report.violations, context).toEqual([])
    expect(result.converged, context).toBe(true)
    // Calls in flight on the killed gateway failed as network errors; nothing else failed.
    expect(
      Object.keys(result.failures).filter((c) => !['NETWORK_ERROR', 'TIMEOUT'].includes(c)),
      context,
    ).toEqual([])
    const later = result.history.operations.filter(
      (op) => isWrite(op) && op.ok && op.region === 0 && op.invokedAt > killedAt,
    )
    expect(later.length, context).toBeGreaterThan(20)
    await expectLogged(dev, result)
  }, 120_000)

  it('refuses hostile label envelopes with stable codes, and keeps shipping', async () => {
    const dev = causalDev!
    const secret = dev.config.auth.clusterSecret!
    const target = dev.urls[1]!
    const post = async (body: unknown, origin = 0) => {
      const res = await fetch(`${target}/v1/internal/causal/labels/${origin}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    const zero = '0000000000000000'
    const now = (Date.now() * 65_536).toString(16).padStart(16, '0')
    const far = ((Date.now() + 2 * 86_400_000) * 65_536).toString(16).padStart(16, '0')
    const envelope = (labels: unknown[], stable = zero) => ({ v: 1, from: 0, stable, labels })
    const cases: [string, unknown, string, number?][] = [
      [
        'a label of a partition the cluster lacks',
        envelope([{ p: 9, idx: 1, vts: [now, zero] }]),
        'INVALID_LABEL',
      ],
      ['a vector of the wrong length', envelope([{ p: 0, idx: 1, vts: [now] }]), 'INVALID_VECTOR'],
      [
        'a time far in the future',
        envelope([{ p: 0, idx: 1, vts: [far, zero] }]),
        'CLOCK_SKEW_EXCEEDED',
      ],
      ['a heartbeat far in the future', envelope([], far), 'CLOCK_SKEW_EXCEEDED'],
      ['an unknown version', { ...envelope([]), v: 9 }, 'UNSUPPORTED_LOG_FORMAT'],
      [
        'labels out of order',
        envelope([
          { p: 0, idx: 5, vts: [now, zero] },
          { p: 0, idx: 7, vts: [now, zero] },
        ]),
        'INVALID_LABEL',
      ],
      ['an envelope of another region', envelope([]), 'INVALID_LABEL', 1],
      ['not an envelope', 'labels', 'INVALID_REQUEST'],
    ]
    for (const [what, body, code, origin] of cases) {
      const res = await post(body, origin)
      expect(res, what).toMatchObject({ status: 400, body: { code } })
    }
    // A label that does not follow on is not taken (the sender resends from the checkpoint).
    const gap = await post(envelope([{ p: 0, idx: 1_000_000, vts: [now, zero] }]))
    expect(gap.status).toBe(200)
    expect((gap.body.received as number[])[0]).toBeLessThan(1_000_000)
    // And causal shipping goes on: a write in region 0 is visible to a causal read in region 1.
    const db = await connect({ url: dev.urls[0]!, defaults: { read: 'causal', write: 'causal' } })
    try {
      await db.put('after-hostile', 'still shipping')
      const read = await db.get('after-hostile', { region: 1, timeoutMs: 10_000 })
      expect(read.value).toBe('still shipping')
    } finally {
      await db.close()
    }
  }, 60_000)
})
