/**
 * Processes killed with SIGKILL over a LevelDB store: one that queued writes offline and never
 * replayed them, one killed the moment an online write returned. A new process (here, this one)
 * opens the same store: every write queued is replayed, every write acknowledged is in its
 * session (restored, or replayed from its op id), each applied exactly once (counted on the
 * gateway's own change feed).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { openSse } from '../../../gateway/test/support/sse-client.js'
import { connect } from '../src/node.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'

let cluster: DevCluster
let proxy: NetProxy
let dir: string
let onlineDir: string

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 2,
    port: 0,
    wanDelayMs: 100,
  })
  proxy = await startProxy(cluster.urls[0]!)
  dir = await mkdtemp(join(tmpdir(), 'causeway-kill-'))
  onlineDir = await mkdtemp(join(tmpdir(), 'causeway-kill-online-'))
})

afterAll(async () => {
  await proxy?.close()
  await cluster?.close()
  for (const d of [dir, onlineDir]) if (d) await rm(d, { recursive: true, force: true })
})

/** Node running a TypeScript script of ./support with the workspace's sources. */
function spawnScript(name: string, args: string[]) {
  const script = fileURLToPath(new URL(`./support/${name}`, import.meta.url))
  return spawn(
    process.execPath,
    ['--conditions=@causeway/source', '--import', 'tsx', script, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
}

it('writes queued by a process killed with SIGKILL are replayed by the next one, once each', async () => {
  const prefix = `kill${Date.now().toString(36)}:`
  // The store learns the topology online first, as an app's first run would.
  const first = await connect({ url: proxy.url, persist: dir })
  await first.close()
  const opened = await openSse(`${cluster.urls[0]}/v1/watch?prefix=${prefix}&level=eventual`)
  if (!opened.ok) throw new Error(JSON.stringify(opened.body))
  const feed = opened.stream
  await feed.nextOf('heartbeat', 5000)

  proxy.setOffline(true)
  const child = spawnScript('offline-writer.ts', [proxy.url, dir, prefix, '50'])
  const exited = new Promise<unknown>((resolve) => child.on('exit', (c, s) => resolve(c ?? s)))
  const ids = await new Promise<string[]>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`the child said: ${out}`)), 20_000)
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const line = /queued (\S+)\n/.exec(out)
      if (line) {
        clearTimeout(timer)
        resolve(line[1]!.split(','))
      }
    })
    child.on('exit', () => reject(new Error(`the child exited early: ${out}`)))
  })
  child.kill('SIGKILL')
  expect(await exited).toBe('SIGKILL')
  expect(ids).toHaveLength(50)
  proxy.setOffline(false)

  const db = await connect({ url: proxy.url, persist: dir })
  const pending = await db.pending()
  expect(pending.map((o) => o.opId)).toEqual(ids)
  expect(await db.sync()).toMatchObject({ applied: 50, failed: 0, pending: 0 })
  const counts = new Map<string, number>()
  for (let i = 0; i < 50; i++) {
    const key = (JSON.parse((await feed.nextOf('change', 10_000)).data) as { key: string }).key
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  await expect(feed.nextOf('change', 300)).rejects.toThrow()
  expect(counts.size).toBe(50)
  expect((await db.get(`${prefix}49`)).value).toBe(49)
  // A second replay of the same ops (as if the first reply had been lost) changes nothing.
  expect(await db.sync()).toMatchObject({ applied: 0, pending: 0 })
  feed.close()
  await db.close()
}, 60_000)

it('a process killed the moment an online write returned: every acknowledged write is in the next session, applied once', async () => {
  const prefix = `acked${Date.now().toString(36)}:`
  const count = 30
  const opened = await openSse(`${cluster.urls[0]}/v1/watch?prefix=${prefix}&level=eventual`)
  if (!opened.ok) throw new Error(JSON.stringify(opened.body))
  const feed = opened.stream
  await feed.nextOf('heartbeat', 5000)

  const child = spawnScript('online-writer.ts', [proxy.url, onlineDir, prefix, String(count)])
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const exited = await new Promise<unknown>((resolve) =>
    child.on('exit', (c, s) => resolve(c ?? s)),
  )
  expect(exited).toBe('SIGKILL')
  const acked = [...out.matchAll(/^acked (.*)$/gm)].map(
    (m) =>
      JSON.parse(m[1]!) as {
        key: string
        opId: string
        partition: number
        dc: number
        idx: number
      },
  )
  expect(acked).toHaveLength(count)

  const db = await connect({ url: proxy.url, persist: onlineDir })
  try {
    const covered = (a: (typeof acked)[number]) =>
      (db.session.row(a.partition)?.hwm[a.dc] ?? 0) >= a.idx
    // The store holds each acknowledged write: in the session it saved, or still queued (the
    // last one: killed before its removal was written), to be answered from its op id.
    const queued = new Set((await db.pending()).map((o) => o.opId))
    for (const a of acked) expect(covered(a) || queued.has(a.opId), a.opId).toBe(true)
    expect(queued.has(acked.at(-1)!.opId)).toBe(true)
    expect(await db.sync()).toMatchObject({ failed: 0, pending: 0 })
    for (const a of acked) expect(covered(a), a.opId).toBe(true)
    // ... so a read-your-writes read in the other region waits for it.
    const last = acked.at(-1)!
    expect(
      await db.get(last.key, { region: 1, read: 'read-your-writes', fallback: 'none' }),
    ).toMatchObject({ region: 1, value: count - 1 })
    const counts = new Map<string, number>()
    for (let i = 0; i < count; i++) {
      const key = (JSON.parse((await feed.nextOf('change', 10_000)).data) as { key: string }).key
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
    await expect(feed.nextOf('change', 300)).rejects.toThrow()
    expect([...counts.values()].every((n) => n === 1) && counts.size === count).toBe(true)
  } finally {
    feed.close()
    await db.close()
  }
}, 60_000)
