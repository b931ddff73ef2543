/**
 * `causeway dev` as a user runs it: a spawned process, real HTTP. Cross-region session reads
 * under WAN delay, and a graceful restart on the same data directory.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { startCli, stopCli, urlsOf, type CliProcess } from './cli-process.js'

const started: CliProcess[] = []
const dirs: string[] = []
afterAll(async () => {
  await Promise.all(started.map((cli) => stopCli(cli, 'SIGKILL')))
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

function dev(args: string[]): CliProcess {
  const cli = startCli(['dev', '--port', '0', '--partitions', '2', '--replicas', '2', ...args])
  started.push(cli)
  return cli
}

interface WriteReply {
  ts: string
  dc: number
  idx: number
  epoch: number
}

async function put(url: string, key: string, value: unknown): Promise<WriteReply> {
  const res = await fetch(`${url}/v1/kv/${encodeURIComponent(key)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ value }),
  })
  expect(res.status).toBe(200)
  return (await res.json()) as WriteReply
}

async function get(url: string, key: string, query = '', after?: WriteReply) {
  const headers: Record<string, string> = {}
  if (after !== undefined) headers['causeway-after'] = `${after.epoch}@${after.dc}:${after.idx}`
  const res = await fetch(`${url}/v1/kv/${encodeURIComponent(key)}${query}`, { headers })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

// Each test starts CLI processes, which wait (with a deadline) for their URLs: see urlsOf.
describe('causeway dev', { timeout: 240_000 }, () => {
  it('with --wan-delay 800, a read in region 1 after a write in region 0 waits for it with causeway-after', async () => {
    const cli = dev([
      '--memory',
      '--wan-delay',
      '800',
      '--max-value-bytes',
      '2000',
      '--siblings',
      'cart',
      '--siblings',
      'doc',
    ])
    const [r0, r1] = (await urlsOf(cli, 2)) as [string, string]
    const topology = (await (await fetch(`${r1}/v1/topology`)).json()) as {
      limits: { maxValueBytes: number }
      namespaces: unknown
    }
    expect(topology.limits.maxValueBytes).toBe(2000)
    expect(topology.namespaces).toEqual({
      cart: { conflicts: 'siblings' },
      doc: { conflicts: 'siblings' },
    })
    await put(r0, 'cart:1', 'x')
    await put(r0, 'cart:1', 'y')
    expect((await get(r0, 'cart:1')).body.siblings).toHaveLength(2)
    let eventualMisses = 0
    for (const key of ['a', 'b', 'c']) {
      const w = await put(r0, key, { key })
      const eventual = await get(r1, key, '?level=eventual')
      expect(eventual.status).toBe(200)
      if (eventual.body.found === false) eventualMisses++
      const started = performance.now()
      const session = await get(r1, key, '?level=read-your-writes', w)
      expect(session.status).toBe(200)
      expect(session.body).toMatchObject({
        found: true,
        value: { key },
        ts: w.ts,
        dc: 0,
        region: 1,
      })
      expect(session.body.idx).toBeGreaterThanOrEqual(w.idx)
      // It waited for shipping: most of the one-way delay was still ahead of it.
      expect(session.body.waitedMs).toBeGreaterThan(300)
      expect(performance.now() - started).toBeGreaterThan(300)
    }
    // An eventual read right after the write almost never sees it across an 800 ms link.
    expect(eventualMisses).toBeGreaterThanOrEqual(2)
    expect(await stopCli(cli)).toBe(0)
    expect(cli.stderr()).toContain('stopped')
  })

  it('after SIGTERM and a restart on the same --data, every acknowledged write is in every region', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-restart-'))
    dirs.push(dir)
    const first = dev(['--data', dir, '--wan-delay', '300'])
    const urls = await urlsOf(first, 2)
    const cluster = ((await (await fetch(`${urls[0]}/v1/topology`)).json()) as { cluster: string })
      .cluster
    const writes = new Map<string, { value: unknown; reply: WriteReply }>()
    for (let i = 0; i < 24; i++) {
      const key = `key-${i}`
      const value = { i, text: `value ${i}` }
      writes.set(key, { value, reply: await put(urls[i % 2]!, key, value) })
    }
    const overwritten = await put(urls[0]!, 'key-0', 'second')
    writes.set('key-0', { value: 'second', reply: overwritten })
    const deleted = await fetch(`${urls[1]}/v1/kv/key-1`, { method: 'DELETE' })
    expect(deleted.status).toBe(200)
    const tombstone = (await deleted.json()) as WriteReply
    // Stop while shipping is still under way, so the restart has to resume it.
    const status = (await (await fetch(`${urls[0]}/v1/status`)).json()) as {
      shippers: { backlog: number }[]
    }
    expect(status.shippers.reduce((sum, s) => sum + s.backlog, 0)).toBeGreaterThan(0)
    expect(await stopCli(first)).toBe(0)

    const second = dev(['--data', dir])
    const again = await urlsOf(second, 2)
    const topology = (await (await fetch(`${again[0]}/v1/topology`)).json()) as { cluster: string }
    expect(topology.cluster).toBe(cluster)
    for (const url of again) {
      for (const [key, { value, reply }] of writes) {
        if (key === 'key-1') continue
        const read = await get(url, key, '?timeoutMs=5000', reply)
        expect({ key, status: read.status, value: read.body.value }).toEqual({
          key,
          status: 200,
          value,
        })
        expect(read.body.ts).toBe(reply.ts)
      }
      const gone = await get(url, 'key-1', '?timeoutMs=5000', tombstone)
      expect(gone.body).toMatchObject({ found: false, ts: tombstone.ts, dc: 1 })
    }
    // Shipping drained: no backlog left anywhere.
    await vi.waitFor(
      async () => {
        const all = await Promise.all(
          again.map(
            async (url) =>
              (
                (await (await fetch(`${url}/v1/status`)).json()) as {
                  shippers: { backlog: number }[]
                }
              ).shippers,
          ),
        )
        expect(all.flat().reduce((sum, s) => sum + s.backlog, 0)).toBe(0)
      },
      { timeout: 5000, interval: 100 },
    )
    expect(await stopCli(second, 'SIGINT')).toBe(0)
  })
})
