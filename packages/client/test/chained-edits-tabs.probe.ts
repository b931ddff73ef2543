/**
 * Issue 24.2 in Chromium: two tabs of one app (one IndexedDB database, Web Locks) edit shared keys
 * of a siblings namespace while offline, each edit made over what the tab reads locally (the
 * other tab's queued edits included); another device edits each key once, online, meanwhile.
 * After the sync each key holds exactly the two concurrent versions: the tabs' last edit and the
 * other device's. The page is served from another origin than the gateway.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { build } from 'esbuild'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeInChromium, launchChromium } from '../../../gateway/test/support/chromium.js'
import { connect } from '../src/node.js'
import { startProxy, type NetProxy } from './support/net-proxy.js'

const ENTRY = `
import { connect } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))}
let db
window.open_ = async (url) => { db = await connect({ url, persist: 'tabs', defaults: { timeoutMs: 2000 } }) }
window.edit = async (key, value) => {
  const r = await db.get(key)
  const w = await db.put(key, value, { context: r.context })
  return w.pending === true
}
window.sync = async () => { const r = await db.sync(); return { applied: r.applied, pending: r.pending, owner: r.owner } }
window.siblings = async (key) => (await db.get(key)).siblings
window.read = async (key) => (await db.get(key)).found
`

let cluster: DevCluster
let proxy: NetProxy
let browser: Browser
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
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/`
}

type Call = (...args: unknown[]) => Promise<unknown>
const call = (page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(
    ([n, a]) => (window as unknown as Record<string, Call>)[n as string]!(...(a as unknown[])),
    [name, args] as const,
  )

describeInChromium('chained offline edits from two tabs (issue 24.2)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-tabs-'))
    cluster = await startDevCluster({
      regions: 1,
      partitions: 2,
      replicas: 1,
      port: 0,
      namespaces: { cart: { conflicts: 'siblings' } },
    })
    proxy = await startProxy(cluster.urls[0]!)
    browser = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    await proxy?.close()
    await cluster?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it("each shared key ends with exactly the tabs' last edit and the other device's", async () => {
    const url = await servePage(dir)
    const context = await browser.newContext()
    const [a, b] = [await context.newPage(), await context.newPage()]
    for (const page of [a, b]) {
      await page.goto(url)
      await page.waitForFunction(() => typeof (window as { open_?: unknown }).open_ === 'function')
      await call(page, 'open_', proxy.url)
    }
    const other = await connect({ url: cluster.urls[0]!, defaults: { timeoutMs: 3000 } })
    const keys = ['cart:1', 'cart:2', 'cart:3']
    try {
      for (const key of keys) {
        await other.put(key, { v: 0 })
        expect(await call(a, 'read', key)).toBe(true)
        expect(await call(b, 'read', key)).toBe(true)
      }
      const seen = await Promise.all(keys.map((key) => other.get(key)))
      proxy.setOffline(true)
      try {
        // Ten edits per key, alternating tabs: each over what its tab reads (the other's too).
        for (const [i, key] of keys.entries())
          for (let n = 1; n <= 10; n++)
            expect(await call(n % 2 === 0 ? b : a, 'edit', key, { v: n, i })).toBe(true)
        // Meanwhile another device edits each key once, online, from what it had read.
        for (const [i, key] of keys.entries())
          await other.put(key, { other: i }, { context: seen[i]!.context! })
      } finally {
        proxy.setOffline(false)
      }
      await expect
        .poll(async () => (await call(a, 'sync')) as { pending: number }, {
          timeout: 20_000,
        })
        .toMatchObject({ pending: 0 })
      for (const [i, key] of keys.entries()) {
        const r = await other.get(key)
        expect(r.siblings).toHaveLength(2)
        expect(r.siblings).toEqual(expect.arrayContaining([{ v: 10, i }, { other: i }]))
      }
    } finally {
      await other.close()
    }
  }, 90_000)
})
