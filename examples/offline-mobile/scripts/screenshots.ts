/**
 * `npm run screenshots -w @causeway/example-offline-mobile`: the demo's screenshots in
 * docs/offline.md (docs/offline-*.png), made in headless Chromium against a fresh in-memory
 * cluster: both phones online, phone B offline with changes waiting, and the conflict view after
 * both edited one item.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Frame, type Page } from 'playwright-core'
import { APP_ROOT, buildApp, serveApp, startDemoCluster } from './stack.js'

const DOCS = join(APP_ROOT, '../../docs')

async function phone(page: Page, name: 'a' | 'b'): Promise<Frame> {
  const handle = await page.waitForSelector(`iframe[name=phone-${name}]`)
  const frame = await handle.contentFrame()
  if (frame === null) throw new Error(`phone ${name} has no frame`)
  await frame.waitForFunction(
    () => (window as { app?: { list?: unknown } }).app?.list !== undefined,
  )
  return frame
}

async function until(frame: Frame, predicate: string): Promise<void> {
  await frame.waitForFunction(predicate, null, { timeout: 15_000, polling: 50 })
}

const shows = (text: string) =>
  `[...document.querySelectorAll('#items .item .text')].some((e) => e.textContent === ${JSON.stringify(text)})`

async function add(frame: Frame, text: string): Promise<void> {
  await frame.fill('#new-item', text)
  await frame.click('#add button[type=submit]')
  await until(frame, shows(text))
}

function row(frame: Frame, text: string) {
  return frame.locator('#items .item', { has: frame.locator('.text', { hasText: text }) })
}

async function rename(frame: Frame, from: string, to: string): Promise<void> {
  await row(frame, from).locator('.text').dblclick()
  await frame.fill('#items .rename', to)
  await frame.press('#items .rename', 'Enter')
  await until(frame, shows(to))
}

const outDir = await mkdtemp(join(tmpdir(), 'offline-mobile-shots-'))
const cluster = await startDemoCluster({ port: 0, wanDelayMs: 150 })
const browser = await chromium.launch({
  executablePath: process.env['CHROMIUM_PATH'] || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking'],
})
try {
  await buildApp(outDir, cluster.urls)
  const app = await serveApp(outDir)
  try {
    const page = await browser.newPage({ viewport: { width: 860, height: 840 } })
    await page.goto(`${app.origin}/demo.html`)
    const [a, b] = [await phone(page, 'a'), await phone(page, 'b')]

    for (const item of ['Milk', 'Bread', 'Eggs', 'Tomatoes']) await add(a, item)
    await until(b, shows('Tomatoes'))
    await row(b, 'Bread').locator('.tick').check()
    await until(a, `document.querySelector('#items .item.done') !== null`)
    await page.screenshot({ path: join(DOCS, 'offline-online.png') })

    // Phone B goes offline and keeps working: its changes wait, the badge counts them.
    await b.click('#network')
    await add(b, 'Coffee')
    await rename(b, 'Eggs', 'Free-range eggs')
    await row(b, 'Milk').locator('.tick').check()
    await until(b, `document.querySelector('#badge').textContent === '6'`)
    await add(a, 'Apples')
    await page.screenshot({ path: join(DOCS, 'offline-pending.png') })

    // Meanwhile phone A renamed the milk B ticked: back online, both see two versions.
    await rename(a, 'Milk', 'Oat milk')
    await b.click('#network')
    for (const frame of [a, b])
      await until(frame, `document.querySelector('.versions-button') !== null`)
    await until(b, `document.querySelector('#badge').textContent === '0'`)
    await a.click('.versions-button')
    await until(a, `!document.querySelector('#conflict').hidden`)
    await page.screenshot({ path: join(DOCS, 'offline-conflict.png') })
  } finally {
    await app.close()
  }
} finally {
  await browser.close()
  await cluster.close()
  await rm(outDir, { recursive: true, force: true })
}
console.log('docs/offline-online.png, docs/offline-pending.png, docs/offline-conflict.png')
