/**
 * Issue 24.6: a batch the gateway refuses as too large (413) is sent again in halves, and the
 * next replay starts with whole batches again rather than halved ones for the client's lifetime.
 * The gateway is real, with a small value limit so that a batch of long keys is over its body
 * limit.
 */
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { MemoryLevel } from 'memory-level'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { connect, type PersistStore } from '../src/node.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'
import { recordingTransport } from './support/recording-transport.js'

let cluster: DevCluster
let proxy: NetProxy

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 1,
    partitions: 2,
    replicas: 1,
    port: 0,
    limits: { maxValueBytes: 1024 },
  })
  proxy = await startProxy(cluster.urls[0]!)
}, 30_000)

afterAll(async () => {
  await proxy?.close()
  await cluster?.close()
})

it('after a 413 the batch is halved for that replay only: the next replay sends whole batches again', async () => {
  const transport = recordingTransport((req) => req.url.includes('/v1/ops'))
  const db = await connect({
    url: proxy.url,
    persist: new MemoryLevel() as unknown as PersistStore,
    transport,
    defaults: { timeoutMs: 5000 },
  })
  const opsIn = (i: number) =>
    (JSON.parse(transport.sent[i]!.body!) as { ops: unknown[] }).ops.length
  const queue = async (prefix: string, n: number) => {
    proxy.setOffline(true)
    try {
      for (let i = 0; i < n; i++) await db.put(`${prefix}${i}`, i)
    } finally {
      proxy.setOffline(false)
    }
  }
  try {
    // Long keys: the SDK's budget counts values, so its first batch is over the body limit.
    // (The first write of each spell is tried alone at once, and fails: not counted.)
    await queue('long:' + 'k'.repeat(400) + ':', 60)
    const before = transport.sent.length
    expect(await db.sync()).toMatchObject({ applied: 60, pending: 0 })
    // Over the limit at first: cut in halves (29 ops fit, 59 do not).
    const sizes = transport.sent.slice(before).map((_, i) => opsIn(before + i))
    expect(sizes).toContain(29)
    expect(Math.max(...sizes)).toBeGreaterThan(29)
    // Short keys: the whole queue fits one batch again.
    await queue('short:', 60)
    const second = transport.sent.length
    expect(await db.sync()).toMatchObject({ applied: 60, pending: 0 })
    expect(transport.sent.length).toBe(second + 1)
    expect(opsIn(second)).toBe(60)
  } finally {
    await db.close()
  }
}, 60_000)
