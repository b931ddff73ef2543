/**
 * A process queues writes offline into a LevelDB store and is killed with SIGKILL before it can
 * replay them; a new process (here, this one) opens the same store and replays them, each
 * applied exactly once (counted on the gateway's own change feed).
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

beforeAll(async () => {
  cluster = await startDevCluster({ regions: 2, partitions: 4, replicas: 2, port: 0 })
  proxy = await startProxy(cluster.urls[0]!)
  dir = await mkdtemp(join(tmpdir(), 'causeway-kill-'))
})

afterAll(async () => {
  await proxy?.close()
  await cluster?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
})

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
  const script = fileURLToPath(new URL('./support/offline-writer.ts', import.meta.url))
  const child = spawn(
    process.execPath,
    ['--conditions=@causeway/source', '--import', 'tsx', script, proxy.url, dir, prefix, '50'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
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
