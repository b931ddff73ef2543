/**
 * A hung gateway of the region shipping goes to: `causeway dev --backend redis` with two gateway
 * processes per region, and the first gateway of region 1 (the one every link tries first)
 * frozen with SIGSTOP. Shipping from region 0 must go on through region 1's other gateway within
 * about a second (the links check their gateways' health), not after a request timeout; once the
 * frozen gateway runs again (SIGCONT), the requests it held change nothing: every region holds
 * the same log.
 *
 * The stall is measured per partition as the time from the write's acknowledgement in region 0
 * to the moment region 1 serves it (a read with the write in its `causeway-after`), for a write
 * made just after the SIGSTOP. The measured times are printed.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { partitionOf } from '@causeway/core'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { ReplicaKeys } from '../../src/storage/redis/index.js'
import { afterWrite, getKey, putKey } from '../support/http-calls.js'
import { keysOf } from './redis-grid.js'

const PARTITIONS = 4

let dev: RedisDevCluster
const stopped = new Set<number>()

beforeAll(async () => {
  dev = await startRedisDevCluster({
    regions: 2,
    partitions: PARTITIONS,
    replicas: 1,
    gateways: 2,
    port: 0,
  })
}, 60_000)

afterAll(async () => {
  for (const pid of stopped) process.kill(pid, 'SIGCONT')
  await dev?.close()
}, 60_000)

/** The gateway `index` of region `d`. */
function gateway(d: number, index: number) {
  const found = dev.gateways.find((g) => g.region === d && g.index === index)
  if (!found?.pid) throw new Error(`no gateway ${d}.${index}`)
  return found as typeof found & { pid: number }
}

/**
 * Writes one key of every partition through `writer` (region 0's URL unless given) and, for each,
 * how long after its acknowledgement `reader` (of the other region) served it, in ms.
 */
async function shippingDelays(
  reader: string,
  tag: string,
  writer = dev.urls[0]!,
): Promise<number[]> {
  return Promise.all(
    Array.from({ length: PARTITIONS }, async (_, p) => {
      const [key] = keysOf(p, PARTITIONS, 1, `${tag}:`)
      expect(partitionOf(key!, PARTITIONS)).toBe(p)
      const put = await putKey(writer, key!, tag)
      expect(put.status).toBe(200)
      const acked = performance.now()
      const read = await getKey(reader, key!, '?timeoutMs=30000', {
        'causeway-after': afterWrite(put),
      })
      expect(read.status, JSON.stringify(read.body)).toBe(200)
      expect(read.body['value']).toBe(tag)
      return performance.now() - acked
    }),
  )
}

it('a frozen gateway of the destination region stalls shipping into it for about a second', async () => {
  // The links to region 1 keep to one of its gateways while it is healthy; which one depends on
  // how the start went. Freezing each in turn freezes the one they use, once.
  const warm = await shippingDelays(gateway(1, 0).url, 'warm')
  const stalls: number[] = []
  for (const index of [0, 1]) {
    const frozen = gateway(1, index)
    const reader = gateway(1, 1 - index).url
    process.kill(frozen.pid, 'SIGSTOP')
    stopped.add(frozen.pid)
    try {
      const first = await shippingDelays(reader, `frozen-${index}`)
      // And it keeps working while the gateway stays frozen.
      const later = await shippingDelays(reader, `still-frozen-${index}`)
      // Shipping out of region 1: the partitions whose lease the frozen gateway holds wait for
      // another gateway of the region to take the lease over (leaseMs, not the health checks).
      const out = await shippingDelays(gateway(0, 0).url, `out-${index}`, reader)
      console.log(
        `shipping into region 1 with gateway 1.${index} frozen: ${first.map(Math.round).join(', ')} ms ` +
          `(per partition, first write after SIGSTOP); then ${later.map(Math.round).join(', ')} ms ` +
          `(before: ${warm.map(Math.round).join(', ')} ms); out of region 1: ${out.map(Math.round).join(', ')} ms`,
      )
      expect(Math.max(...out)).toBeLessThan(15_000)
      stalls.push(...first)
      expect(Math.max(...later)).toBeLessThan(1000)
    } finally {
      process.kill(frozen.pid, 'SIGCONT')
      stopped.delete(frozen.pid)
    }
    // The requests the frozen gateway held are answered late, to nobody, and change nothing:
    // shipping goes on and the gateway serves what arrived meanwhile.
    await shippingDelays(frozen.url, `resumed-${index}`)
    const again = await getKey(frozen.url, keysOf(0, PARTITIONS, 1, `frozen-${index}:`)[0]!)
    expect(again.body['value']).toBe(`frozen-${index}`)
  }
  // About a second: the health check's interval and timeout, and a retry.
  expect(Math.max(...stalls)).toBeLessThan(2000)
  await expectSameLogs()
}, 90_000)

/** Both regions' leaders hold the same log of region 0 in every partition: 1..n, no gap or repeat. */
async function expectSameLogs(): Promise<void> {
  const { config } = dev
  const clients = config.regions.map((r) =>
    r.replicas.map((list) => new Redis(list[0]!, { lazyConnect: true, maxRetriesPerRequest: 1 })),
  )
  try {
    await Promise.all(clients.flat().map((c) => c.connect()))
    for (let p = 0; p < PARTITIONS; p++) {
      const logs = await Promise.all(
        clients.map(async (region, d) => {
          const keys = new ReplicaKeys(config.redis.namespace, d, p)
          const rows = await region[p]!.xrange(keys.log(0), '-', '+')
          const sv = Number((await region[p]!.hget(keys.sv, '0')) ?? 0)
          return { rows, sv }
        }),
      )
      const [origin, copy] = logs as [(typeof logs)[0], (typeof logs)[0]]
      origin.rows.forEach(([id], i) => expect(id).toBe(`${i + 1}-0`))
      expect(copy.rows).toEqual(origin.rows)
      expect([origin.sv, copy.sv]).toEqual([origin.rows.length, origin.rows.length])
    }
  } finally {
    clients.flat().forEach((c) => c.disconnect())
  }
}
