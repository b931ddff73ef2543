/**
 * Issue 24.3, a cluster restored from a copy of its data: an embedded cluster on disk
 * (`dataDir`, classic-level) is copied while stopped, written to more (the device's session
 * holds those writes), then started from the copy on the same port. The copy keeps the cluster id
 * and its epochs, so the id check alone passes; the session's positions past the copy are what
 * tell. Without the probe the queued writes were replayed into the restored cluster without a
 * word and the session's reads then failed with `VECTOR_UNREACHABLE`; now the outbox pauses, the
 * app gets `clusterChanged` (from and to the same id) and `resetCluster` leads on.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { partitionOf } from '@causeway/core'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { MemoryLevel } from 'memory-level'
import { afterEach, describe, expect, it } from 'vitest'
import { connect, type Causeway, type PersistStore } from '../src/node.js'

const running: DevCluster[] = []
const open: Causeway<boolean>[] = []
const dirs: string[] = []

afterEach(async () => {
  for (const db of open.splice(0)) await db.close().catch(() => {})
  for (const c of running.splice(0)) await c.close().catch(() => {})
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true })
})

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function start(port: number, dataDir: string): Promise<DevCluster> {
  const cluster = await startDevCluster({
    regions: 1,
    partitions: 2,
    replicas: 1,
    port,
    host: '127.0.0.1',
    dataDir,
  })
  running.push(cluster)
  return cluster
}

async function stop(cluster: DevCluster): Promise<void> {
  await cluster.close()
  running.splice(running.indexOf(cluster), 1)
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
 * A device whose session holds writes `a*` (in the copy) and `b*` (made after it, in both
 * partitions), with `queued` writes queued while the cluster was down; the cluster restarted from
 * the copy.
 */
async function restoredWhileQueued(queued: number) {
  const port = await freePort()
  const root = await mkdtemp(join(tmpdir(), 'causeway-restore-'))
  dirs.push(root)
  const data = join(root, 'data')
  const copy = join(root, 'copy')
  let cluster = await start(port, data)
  const url = cluster.urls[0]!
  const persist = new MemoryLevel() as unknown as PersistStore
  const db = await client(url, persist)
  const changes: { from: string; to: string; pending: number; code: string }[] = []
  db.on('clusterChanged', (e) =>
    changes.push({ from: e.from, to: e.to, pending: e.pending, code: e.error.code }),
  )
  for (let i = 0; i < 5; i++) await db.put(`a${i}`, i)
  await stop(cluster)
  await cp(data, copy, { recursive: true })
  cluster = await start(port, data)
  // Writes after the copy, in both partitions, read back: the session is ahead of the copy.
  const b = Array.from({ length: 6 }, (_, i) => `b${i}`)
  expect(new Set(b.map((k) => partitionOf(k, 2))).size).toBe(2)
  for (const [i, k] of b.entries()) await db.put(k, i)
  await db.sync()
  for (const [i, k] of b.entries()) expect((await db.get(k)).value).toBe(i)
  await stop(cluster)
  for (let i = 0; i < queued; i++) expect(await db.put(`q${i}`, i)).toMatchObject({ pending: true })
  await start(port, copy)
  const raw = await connect({ url, persist: false })
  open.push(raw)
  const id = db.session.toJSON().cluster
  expect(raw.session.toJSON().cluster).toBe(id)
  return { db, url, persist, raw, changes, id }
}

describe('a cluster restored from a copy of its data (issue 24.3)', () => {
  it('the same cluster id, the session ahead of the copy: the outbox pauses before sending, clusterChanged fires; resetCluster keeps the queue', async () => {
    const { db, url, persist, raw, changes, id } = await restoredWhileQueued(3)
    const result = await db.sync()
    expect(result.error?.code).toBe('CLUSTER_CHANGED')
    expect(result.error?.details).toMatchObject({ from: id, to: id, reason: 'positions' })
    expect(changes).toEqual([{ from: id, to: id, pending: 3, code: 'CLUSTER_CHANGED' }])
    // Nothing was sent into the restored cluster.
    for (let i = 0; i < 3; i++) expect((await raw.get(`q${i}`)).found).toBe(false)
    expect(await db.put('q3', 3)).toMatchObject({ pending: true })
    expect((await raw.get('q3')).found).toBe(false)
    await db.resetCluster({ queued: 'keep' })
    const again = await client(url, persist)
    expect(await again.sync()).toMatchObject({ applied: 4, pending: 0 })
    for (let i = 0; i < 4; i++) expect((await again.get(`q${i}`)).value).toBe(i)
    // What the copy holds is read; what it lost is gone, and the app was told.
    expect((await again.get('a2')).value).toBe(2)
    expect((await again.get('b0')).found).toBe(false)
  }, 60_000)

  it('a device that never saw the cluster down: its read meets VECTOR_UNREACHABLE and leads to the same path', async () => {
    const { db, url, persist, raw, changes, id } = await restoredWhileQueued(0)
    const error = await db.get('b0').catch((e: unknown) => e)
    expect((error as { code?: string }).code).toBe('VECTOR_UNREACHABLE')
    await until(() => changes.length > 0)
    expect(changes).toEqual([{ from: id, to: id, pending: 0, code: 'CLUSTER_CHANGED' }])
    // Paused: a write now queues and is not sent.
    expect(await db.put('q0', 0)).toMatchObject({ pending: true })
    expect((await db.sync()).error?.code).toBe('CLUSTER_CHANGED')
    expect((await raw.get('q0')).found).toBe(false)
    await db.resetCluster({ queued: 'drop' })
    const again = await client(url, persist)
    expect(await again.sync()).toMatchObject({ applied: 0, pending: 0 })
    await again.put('after', 1)
    expect((await again.get('after')).value).toBe(1)
    expect((await again.get('a1')).value).toBe(1)
    expect((await raw.get('q0')).found).toBe(false)
  }, 60_000)
})
