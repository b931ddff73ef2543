/**
 * A web page of another origin using the SDK in real Chromium: a page on http://localhost:5173
 * (a web app's dev server) loads the SDK bundled for browsers and reads and writes through it
 * against a 2-region dev cluster started as `npm start` starts one (`causeway dev`, here in
 * memory, on free ports, with a siblings namespace so that contexts travel too). The gateways'
 * CORS answers are also checked over plain HTTP, and a gateway that does not allow the page's
 * origin is shown to serve it nothing and to make the SDK say why.
 */
import type * as Sdk from '@causeway/client'
import { SDK_REQUEST_HEADERS } from '@causeway/core'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { startCli, stopCli, urlsOf, type CliProcess } from '../cli/cli-process.js'
import { describeInChromium, launchChromium } from '../support/chromium.js'
import { bundleSdk, startPageServer, type PageServer } from './page-server.js'

declare global {
  interface Window {
    causeway: typeof Sdk
  }
}

const APP_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>a web app</title>
<script type="module">import * as causeway from '/sdk.js'; window.causeway = causeway</script>
</head><body>a web app</body></html>`

/** What a plain HTTP client sees of CORS: the `access-control-*` headers of a reply. */
function corsHeaders(res: Response): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')))
}

describeInChromium('a page of another origin, in Chromium', () => {
  let cli: CliProcess | undefined
  let urls: string[] = []
  /** A gateway that allows only another origin than the page's. */
  let strict: DevCluster | undefined
  let pages: PageServer | undefined
  let browser: Browser | undefined
  let page: Page

  beforeAll(async () => {
    cli = startCli([
      'dev',
      '--regions',
      '2',
      '--partitions',
      '4',
      '--replicas',
      '3',
      '--memory',
      '--port',
      '0',
      '--siblings',
      'cart',
    ])
    const [found, sdk] = await Promise.all([urlsOf(cli, 2), bundleSdk()])
    urls = found
    strict = await startDevCluster({
      regions: 1,
      partitions: 1,
      replicas: 1,
      port: 0,
      corsOrigins: ['https://app.example.com'],
    })
    pages = await startPageServer({
      '/': { type: 'text/html; charset=utf-8', body: APP_PAGE },
      '/sdk.js': { type: 'text/javascript; charset=utf-8', body: sdk },
    })
    browser = await launchChromium()
    page = await browser.newPage()
    await page.goto(`${pages.origin}/`)
    await page.waitForFunction(() => window.causeway !== undefined)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await pages?.close()
    await strict?.close()
    if (cli) await stopCli(cli)
  })

  it('reads and writes through the SDK in both regions: keys, siblings and sets', async () => {
    const result = await page.evaluate(async (home) => {
      const db = await window.causeway.connect({ url: home })
      const written = await db.put('user:ada', { name: 'Ada' })
      const here = await db.get('user:ada')
      // Region 1 is another origin again; the session vector makes the read wait for shipping.
      const there = await db.get('user:ada', {
        region: 1,
        read: 'read-your-writes',
        timeoutMs: 5000,
      })
      const empty = await db.get('cart:1')
      await db.put('cart:1', ['apple'], { context: empty.context ?? null })
      const cart = await db.get('cart:1')
      const tags = db.set('tags')
      await tags.add(['a', 'b'])
      const size = await tags.size()
      const has = await tags.has('a', { region: 1, timeoutMs: 5000 })
      await db.delete('user:ada')
      const deleted = await db.get('user:ada', { region: 1, timeoutMs: 5000 })
      await db.close()
      return {
        origin: location.origin,
        regions: db.regions.map((r) => r.url),
        written: written.region,
        here: here.value,
        there: { value: there.value, region: there.region },
        cart: { siblings: cart.siblings, context: typeof cart.context },
        size,
        has: has.found,
        deleted: deleted.found,
      }
    }, urls[0]!)
    expect(result.origin).toMatch(/^http:\/\/localhost:\d+$/)
    expect(result.regions).toEqual(urls)
    expect(result).toMatchObject({
      written: 0,
      here: { name: 'Ada' },
      there: { value: { name: 'Ada' }, region: 1 },
      cart: { siblings: [['apple']], context: 'string' },
      size: 2,
      has: true,
      deleted: false,
    })
  })

  it('reads the reply headers the gateway exposes, and no others', async () => {
    const seen = await page.evaluate(async (home) => {
      const db = await window.causeway.connect({ url: home })
      await db.put('cart:2', ['pear'])
      await db.close()
      const res = await fetch(`${home}/v1/kv/cart:2?level=eventual`)
      return {
        context: res.headers.get('causeway-context'),
        // Sent (Vary: Origin), but not exposed: a page cannot read it.
        vary: res.headers.get('vary'),
      }
    }, urls[0]!)
    expect(seen.context).toMatch(/\S/)
    expect(seen.vary).toBeNull()
    const direct = await fetch(`${urls[0]}/v1/kv/cart:2?level=eventual`, {
      headers: { origin: 'http://localhost:5173' },
    })
    expect(direct.headers.get('vary')).toMatch(/origin/i)
  })

  it('answers preflights for what the SDK sends, and refuses the rest (plain HTTP)', async () => {
    const preflight = (url: string, origin: string, method: string, headers: string) =>
      fetch(url, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': method,
          'access-control-request-headers': headers,
        },
      })
    const ok = await preflight(
      `${urls[1]}/v1/kv/a`,
      'http://localhost:5173',
      'PUT',
      SDK_REQUEST_HEADERS.join(','),
    )
    expect(ok.status).toBe(204)
    expect(corsHeaders(ok)).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, HEAD, PUT, POST, DELETE',
    })
    expect(ok.headers.get('access-control-allow-headers')!.split(', ').sort()).toEqual(
      [...SDK_REQUEST_HEADERS].sort(),
    )
    expect(ok.headers.get('access-control-expose-headers')).toContain('causeway-context')

    const unknown = await preflight(
      `${urls[1]}/v1/kv/a`,
      'http://localhost:5173',
      'PUT',
      'content-type,x-tracking',
    )
    expect(unknown.status).toBe(403)
    expect(corsHeaders(unknown)).toEqual({})
    expect(await unknown.json()).toMatchObject({ code: 'CROSS_ORIGIN_REFUSED' })

    const internal = await preflight(
      `${urls[1]}/v1/internal/ship/0/0`,
      'http://localhost:5173',
      'POST',
      'authorization,content-type',
    )
    expect(internal.status).toBe(403)
    expect(corsHeaders(internal)).toEqual({})

    const other = await fetch(`${strict!.urls[0]}/v1/topology`, {
      headers: { origin: 'http://localhost:5173' },
    })
    expect(other.status).toBe(200)
    expect(corsHeaders(other)).toEqual({})
    const allowed = await fetch(`${strict!.urls[0]}/v1/topology`, {
      headers: { origin: 'https://app.example.com' },
    })
    expect(corsHeaders(allowed)).toMatchObject({
      'access-control-allow-origin': 'https://app.example.com',
    })
  })

  it('a gateway that does not allow the page: no write reaches it, the SDK says why', async () => {
    const home = strict!.urls[0]!
    const outcome = await page.evaluate(async (url) => {
      const put = await fetch(`${url}/v1/kv/blocked`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '{"value":1}',
      }).then(
        () => 'sent',
        (error: Error) => error.name,
      )
      try {
        await window.causeway.connect({ url })
        return { put, error: undefined }
      } catch (e) {
        const error = e as Sdk.CausewayError
        return {
          put,
          error: { code: error.code, message: error.message, url: error.details?.['url'] },
        }
      }
    }, home)
    // The preflight failed, so the browser never sent the PUT.
    expect(outcome.put).toBe('TypeError')
    const read = await fetch(`${home}/v1/kv/blocked`)
    expect(await read.json()).toMatchObject({ found: false })

    expect(outcome.error).toMatchObject({ code: 'NETWORK_ERROR', url: `${home}/v1/topology` })
    const message = outcome.error!.message
    expect(message).toContain(`GET ${home}/v1/topology failed`)
    expect(message).toContain(`does not allow pages of ${pages!.origin}`)
    expect(message).toContain(`--cors-origin ${pages!.origin}`)
    expect(message).toMatch(/proxy/)
    expect(message).toMatch(/offline/)
  })
})
