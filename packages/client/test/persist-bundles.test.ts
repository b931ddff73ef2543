/**
 * Issue 24.5: `connect({ persist: 'name' })` in a page built the two ways apps bundle the SDK: a
 * split ES-module build (`esbuild --splitting --format=esm`, what the README's small entry size
 * is measured on: `browser-level` is a chunk loaded on first use, and a dynamic import of a
 * CommonJS chunk yields only `default`) and a plain one. Each runs in Debian's Chromium, the page
 * served from another origin than the gateway.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { build } from 'esbuild'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeInChromium, launchChromium } from '../../../gateway/test/support/chromium.js'

const ENTRY = `
import { connect } from ${JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)))}
window.run = async (url, name) => {
  const db = await connect({ url, persist: name })
  await db.put('bundle:k', { n: 1 })
  const r = await db.get('bundle:k')
  const pending = (await db.pending()).length
  await db.close()
  return { value: r.value, pending }
}
`

let cluster: DevCluster
let browser: Browser
let dir: string
const servers: Server[] = []

/** Builds the page's script into `out` (split or plain) and serves the directory. */
async function servePage(out: string, splitting: boolean): Promise<string> {
  await writeFile(join(out, 'entry.js'), ENTRY)
  await build({
    entryPoints: [join(out, 'entry.js')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    splitting,
    minify: true,
    outdir: join(out, 'dist'),
    conditions: ['@causeway/source'],
    logLevel: 'silent',
  })
  await writeFile(
    join(out, 'index.html'),
    '<!doctype html><script type="module" src="dist/entry.js"></script>',
  )
  const server = createServer((req, res) => {
    const path = join(out, new URL(req.url!, 'http://x').pathname)
    readFile(path.endsWith('/') ? join(path, 'index.html') : path).then(
      (body) => {
        const type = extname(path) === '.js' ? 'text/javascript' : 'text/html'
        res.writeHead(200, { 'content-type': type }).end(body)
      },
      () => res.writeHead(404).end(),
    )
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/`
}

describeInChromium('persist in a bundled page (issue 24.5)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'causeway-bundles-'))
    cluster = await startDevCluster({ regions: 1, partitions: 2, replicas: 1, port: 0 })
    browser = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    for (const s of servers) await new Promise((resolve) => s.close(resolve))
    await cluster?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  for (const splitting of [true, false])
    it(`${splitting ? 'a split ESM build' : 'a plain build'}: connect({ persist }) opens IndexedDB and writes through it`, async () => {
      const out = await mkdtemp(join(dir, splitting ? 'split-' : 'plain-'))
      const page = await (await browser.newContext()).newPage()
      const errors: string[] = []
      page.on('pageerror', (e) => errors.push(e.message))
      await page.goto(await servePage(out, splitting))
      await page.waitForFunction(() => typeof (window as { run?: unknown }).run === 'function')
      const result = await page.evaluate(
        ([url, name]) =>
          (window as unknown as { run: (u: string, n: string) => Promise<unknown> }).run(
            url!,
            name!,
          ),
        [cluster.urls[0]!, `bundle-${splitting}`],
      )
      expect(errors).toEqual([])
      expect(result).toEqual({ value: { n: 1 }, pending: 0 })
    }, 60_000)
})
