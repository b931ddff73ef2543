/**
 * The status page in real Chromium on the Redis backend: `causeway dev --backend redis` (real
 * redis-servers, a gateway process per region, a WAN delay on shipping). The page on region 0's
 * gateway reads region 1's status across origins (the dev cluster's gateways allow any origin),
 * draws the Redis replicas, and its shipping backlog and lag rise under writes and drain after.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startCli, stopCli, urlsOf, type CliProcess } from '../cli/cli-process.js'
import { describeInChromium, launchChromium } from '../support/chromium.js'
import { readStatusPage, waitForRefresh } from './status-page-reader.js'

const WAN_DELAY_MS = 300

describeInChromium('the status page in Chromium, on Redis', () => {
  let cli: CliProcess | undefined
  let urls: string[] = []
  let browser: Browser | undefined
  let page: Page

  beforeAll(async () => {
    cli = startCli([
      'dev',
      '--backend',
      'redis',
      '--regions',
      '2',
      '--partitions',
      '1',
      '--replicas',
      '2',
      '--port',
      '0',
      '--appendfsync',
      'everysec',
      '--wan-delay',
      String(WAN_DELAY_MS),
    ])
    const [found, launched] = await Promise.all([urlsOf(cli, 2, 60_000), launchChromium()])
    urls = found
    browser = launched
    page = await browser.newPage()
    await page.goto(`${urls[0]}/`)
    await waitForRefresh(page, 10_000)
  }, 90_000)

  afterAll(async () => {
    await browser?.close()
    if (cli) await stopCli(cli)
  })

  it('shows each partition’s leader and epoch', async () => {
    const leaders = await page.$$eval('th[data-leader-state]', (cells) =>
      cells.map((c) => [c.getAttribute('data-leader-state'), c.getAttribute('data-epoch')]),
    )
    // One partition in each of the two regions, led in its first epoch.
    expect(leaders).toEqual([
      ['leading', '1'],
      ['leading', '1'],
    ])
  })

  it('draws both regions of Redis replicas, and the lag moves under writes', async () => {
    // Each region's gateway ships once it holds the partition's lease, a moment after it starts.
    let idle = await readStatusPage(page)
    for (let i = 0; i < 20 && idle.regions.some((r) => r.links === 0); i++) {
      await waitForRefresh(page)
      idle = await readStatusPage(page)
    }
    expect(idle.regions.map((r) => r.title)).toEqual(['r0 (region 0)', 'r1 (region 1)'])
    for (const region of idle.regions) {
      expect(region.error).toBeUndefined()
      expect([region.cells, region.leaders, region.links]).toEqual([2, 1, 1])
    }
    const backends = await page.$$eval('td.replica .muted', (cells) =>
      cells.map((c) => c.textContent ?? ''),
    )
    expect(backends.every((b) => b.startsWith('redis://127.0.0.1:'))).toBe(true)

    // At most 150 writes in at most 4 s, reading the page as it refreshes.
    let maxBacklog = 0
    let maxLinkLagMs = 0
    let written = 0
    let sampled = Date.now()
    const until = Date.now() + 4000
    while (Date.now() < until && written < 150) {
      const res = await fetch(`${urls[0]}/v1/kv/k${written % 10}?level=eventual`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: written }),
      })
      expect(res.status).toBe(200)
      written++
      await new Promise((resolve) => setTimeout(resolve, 20))
      if (Date.now() - sampled < 250) continue
      sampled = Date.now()
      const r0 = (await readStatusPage(page)).regions[0]!
      maxBacklog = Math.max(maxBacklog, r0.backlog)
      maxLinkLagMs = Math.max(maxLinkLagMs, r0.linkLagMs)
    }
    expect(written).toBeGreaterThan(30)
    expect(maxBacklog).toBeGreaterThan(0)
    expect(maxLinkLagMs).toBeGreaterThanOrEqual(WAN_DELAY_MS / 2)

    const drained = Date.now() + 10_000
    let last = await readStatusPage(page)
    while (Date.now() < drained && last.regions[0]!.backlog > 0) {
      await waitForRefresh(page)
      last = await readStatusPage(page)
    }
    expect(last.regions[0]).toMatchObject({ backlog: 0, linkLagMs: 0 })
    const leader1 = last.regions[1]!.replicas.find((r) => r.role === 'leader')!
    expect(leader1.sv[0]).toBe(written)
  })
})
