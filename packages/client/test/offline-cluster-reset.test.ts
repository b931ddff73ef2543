/**
 * Issue 24.3: a cluster that was reset (`--memory` restarted on the same ports: a new cluster id,
 * nothing of the old data) while a device holds a session and queued writes. The outbox must
 * pause before sending anything, the app get `clusterChanged` (`CLUSTER_CHANGED`), and
 * `resetCluster` lead on: a fresh session, the queued writes kept (or dropped).
 */
import { createServer } from 'node:net'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { connect, type Causeway, type PersistStore } from '../src/node.js'

const running: DevCluster[] = []
const open: Causeway<boolean>[] = []

afterEach(async () => {
  for (const db of open.splice(0)) await db.close().catch(() => {})
  for (const c of running.splice(0)) await c.close().catch(() => {})
})

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function start(port: number): Promise<DevCluster> {
  const cluster = await startDevCluster({
    regions: 1,
    partitions: 2,
    replicas: 1,
    port,
    host: '127.0.0.1',
  })
  running.push(cluster)
  return cluster
}

async function client(url: string, persist: PersistStore): Promise<Causeway<true>> {
  const db = await connect({ url, persist, defaults: { timeoutMs: 2000 } })
  open.push(db)
  return db
}

async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * A device with a session in cluster 1 and `queued` writes queued while it was down (none: the
 * device never noticed it was down); cluster 2 up.
 */
async function resetWhileQueued(queued = 5) {
  const port = await freePort()
  const cluster = await start(port)
  const url = cluster.urls[0]!
  const firstId = (await (await fetch(url + '/v1/topology')).json()) as { cluster: string }
  const persist = new MemoryLevel() as unknown as PersistStore
  const db = await client(url, persist)
  // From the start: a retry with backoff may find the change before the test asks.
  const changes: { from: string; to: string; pending: number; code: string }[] = []
  db.on('clusterChanged', (e) =>
    changes.push({ from: e.from, to: e.to, pending: e.pending, code: e.error.code }),
  )
  for (let i = 0; i < 20; i++) await db.put(`k${i}`, i)
  await db.get('k0')
  await cluster.close()
  running.splice(running.indexOf(cluster), 1)
  for (let i = 0; i < queued; i++) expect(await db.put(`q${i}`, i)).toMatchObject({ pending: true })
  await start(port)
  const second = (await (await fetch(url + '/v1/topology')).json()) as { cluster: string }
  expect(second.cluster).not.toBe(firstId.cluster)
  const raw = await connect({ url, persist: false })
  open.push(raw)
  return { db, url, persist, raw, changes, from: firstId.cluster, to: second.cluster }
}

describe('a reset cluster (issue 24.3)', () => {
  it('the outbox pauses before sending anything, clusterChanged fires; resetCluster keeps the queue and a new connect replays it with a fresh session', async () => {
    const { db, url, persist, raw, changes, from, to } = await resetWhileQueued()
    const result = await db.sync()
    expect(result.error?.code).toBe('CLUSTER_CHANGED')
    expect(changes).toEqual([{ from, to, pending: 5, code: 'CLUSTER_CHANGED' }])
    // Nothing was sent: the new cluster has none of the queued writes.
    for (let i = 0; i < 5; i++) expect((await raw.get(`q${i}`)).found).toBe(false)
    expect(await db.pending()).toHaveLength(5)
    // A write made now queues behind, unsent.
    expect(await db.put('q5', 5)).toMatchObject({ pending: true })
    expect((await raw.get('q5')).found).toBe(false)
    await db.resetCluster({ queued: 'keep' })
    expect(db.closed).toBe(true)
    const again = await client(url, persist)
    expect(await again.sync()).toMatchObject({ applied: 6, pending: 0 })
    for (let i = 0; i < 6; i++) expect((await again.get(`q${i}`)).value).toBe(i)
    expect((await again.get('k3')).found).toBe(false)
    expect(again.session.toJSON().cluster).toBe(to)
  }, 60_000)

  it('VECTOR_UNREACHABLE on a read after a reconnect leads to the same path; resetCluster can drop the queue', async () => {
    const { db, url, persist, raw, changes, to } = await resetWhileQueued(0)
    // The device never saw the gateway down: its read reaches the new cluster, which never had
    // the session's positions.
    const error = await db.get('k0').catch((e: unknown) => e)
    expect((error as { code?: string }).code).toBe('VECTOR_UNREACHABLE')
    await until(() => changes.length > 0)
    expect(changes.map((c) => c.to)).toEqual([to])
    // Paused: a write now queues and is not sent.
    for (let i = 0; i < 5; i++) expect(await db.put(`q${i}`, i)).toMatchObject({ pending: true })
    expect((await db.sync()).error?.code).toBe('CLUSTER_CHANGED')
    for (let i = 0; i < 5; i++) expect((await raw.get(`q${i}`)).found).toBe(false)
    await db.resetCluster({ queued: 'drop' })
    const again = await client(url, persist)
    expect(await again.pending()).toEqual([])
    expect(await again.sync()).toMatchObject({ applied: 0, pending: 0 })
    await again.put('after', 1)
    expect((await again.get('after')).value).toBe(1)
    for (let i = 0; i < 5; i++) expect((await raw.get(`q${i}`)).found).toBe(false)
  }, 60_000)
})
