/**
 * The outbox and `OP_EXPIRED` (issue 22 item 2): a batch whose reply was lost is resent after its
 * client was idle past the gateway's op-record retention. The gateway applies none of it again
 * and answers `OP_EXPIRED`; the outbox moves those ops to `failed()` (they may have been applied,
 * their result is unknown) instead of applying them twice or retrying them for ever.
 */
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { MemoryLevel } from 'memory-level'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { CausewayError, connect, type Causeway, type PersistStore } from '../src/node.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'

const RETENTION_MS = 1000

let cluster: DevCluster
let proxy: NetProxy
const open: Causeway<true>[] = []

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 1,
    partitions: 2,
    replicas: 1,
    port: 0,
    sync: false,
    opRetentionMs: RETENTION_MS,
  })
  proxy = await startProxy(cluster.urls[0]!)
}, 30_000)

afterAll(async () => {
  for (const db of open) await db.close()
  await proxy?.close()
  await cluster?.close()
})

it('ops resent after the retention are OP_EXPIRED: moved to failed(), applied once, not retried', async () => {
  const db = await connect({
    url: proxy.url,
    persist: new MemoryLevel() as unknown as PersistStore,
    defaults: { timeoutMs: 3000 },
  })
  open.push(db)
  const p = `exp${Date.now().toString(36)}:`
  proxy.setOffline(true)
  try {
    await db.put(p + 'a', 'phone')
    await db.put(p + 'b', 'phone')
  } finally {
    proxy.setOffline(false)
  }
  // The batch is applied, its reply lost: both stay queued.
  proxy.dropOpsReplies(1)
  const lost = await db.sync()
  expect(lost.pending).toBe(2)
  const appliedAt = Date.now()
  // The phone stays away past the retention (its retries fail); another writer meanwhile.
  proxy.setOffline(true)
  const other = await connect({ url: cluster.urls[0]! })
  await other.put(p + 'a', 'laptop')
  await other.close()
  while (Date.now() < appliedAt + RETENTION_MS + 300) await new Promise((r) => setTimeout(r, 100))

  const errors: string[] = []
  db.on('error', ({ error }) => errors.push(error.code))
  proxy.setOffline(false)
  await db.sync()
  const end = Date.now() + 10_000
  while ((await db.pending()).length > 0 && Date.now() < end)
    await new Promise((r) => setTimeout(r, 50))
  expect(await db.pending()).toEqual([])
  const failed = await db.failed()
  expect(failed.map((f) => f.key).sort()).toEqual([p + 'a', p + 'b'])
  for (const f of failed) {
    expect(f.error).toBeInstanceOf(CausewayError)
    expect(f.error.code).toBe('OP_EXPIRED')
  }
  expect(errors).toEqual(['OP_EXPIRED', 'OP_EXPIRED'])
  // Not applied again: the other writer's value stands.
  const reader = await connect({ url: cluster.urls[0]! })
  expect((await reader.get(p + 'a')).value).toBe('laptop')
  await reader.close()
  // Not retried: another sync leaves them where they are.
  expect(await db.sync()).toMatchObject({ applied: 0, failed: 0, pending: 0 })
  expect(await db.failed()).toHaveLength(2)
  // The client's next writes are new ids: applied.
  await db.put(p + 'c', 'later')
  expect((await db.get(p + 'c')).value).toBe('later')
}, 30_000)
