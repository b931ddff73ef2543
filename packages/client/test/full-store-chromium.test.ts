/**
 * Issue 24.1 in Chromium: a real IndexedDB quota (CDP `Storage.overrideQuotaForOrigin`, a profile
 * on disk). Writes queue offline until the store is full; back online with the store still full,
 * the queue is uploaded once (the page counts the ops it sends), whatever the store does with
 * the outcomes, and it drains once the quota is lifted. The page is served from another origin.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { build } from 'esbuild'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  describeInChromium,
  launchPersistentChromium,
} from '../../../gateway/test/support/chromium.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'

const ENTRY = `
import { connect, fetchTransport } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))}
const inner = fetchTransport()
window.uploaded = 0
window.errors = []
const transport = {
  request(req) {
    if (req.url.includes('/v1/ops')) window.uploaded += JSON.parse(req.body).ops.length
    return inner.request(req)
  },
}
let db
window.open_ = async (url) => {
  db = await connect({ url, persist: 'full', transport, defaults: { timeoutMs: 3000 } })
  db.on('error', ({ error }) => window.errors.push(error.code))
}
const blob = () => {
  let s = ''
  for (let i = 0; i < 4; i++) s += btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(49152))))
  return s
}
window.fill = async () => {
  let queued = 0
  for (let i = 0; i < 40; i++) {
    try {
      const w = await db.put('blob:' + i, blob())
      if (w.pending) queued++
    } catch (e) {
      return { queued, code: e.code }
    }
  }
  return { queued, code: undefined }
}
window.sync = async () => {
  const r = await db.sync()
  return { applied: r.applied, pending: r.pending, error: r.error?.code }
}
window.pendingCount = async () => (await db.pending()).length
`

let cluster: DevCluster
let proxy: NetProxy
let context: BrowserContext
let dir: string
let server: Server

async function servePage(out: string): Promise<string> {
  await writeFile(join(out, 'entry.js'), ENTRY)
  await build({
    entryPoints: [join(out, 'entry.js')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    splitting: true,
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
const uploaded = (page: Page) =>
  page.evaluate(() => (window as unknown as { uploaded: number }).uploaded)

describeInChromium('a full IndexedDB during a replay (issue 24.1)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-full-'))
    cluster = await startDevCluster({ regions: 1, partitions: 2, replicas: 1, port: 0 })
    proxy = await startProxy(cluster.urls[0]!)
    context = await launchPersistentChromium(join(dir, 'profile'))
  }, 60_000)

  afterAll(async () => {
    await context?.close()
    await new Promise((resolve) => server?.close(resolve))
    await proxy?.close()
    await cluster?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('the queue is uploaded once while the store stays full, and drains once space returns', async () => {
    const origin = await servePage(await mkdtemp(join(dir, 'page-')))
    const page = context.pages()[0] ?? (await context.newPage())
    const cdp = await context.newCDPSession(page)
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 3_000_000 })
    await page.goto(origin + '/')
    await page.waitForFunction(() => typeof (window as { open_?: unknown }).open_ === 'function')
    await call(page, 'open_', proxy.url)
    proxy.setOffline(true)
    let filled: { queued: number; code?: string }
    try {
      filled = await call(page, 'fill')
    } finally {
      proxy.setOffline(false)
    }
    expect(filled.code).toBe('STORAGE_FULL')
    expect(filled.queued).toBeGreaterThan(0)
    const before = await uploaded(page) // the first write of the spell, tried alone
    // Still full: a few replays (and whatever retries run meanwhile) upload the queue once.
    for (let i = 0; i < 3; i++) await call(page, 'sync')
    expect((await uploaded(page)) - before).toBe(filled.queued)
    await cdp.send('Storage.overrideQuotaForOrigin', { origin })
    await expect
      .poll(async () => (await call<{ pending: number }>(page, 'sync')).pending, {
        timeout: 20_000,
      })
      .toBe(0)
    expect(await call(page, 'pendingCount')).toBe(0)
    expect((await uploaded(page)) - before).toBe(filled.queued)
  }, 90_000)
})
