/**
 * Issue 22, item 3, end to end: a sibling dot that a Sentinel failover lost is never minted again
 * for another value. On `causeway dev --backend redis --sentinel` (real redis-servers, Sentinels
 * and gateway processes), with shipping between the regions cut by a proxy: region 0's leader
 * alone acknowledges `cart:k = "lost"` (its followers are frozen and its links to them dropped);
 * a client reads it there and keeps the context; the leader is killed with kill -9 and Sentinel
 * promotes a follower (epoch 2); another client writes `"new"` in region 0; the first client
 * writes `"from-b"` in region 1 with the context it read. Once shipping is healed and each
 * region holds the other's write, both values must be in both regions. Before dots were minted
 * under an actor per epoch, the new leader minted the lost dot again for `"new"`, the context
 * covered it, and the merge dropped `"new"` in both regions: a silent lost update.
 *
 * The storage-level version (claims driven by hand, no Sentinel, no gateway) is
 * `test/storage/redis/redis-sibling-epochs.test.ts`.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startRedisDevCluster, type RedisDevCluster } from '../../src/dev/redis-dev-cluster.js'
import { startCuttableProxy, type CuttableProxy } from '../chaos/cuttable-proxy.js'
import { afterWrite, call, getKey, kvUrl, putKey, type Reply } from '../support/http-calls.js'

const TIMEOUT = 300_000
/** A deadline for conditions a loaded machine may take long to reach, never a verdict. */
const PATIENCE = 120_000

let dev: RedisDevCluster
const proxies: CuttableProxy[] = []

beforeAll(async () => {
  dev = await startRedisDevCluster({
    regions: 2,
    partitions: 1,
    replicas: 3,
    port: 0,
    logLevel: 'error',
    shipping: { leaseMs: 1500 },
    namespaces: { cart: { conflicts: 'siblings' } },
    sentinel: { downAfterMs: 1000 },
    // Every shipping link through a proxy the test can cut, as the chaos suite does.
    shippingVia: async ({ url }) => {
      const proxy = await startCuttableProxy(url)
      proxies.push(proxy)
      return proxy.url
    },
  })
}, TIMEOUT)

afterAll(async () => {
  for (const r of dev?.redis ?? []) if (r.pid !== undefined) tryKill(r.pid, 'SIGCONT')
  await dev?.close()
  await Promise.all(proxies.map((p) => p.close()))
}, TIMEOUT)

function tryKill(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal)
    return true
  } catch {
    return false
  }
}

async function withRedis<T>(url: string, use: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  try {
    await r.connect()
    return await use(r)
  } finally {
    r.disconnect()
  }
}

function server(d: number, i: number) {
  const r = dev.redis.find((s) => s.region === d && s.partition === 0 && s.replica === i)
  if (!r?.pid) throw new Error(`no server ${i} in region ${d}`)
  return { url: r.url, pid: r.pid }
}

/** The values of a siblings read, sorted (tombstones left out). */
function values(reply: Reply): unknown[] {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  const siblings = reply.body['siblings'] as { value?: unknown }[]
  return siblings
    .filter((s) => 'value' in s)
    .map((s) => s.value)
    .sort()
}

/** A PUT that must be acknowledged. */
async function put(url: string, key: string, value: unknown, query = '', headers = {}) {
  const reply = await call(kvUrl(url, key, query), {
    method: 'PUT',
    json: { value },
    headers,
  })
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  return reply
}

/** Reads `key` in the gateway at `url` once the write `after` is applied there. */
async function readAfter(url: string, key: string, after: Reply): Promise<Reply> {
  let reply: Reply | undefined
  await vi.waitUntil(
    async () => {
      reply = await getKey(url, key, '?timeoutMs=10000', { 'causeway-after': afterWrite(after) })
      return reply.status === 200
    },
    { timeout: PATIENCE, interval: 200 },
  )
  return reply!
}

describe('a sibling dot lost in a Sentinel failover, shipping cut', { timeout: TIMEOUT }, () => {
  it('is never minted again: the new leader’s write and a write with a context that saw the lost one both survive, in both regions', async () => {
    const [a, b] = dev.urls as [string, string]
    const key = 'cart:k'

    // A durable first version, everywhere: every replica of region 0 and region 1 hold it.
    const before = await put(a, key, 'before', '?durability=majority')
    const leader = server(0, 0)
    const followers = [server(0, 1), server(0, 2)]
    expect(
      await withRedis(leader.url, (r) => r.call('WAIT', '2', String(PATIENCE))),
    ).toBeGreaterThanOrEqual(2)
    expect(values(await readAfter(b, key, before))).toEqual(['before'])

    // Shipping between the regions is cut; region 0's followers freeze, and its leader drops its
    // links to them (data it had written to those sockets was already read: a frozen follower
    // would otherwise find the next write in its socket buffer when it wakes).
    for (const proxy of proxies) proxy.cut()
    for (const f of followers) process.kill(f.pid, 'SIGSTOP')
    await withRedis(leader.url, (r) => r.call('CLIENT', 'KILL', 'TYPE', 'replica'))

    // Only region 0's leader acknowledges "lost" (durability leader); a client reads it there.
    const read0 = await getKey(a, key, '?replica=leader')
    const lost = await put(a, key, 'lost', '', {
      'causeway-context': read0.body['context'] as string,
    })
    expect(lost.body['epoch']).toBe(1)
    const seen = await getKey(a, key, '?replica=leader')
    expect(values(seen)).toEqual(['lost'])
    const context = seen.body['context'] as string

    // The leader dies with it; the followers wake, and Sentinel promotes one: epoch 2.
    process.kill(leader.pid, 'SIGKILL')
    await vi.waitUntil(() => !tryKill(leader.pid, 0), { timeout: 10_000, interval: 20 })
    for (const f of followers) process.kill(f.pid, 'SIGCONT')

    // Another client writes in region 0 once it has a leader again (a probe key first, so the
    // value under test is written exactly once, blind).
    await vi.waitUntil(
      async () => {
        const probe = await putKey(a, 'cart:probe', 'x', {}).catch(() => undefined)
        if (probe && probe.status !== 200)
          expect(probe.status, JSON.stringify(probe.body)).toBeGreaterThanOrEqual(503)
        return probe?.status === 200
      },
      { timeout: PATIENCE, interval: 200 },
    )
    const fresh = await put(a, key, 'new')
    expect(fresh.body['epoch']).toBe(2)
    expect(values(await getKey(a, key, '?replica=leader'))).toEqual(['before', 'new'])

    // The first client writes in region 1 with the context it read in region 0 (no session: it
    // carries only the context, as a client that moved does).
    const fromB = await put(b, key, 'from-b', '?level=eventual', { 'causeway-context': context })

    // Shipping heals; each region applies the other's write.
    for (const proxy of proxies) proxy.heal()
    const inA = await readAfter(a, key, fromB)
    const inB = await readAfter(b, key, fresh)

    // Nothing acknowledged and unseen is lost: the new leader's write was never in the context.
    // "before" and "lost" were seen by the context, so the write from region 1 superseded them.
    expect({ inA: values(inA), inB: values(inB) }).toEqual({
      inA: ['from-b', 'new'],
      inB: ['from-b', 'new'],
    })
  })
})
