/**
 * The outbox and `OP_EXPIRED` (issue 22 item 2): an op whose reply was lost is resent after its
 * client was idle past the gateway's op-record retention. The gateway does not apply it again and
 * answers `OP_EXPIRED`; the outbox moves it to `failed()` (it was applied once, its result is
 * unknown) instead of applying it twice or retrying it for ever. An op queued since (a new id)
 * is applied.
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
  } finally {
    proxy.setOffline(false)
  }
  // The op is applied, its reply lost: it stays queued.
  proxy.dropOpsReplies(1)
  const lost = await db.sync()
  expect(lost.pending).toBe(1)
  const appliedAt = Date.now()
  // The phone stays away past the retention (its retries fail) and writes again (a new id);
  // another writer meanwhile.
  proxy.setOffline(true)
  expect(await db.put(p + 'b', 'phone')).toMatchObject({ pending: true })
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
  expect(failed.map((f) => f.key)).toEqual([p + 'a'])
  for (const f of failed) {
    expect(f.error).toBeInstanceOf(CausewayError)
    expect(f.error.code).toBe('OP_EXPIRED')
  }
  expect(errors).toEqual(['OP_EXPIRED'])
  // Not applied again: the other writer's value stands. The op queued since is applied.
  const reader = await connect({ url: cluster.urls[0]! })
  expect((await reader.get(p + 'a')).value).toBe('laptop')
  expect((await reader.get(p + 'b')).value).toBe('phone')
  await reader.close()
  // Not retried: another sync leaves them where they are.
  expect(await db.sync()).toMatchObject({ applied: 0, failed: 0, pending: 0 })
  expect(await db.failed()).toHaveLength(1)
  // The client's next writes are new ids: applied.
  await db.put(p + 'c', 'later')
  expect((await db.get(p + 'c')).value).toBe('later')
}, 30_000)
