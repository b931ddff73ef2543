/**
 * The status page at `GET /` in real Chromium, on the embedded backend: against a 2-region dev
 * cluster with an injected WAN delay (and replica lag), the lag and shipping backlog it shows rise
 * while writes are made and fall back to nothing once they stop; names chosen by whoever
 * configures a cluster (regions, namespaces) show as text and never run; a region whose gateway
 * does not answer the page's origin is reported with the fix. A screenshot of the page under load
 * is taken (into `docs/status-page.png` with `UPDATE_SCREENSHOTS=1`). The Redis backend:
 * `status-page-redis.test.ts`.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { describeInChromium, launchChromium } from '../support/chromium.js'
import { readStatusPage, waitForRefresh } from './status-page-reader.js'

const WAN_DELAY_MS = 400
const REPLICA_LAG_MS = 150
const SCREENSHOT = fileURLToPath(new URL('../../../docs/status-page.png', import.meta.url))

describeInChromium('the status page in Chromium', () => {
  const clusters: DevCluster[] = []
  let browser: Browser | undefined
  let scratch: string

  beforeAll(async () => {
    browser = await launchChromium()
    scratch = await mkdtemp(join(tmpdir(), 'causeway-status-page-'))
  })

  afterAll(async () => {
    await browser?.close()
    await Promise.all(clusters.map((c) => c.close()))
    if (scratch) await rm(scratch, { recursive: true, force: true })
  })

  async function open(cluster: DevCluster): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 1000 } })
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${cluster.urls[0]}/`)
    await waitForRefresh(page)
    expect(errors).toEqual([])
    return page
  }

  it('shows lag and backlog rising under writes across a WAN delay, then draining', async () => {
    const cluster = await startDevCluster({
      regions: 2,
      partitions: 2,
      replicas: 3,
      port: 0,
      regionNames: ['eu-west', 'us-east'],
      wanDelayMs: WAN_DELAY_MS,
      replicaLagMs: REPLICA_LAG_MS,
      namespaces: { cart: { conflicts: 'siblings' } },
    })
    clusters.push(cluster)
    const page = await open(cluster)
    const idle = await readStatusPage(page)
    expect(idle.regions.map((r) => r.title)).toEqual(['eu-west (region 0)', 'us-east (region 1)'])
    expect(idle.regions.every((r) => r.cells === 6 && r.leaders === 2 && r.links === 2)).toBe(true)
    expect(idle.regions[0]!.backlog).toBe(0)

    // Writes in region 0 for at most 4 s (at most 200 of them), reading the page as it refreshes.
    let maxBacklog = 0
    let maxLinkLagMs = 0
    let maxReplicaLag = 0
    let shot = false
    const until = Date.now() + 4000
    let written = 0
    let sampled = Date.now()
    while (Date.now() < until && written < 200) {
      const res = await fetch(`${cluster.urls[0]}/v1/kv/k${written % 20}?level=eventual`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: written }),
      })
      expect(res.status).toBe(200)
      written++
      await new Promise((resolve) => setTimeout(resolve, 20))
      if (Date.now() - sampled < 250) continue
      sampled = Date.now()
      const now = (await readStatusPage(page)).regions[0]!
      maxBacklog = Math.max(maxBacklog, now.backlog)
      maxLinkLagMs = Math.max(maxLinkLagMs, now.linkLagMs)
      maxReplicaLag = Math.max(maxReplicaLag, now.replicaLagEntries)
      if (!shot && now.backlog > 0 && now.replicaLagEntries > 0) {
        // The picture in docs/operations.md: the page while writes cross the WAN.
        await page.screenshot({
          path: process.env['UPDATE_SCREENSHOTS'] ? SCREENSHOT : join(scratch, 'status.png'),
          fullPage: true,
        })
        shot = true
      }
    }
    expect(written).toBeGreaterThan(50)
    expect(maxBacklog).toBeGreaterThan(0)
    // The oldest write waiting to be acknowledged is at least about one WAN crossing old.
    expect(maxLinkLagMs).toBeGreaterThanOrEqual(WAN_DELAY_MS / 2)
    expect(maxReplicaLag).toBeGreaterThan(0)
    expect(shot).toBe(true)

    // Once the writes stop, everything is shipped and applied, and the page says so.
    const drained = Date.now() + 8000
    let last = await readStatusPage(page)
    while (Date.now() < drained) {
      const r0 = last.regions[0]!
      if (r0.backlog === 0 && r0.linkLagMs === 0 && r0.replicaLagEntries === 0) break
      await waitForRefresh(page)
      last = await readStatusPage(page)
    }
    expect(last.regions[0]).toMatchObject({ backlog: 0, linkLagMs: 0, replicaLagEntries: 0 })
    // Region 1's replicas show region 0's writes in their stable vectors: every one of them.
    for (let replica = 0; replica < 3; replica++) {
      const cells = last.regions[1]!.replicas.filter((r) => r.replica === replica)
      expect(cells.reduce((sum, r) => sum + r.sv[0]!, 0)).toBe(written)
    }
  })

  it('shows causal shipping: the stabiliser leader, stable time and SiteTime of each region', async () => {
    const cluster = await startDevCluster({
      regions: 2,
      partitions: 2,
      replicas: 1,
      port: 0,
      wanDelayMs: 50,
      shipping: 'causal',
    })
    clusters.push(cluster)
    const put = await fetch(`${cluster.urls[0]}/v1/kv/k?level=causal`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 1 }),
    })
    const { ts } = (await put.json()) as { ts: string }
    const page = await open(cluster)
    expect((await readStatusPage(page)).summary).toContain('causal shipping')
    // Region 1's SiteTime of region 0 reaches the write, and each region has one leader.
    for (let i = 0; i < 20; i++) {
      const site = await page.getAttribute(
        'section[data-region="1"] [data-site-time]',
        'data-site-time',
      )
      if ((site?.split(',')[0] ?? '') >= ts) break
      await waitForRefresh(page)
    }
    const causal = await page.$$eval('[data-causal]', (nodes) =>
      nodes.map((n) => ({ leader: n.getAttribute('data-leader'), text: n.textContent })),
    )
    expect(causal.map((c) => c.leader)).toEqual(['yes', 'yes'])
    expect(causal[0]!.text).toMatch(
      /Stabiliser replica r0\.s0 \(leader\): stable time [0-9a-f]{16}/,
    )
    const site = await page.getAttribute(
      'section[data-region="1"] [data-site-time]',
      'data-site-time',
    )
    expect(site!.split(',')[0]! >= ts).toBe(true)
    expect(await page.locator('[data-label-link]').count()).toBe(2)
  })

  it('shows hostile names as text, and says how to reach a region it cannot read', async () => {
    const hostile = '<img src=x onerror="window.__pwned=1">'
    const cluster = await startDevCluster({
      regions: 2,
      partitions: 1,
      replicas: 1,
      port: 0,
      regionNames: [hostile, '"><script>window.__pwned=2</script>'],
      namespaces: { '<b onmouseover=alert(1)>cart</b>': { conflicts: 'siblings' } },
      // No page of another origin may call: region 1's status cannot be read from region 0's page.
      corsOrigins: [],
    })
    clusters.push(cluster)
    const page = await open(cluster)
    const seen = await readStatusPage(page)
    expect(seen.regions.map((r) => r.title)).toEqual([
      `${hostile} (region 0)`,
      '"><script>window.__pwned=2</script> (region 1)',
    ])
    expect(seen.summary).toContain('<b onmouseover=alert(1)>cart</b> (siblings)')
    const dom = await page.evaluate(() => ({
      pwned: (window as unknown as { __pwned?: number }).__pwned,
      images: document.querySelectorAll('img').length,
      scripts: document.querySelectorAll('script').length,
      bold: document.querySelectorAll('b').length,
    }))
    expect(dom).toEqual({ pwned: undefined, images: 0, scripts: 1, bold: 0 })
    expect(seen.regions[0]!.cells).toBe(1)
    expect(seen.regions[1]!.error).toContain(`${cluster.urls[1]}/v1/status`)
    expect(seen.regions[1]!.error).toContain(`--cors-origin`)
    expect(seen.regions[1]!.error).toContain(cluster.urls[0]!)
  })
})
