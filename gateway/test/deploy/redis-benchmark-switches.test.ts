/**
 * The benchmark switches of a Redis-backed cluster (the config's `benchmark` section, set by
 * `causeway dev --backend redis --wan-delay MS --without-hlc`): shipping between regions takes the
 * emulated WAN delay, and the "without HLC" ablation makes a write wait at its leader until the
 * leader has applied the write's dependency vector, as the embedded cluster's ablation does. Two
 * real redis-servers and two gateways (one per region) shipping to each other over HTTP.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { hlcFrom, hlcMillis } from '@causeway/core'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startGateway, type GatewayServer } from '../../src/gateway-server.js'
import { freePort, startRedis, stopAllRedis, type RedisServer } from '../support/redis-server.js'
import { writeRequest } from '../support/write-request.js'

const WAN_MS = 300

let servers: RedisServer[] = []
const gateways: GatewayServer[] = []
let namespace = 0

beforeAll(async () => {
  servers = await Promise.all([
    startRedis({ appendfsync: 'everysec' }),
    startRedis({ appendfsync: 'everysec' }),
  ])
}, 20_000)

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()))
})

afterAll(async () => {
  await stopAllRedis()
})

/** Both regions of a fresh cluster (its own Redis namespace on the shared servers). */
async function start(benchmark: {
  wanDelayMs: number
  withoutHlc: boolean
  clockOffsetsMs?: number[]
}) {
  const ports = [await freePort(), await freePort()]
  const config = parseClusterConfig({
    format: 1,
    cluster: `switches-${++namespace}`,
    partitions: 1,
    regions: servers.map((s, d) => ({
      name: `r${d}`,
      url: `http://127.0.0.1:${ports[d]}`,
      replicas: [[s.url]],
    })),
    auth: { clusterSecret: 'cluster-secret-for-the-test' },
    shipping: { leaseMs: 600, retryMaxMs: 200 },
    benchmark,
  })
  for (const [d, port] of ports.entries()) {
    gateways.push(
      await startGateway({ config, region: d, port, cluster: { onEvent: () => undefined } }),
    )
  }
  const [g0, g1] = gateways as [GatewayServer, GatewayServer]
  // Wait for both shipping leases, so shipping starts at once in the measurements below.
  await vi.waitFor(
    () =>
      expect(
        g0.cluster.shippingLeases().length + g1.cluster.shippingLeases().length,
        'shipping leases taken',
      ).toBe(2),
    { timeout: 5000, interval: 20 },
  )
  return { g0, g1 }
}

describe('Redis cluster benchmark switches', () => {
  it('delays shipping between regions by the WAN delay', async () => {
    const { g0, g1 } = await start({ wanDelayMs: WAN_MS, withoutHlc: false })
    const first = await g0.cluster.service.write(writeRequest('k'))
    const started = performance.now()
    const leader = g1.cluster.replicas[0]![0]!
    expect(leader.sv()[0] ?? 0).toBeLessThan(first.idx)
    expect(await leader.waitFor([first.idx, 0], Date.now() + 5000)).toBe(true)
    // One way there; the shipper may also have been idle for a poll first.
    expect(performance.now() - started).toBeGreaterThanOrEqual(WAN_MS - 30)
    expect(performance.now() - started).toBeLessThan(WAN_MS + 1500)
  }, 15_000)

  it('without HLC, makes a write wait at the leader until its dependencies are applied', async () => {
    const { g0, g1 } = await start({ wanDelayMs: WAN_MS, withoutHlc: true })
    const first = await g0.service.write(writeRequest('k'))
    const started = performance.now()
    const second = await g1.service.write(
      writeRequest('k', { dt: first.ts, need: { epoch: first.epoch, need: [first.idx, 0] } }),
    )
    const took = performance.now() - started
    // It could not be accepted before region 0's write was shipped, and it says how long it waited.
    expect(took).toBeGreaterThanOrEqual(WAN_MS - 30)
    expect(second.waitedMs).toBeGreaterThanOrEqual(WAN_MS - 30)
    expect(second.waitedMs).toBeLessThanOrEqual(took + 1)
    expect(g1.cluster.replicas[0]![0]!.sv()[0]).toBeGreaterThanOrEqual(first.idx)
    expect(second.ts > first.ts).toBe(true)

    // Stamped from the leader's clock only: a dt far ahead does not push the stamp.
    const dt = hlcFrom(Date.now() + 10_000, 0)
    const third = await g0.service.write(writeRequest('j', { dt }))
    expect(hlcMillis(third.ts)).toBeLessThan(hlcMillis(dt))
    // A write with nothing to wait for reports 0, and an eventual write never waits.
    expect(third.waitedMs).toBe(0)
    const eventual = await g1.service.write(
      writeRequest('e', {
        level: 'eventual',
        need: { epoch: third.epoch, need: [third.idx + 1000, 0] },
      }),
    )
    expect(eventual.waitedMs).toBe(0)
  }, 15_000)

  it('with HLC (the default), the same write does not wait: its stamp orders it', async () => {
    const { g0, g1 } = await start({ wanDelayMs: WAN_MS, withoutHlc: false })
    const first = await g0.cluster.service.write(writeRequest('k'))
    const started = performance.now()
    const second = await g1.cluster.service.write(
      writeRequest('k', { dt: first.ts, need: { epoch: first.epoch, need: [first.idx, 0] } }),
    )
    expect(performance.now() - started).toBeLessThan(WAN_MS - 50)
    expect(second.waitedMs).toBeUndefined()
    expect(g1.cluster.replicas[0]![0]!.sv()[0] ?? 0).toBeLessThan(first.idx)
    expect(second.ts > first.ts).toBe(true)
  }, 15_000)

  it("runs a region on its clock plus its offset: its HLC and its skew check (the chaos suite's skew)", async () => {
    const { g0, g1 } = await start({
      wanDelayMs: 0,
      withoutHlc: false,
      clockOffsetsMs: [0, -60_000],
    })
    const now = Date.now()
    // Region 1 first: once region 0's write is shipped there, region 1's HLC goes past it.
    const behind = await g1.cluster.service.write(writeRequest('b'))
    const here = await g0.cluster.service.write(writeRequest('a'))
    expect(Math.abs(hlcMillis(here.ts) - now)).toBeLessThan(2_000)
    expect(Math.abs(hlcMillis(behind.ts) - (now - 60_000))).toBeLessThan(2_000)
    // A session that wrote in region 0 is 60 s ahead of region 1's clock, more than maxSkewMs:
    // region 1 waits (bounded) until region 0's shipped entries show a clock that late, then
    // serves it (issue 16: skewed clocks no longer refuse session writes).
    await expect(
      g1.cluster.service.write(writeRequest('b', { dt: here.ts })),
    ).resolves.toBeDefined()
    await expect(
      g0.cluster.service.write(writeRequest('a', { dt: behind.ts })),
    ).resolves.toBeDefined()
  }, 15_000)

  it('reads the switches from the config, off by default', () => {
    const base = {
      format: 1,
      cluster: 'c',
      partitions: 1,
      regions: [{ name: 'a', url: 'http://127.0.0.1:1', replicas: [['redis://127.0.0.1:2']] }],
    }
    expect(parseClusterConfig(base).benchmark).toEqual({
      wanDelayMs: 0,
      partitionWanDelaysMs: [],
      withoutHlc: false,
      clockOffsetsMs: [],
    })
    expect(
      parseClusterConfig({ ...base, benchmark: { clockOffsetsMs: [-2000] } }).benchmark
        .clockOffsetsMs,
    ).toEqual([-2000])
    expect(() => parseClusterConfig({ ...base, benchmark: { clockOffsetsMs: [0.5] } })).toThrow(
      /benchmark\.clockOffsetsMs/,
    )
    expect(() => parseClusterConfig({ ...base, benchmark: { wanDelayMs: -1 } })).toThrow(
      /benchmark\.wanDelayMs/,
    )
    expect(() => parseClusterConfig({ ...base, benchmark: { hlc: false } })).toThrow(
      /unknown field "hlc"/,
    )
  })
})
