/**
 * Issue 24.3 in Chromium: a page with `persist` (IndexedDB) holds a session and writes queued
 * while the gateway was down; the cluster comes back as a new `--memory` cluster on the same
 * port (a new cluster id, none of the old data). Back online, nothing queued reaches the new
 * cluster before the app decides (the page counts the writes it sends), the page gets
 * `clusterChanged`, calls `db.resetCluster({ queued: 'keep' })`, connects again, and the queued
 * writes apply once under a fresh session, whose reads then work. The same with a cluster on disk
 * restored from a copy of its data (the same id and epochs; the page's session ahead of the copy):
 * found by the session's positions. The page is served from another origin than the gateway.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { build } from 'esbuild'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeInChromium, launchChromium } from '../../../gateway/test/support/chromium.js'
import { connect, type Causeway } from '../src/node.js'

const ENTRY = `
import { connect, fetchTransport } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))}
const inner = fetchTransport()
// Every write the page sends, by key: a batch of the outbox or a single write.
window.sent = []
const transport = {
  request(req) {
    if (req.method === 'POST' && req.url.includes('/v1/ops'))
      for (const op of JSON.parse(req.body).ops) window.sent.push(op.key)
    else if (req.method === 'PUT' && req.url.includes('/v1/kv/'))
      window.sent.push(decodeURIComponent(new URL(req.url).pathname.split('/').pop()))
    return inner.request(req)
  },
}
let db
window.changes = []
window.open_ = async (url) => {
  db = await connect({ url, persist: 'reset', transport, defaults: { timeoutMs: 2000 } })
  db.on('clusterChanged', (e) => window.changes.push({ from: e.from, to: e.to, pending: e.pending, code: e.error.code }))
}
window.put = async (key, value) => {
  const r = await db.put(key, value)
  return { pending: r.pending }
}
window.get = async (key) => {
  try {
    const r = await db.get(key)
    return { found: r.found, value: r.value, source: r.source }
  } catch (e) {
    return { code: e.code }
  }
}
window.sync = async () => {
  const r = await db.sync()
  return { applied: r.applied, pending: r.pending, error: r.error?.code }
}
window.reset = async (queued) => {
  await db.resetCluster({ queued })
  return db.closed
}
window.cluster = () => db.session.toJSON().cluster
window.pendingCount = async () => (await db.pending()).length
`

let browser: Browser
let dir: string
let server: Server
let origin: string
const running: DevCluster[] = []
const open: Causeway<boolean>[] = []

async function freePort(): Promise<number> {
  const s = createNetServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address() as { port: number }
  await new Promise((resolve) => s.close(resolve))
  return port
}

async function start(port: number, dataDir?: string): Promise<DevCluster> {
  const cluster = await startDevCluster({
    regions: 1,
    partitions: 2,
    replicas: 1,
    port,
    host: '127.0.0.1',
    ...(dataDir === undefined ? {} : { dataDir }),
  })
  running.push(cluster)
  return cluster
}

async function stop(cluster: DevCluster): Promise<void> {
  await cluster.close()
  running.splice(running.indexOf(cluster), 1)
}

async function servePage(out: string): Promise<string> {
  await writeFile(join(out, 'entry.js'), ENTRY)
  await build({
    entryPoints: [join(out, 'entry.js')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    outdir: join(out, 'dist'),
    conditions: ['@causeway/source'],
    logLevel: 'silent',
  })
  await writeFile(
    join(out, 'index.html'),
    '<!doctype html><script type="module" src="dist/entry.js"></script>',
  )
  server = createServer((req, res) => {
    const path = join(out, new URL(req.url!, 'http://x').pathname)
    readFile(path.endsWith('/') ? join(path, 'index.html') : path).then(
      (body) =>
        res
          .writeHead(200, {
            'content-type': extname(path) === '.js' ? 'text/javascript' : 'text/html',
          })
          .end(body),
      () => res.writeHead(404).end(),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

type Fn = (...args: unknown[]) => Promise<unknown>
const call = <T>(page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(
    ([n, a]) => (window as unknown as Record<string, Fn>)[n as string]!(...(a as unknown[])),
    [name, args] as const,
  ) as Promise<T>
const sent = (page: Page) => page.evaluate(() => (window as unknown as { sent: string[] }).sent)
const changes = (page: Page) =>
  page.evaluate(() => (window as unknown as { changes: unknown[] }).changes)

describeInChromium('a reset cluster in Chromium (issue 24.3)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-reset-'))
    browser = await launchChromium()
    origin = await servePage(await mkdtemp(join(dir, 'page-')))
  }, 60_000)

  afterAll(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => {})
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    for (const c of running.splice(0)) await c.close().catch(() => {})
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('nothing queued is sent to the new cluster; clusterChanged, resetCluster keep, then the queue applies once under a fresh session', async () => {
    const port = await freePort()
    const first = await start(port)
    const url = first.urls[0]!
    const page = await (await browser.newContext()).newPage()
    await page.goto(origin + '/')
    await page.waitForFunction(() => typeof (window as { open_?: unknown }).open_ === 'function')
    await call(page, 'open_', url)
    for (let i = 0; i < 10; i++) await call(page, 'put', `k${i}`, i)
    expect(await call(page, 'get', 'k3')).toMatchObject({ found: true, value: 3 })
    const from = await page.evaluate(() =>
      (window as unknown as { cluster: () => string }).cluster(),
    )

    // The gateway goes away; the page queues.
    await first.close()
    running.splice(running.indexOf(first), 1)
    for (let i = 0; i < 5; i++)
      expect(await call(page, 'put', `q${i}`, i)).toEqual({ pending: true })
    expect(await call(page, 'pendingCount')).toBe(5)

    // A new --memory cluster on the same port.
    await start(port)
    const raw = await connect({ url, persist: false })
    open.push(raw)
    const to = raw.session.toJSON().cluster
    expect(to).not.toBe(from)
    const before = (await sent(page)).length

    // Back online: the app is told, nothing is sent.
    expect(await call(page, 'sync')).toMatchObject({ error: 'CLUSTER_CHANGED', pending: 5 })
    await expect.poll(() => changes(page), { timeout: 10_000 }).toHaveLength(1)
    expect(await changes(page)).toEqual([{ from, to, pending: 5, code: 'CLUSTER_CHANGED' }])
    // A write made now queues behind, unsent.
    expect(await call(page, 'put', 'q5', 5)).toEqual({ pending: true })
    expect((await sent(page)).slice(before)).toEqual([])
    for (let i = 0; i < 6; i++) expect((await raw.get(`q${i}`)).found).toBe(false)

    // The app decides: keep the queue, connect again.
    expect(await call(page, 'reset', 'keep')).toBe(true)
    await call(page, 'open_', url)
    await expect
      .poll(async () => (await call<{ pending: number }>(page, 'sync')).pending, {
        timeout: 20_000,
      })
      .toBe(0)
    // Each queued write sent once, applied once.
    const replayed = (await sent(page)).slice(before)
    expect([...replayed].sort()).toEqual(['q0', 'q1', 'q2', 'q3', 'q4', 'q5'])
    expect(
      await page.evaluate(() => (window as unknown as { cluster: () => string }).cluster()),
    ).toBe(to)
    for (let i = 0; i < 6; i++) {
      expect((await raw.get(`q${i}`)).value).toBe(i)
      expect(await call(page, 'get', `q${i}`)).toMatchObject({ found: true, value: i })
    }
    // Session reads work afterwards: the new cluster never had k*, and a new write reads back.
    expect(await call(page, 'get', 'k3')).toMatchObject({ found: false })
    await call(page, 'put', 'after', 1)
    expect(await call(page, 'get', 'after')).toMatchObject({
      found: true,
      value: 1,
      source: 'remote',
    })
  }, 90_000)

  it('a cluster restored from a copy of its data (same id): nothing queued is sent, clusterChanged from and to the same id, resetCluster keep', async () => {
    const port = await freePort()
    const data = join(dir, 'data')
    const copy = join(dir, 'copy')
    let cluster = await start(port, data)
    const url = cluster.urls[0]!
    const page = await (await browser.newContext()).newPage()
    await page.goto(origin + '/')
    await page.waitForFunction(() => typeof (window as { open_?: unknown }).open_ === 'function')
    await call(page, 'open_', url)
    for (let i = 0; i < 5; i++) await call(page, 'put', `a${i}`, i)
    await stop(cluster)
    await cp(data, copy, { recursive: true })
    cluster = await start(port, data)
    // Written after the copy and read back: the page's session is ahead of the copy.
    for (let i = 0; i < 6; i++) await call(page, 'put', `b${i}`, i)
    await expect
      .poll(async () => (await call<{ pending: number }>(page, 'sync')).pending, {
        timeout: 20_000,
      })
      .toBe(0)
    for (let i = 0; i < 6; i++)
      expect(await call(page, 'get', `b${i}`)).toMatchObject({ found: true, value: i })
    await stop(cluster)
    for (let i = 0; i < 3; i++)
      expect(await call(page, 'put', `q${i}`, i)).toEqual({ pending: true })
    await start(port, copy)
    const raw = await connect({ url, persist: false })
    open.push(raw)
    const id = await page.evaluate(() => (window as unknown as { cluster: () => string }).cluster())
    expect(raw.session.toJSON().cluster).toBe(id)
    const before = (await sent(page)).length

    expect(await call(page, 'sync')).toMatchObject({ error: 'CLUSTER_CHANGED', pending: 3 })
    await expect.poll(() => changes(page), { timeout: 10_000 }).toHaveLength(1)
    expect(await changes(page)).toEqual([{ from: id, to: id, pending: 3, code: 'CLUSTER_CHANGED' }])
    expect((await sent(page)).slice(before)).toEqual([])
    for (let i = 0; i < 3; i++) expect((await raw.get(`q${i}`)).found).toBe(false)

    expect(await call(page, 'reset', 'keep')).toBe(true)
    await call(page, 'open_', url)
    await expect
      .poll(async () => (await call<{ pending: number }>(page, 'sync')).pending, {
        timeout: 20_000,
      })
      .toBe(0)
    expect([...(await sent(page)).slice(before)].sort()).toEqual(['q0', 'q1', 'q2'])
    for (let i = 0; i < 3; i++)
      expect(await call(page, 'get', `q${i}`)).toMatchObject({ found: true, value: i })
    // What the copy holds reads back; what it lost is gone, and the app was told.
    expect(await call(page, 'get', 'a2')).toMatchObject({ found: true, value: 2 })
    expect(await call(page, 'get', 'b0')).toMatchObject({ found: false })
  }, 90_000)
})
