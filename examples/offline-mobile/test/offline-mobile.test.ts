/**
 * The demo app in real Chromium (Debian's, through playwright-core) against a 2-region dev
 * cluster with a WAN delay: phone A talks to region 0, phone B to region 1, each in a browser
 * context of its own (its own IndexedDB, service worker and network), from another origin than
 * the gateways'. The app is built by Vite here, so nothing needs building first.
 *
 * What the gateway applied is counted on its own change feed (one event per log entry), read
 * raw: an operation applied twice would show twice.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, type Causeway } from '@causeway/client'
import type { DevCluster } from '@causeway/gateway'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import {
  describeInChromium,
  launchChromium,
  launchPersistentChromium,
} from '../../../gateway/test/support/chromium.js'
import { openSse, type SseStream } from '../../../gateway/test/support/sse-client.js'
import { startProxy, type NetProxy } from '../../../packages/client/test/support/net-proxy.js'
import { buildApp, serveApp, startDemoCluster } from '../scripts/stack.js'
import {
  addItem,
  badge,
  events,
  openPhone,
  ready,
  removeItem,
  rename,
  shownItems,
  texts,
  tick,
  waitForBadge,
  waitForServiceWorker,
  waitForText,
  waitForItems,
  waitForTexts,
} from './support/phones.js'

const WAN_DELAY_MS = 100
/** Each test's limit: a browser on a shared 2-core machine, with waits of up to 30 s inside. */
const TEST_TIMEOUT_MS = 60_000

let cluster: DevCluster
let proxy: NetProxy
let app: { origin: string; close(): Promise<void> }
let browser: Browser
let outDir: string
let reader: Causeway<false>
const contexts: BrowserContext[] = []
const cleanups: (() => Promise<void>)[] = []

let n = 0
/** A list of its own per test: the cluster is shared. */
const freshList = () => `t${Date.now().toString(36)}${n++}`

async function newContext(options: { withoutWebLocks?: boolean } = {}): Promise<BrowserContext> {
  const context = await browser.newContext()
  if (options.withoutWebLocks === true)
    await context.addInitScript(() => {
      delete (Navigator.prototype as { locks?: unknown }).locks
    })
  contexts.push(context)
  return context
}

/** The gateway's raw feed of `prefix` in `region`, from now: one change per applied write. */
async function gatewayFeed(prefix: string, region: number): Promise<SseStream> {
  const opened = await openSse(
    `${cluster.urls[region]}/v1/watch?prefix=${encodeURIComponent(prefix)}&level=eventual&heartbeatMs=1000`,
  )
  if (!opened.ok) throw new Error(JSON.stringify(opened.body))
  await opened.stream.nextOf('heartbeat', 5000)
  return opened.stream
}

interface FeedChange {
  key: string
  ts: string
  value?: unknown
  deleted: boolean
  set?: { added: string[]; removed: string[] }
}

/** Reads `total` changes, then any more that arrive within `settleMs` (a write applied twice). */
async function readChanges(
  stream: SseStream,
  total: number,
  settleMs = 500,
): Promise<FeedChange[]> {
  const out: FeedChange[] = []
  while (out.length < total) out.push(JSON.parse((await stream.nextOf('change', 20_000)).data))
  for (;;) {
    try {
      out.push(JSON.parse((await stream.nextOf('change', settleMs)).data))
    } catch {
      return out
    }
  }
}

/** A queued op or a feed change as one comparable line. */
function opLine(op: { kind: string; key: string; value?: unknown; elements?: unknown[] }): string {
  const element = (e: unknown) => (typeof e === 'string' ? e : (e as { element: string }).element)
  if (op.kind === 'set-add') return `add ${op.key} ${op.elements!.map(element).join(',')}`
  if (op.kind === 'set-remove') return `remove ${op.key} ${op.elements!.map(element).join(',')}`
  if (op.kind === 'delete') return `delete ${op.key}`
  return `put ${op.key} ${JSON.stringify(op.value)}`
}

function changeLine(c: FeedChange): string {
  if (c.set !== undefined && c.set.added.length > 0) return `add ${c.key} ${c.set.added.join(',')}`
  if (c.set !== undefined) return `remove ${c.key} ${c.set.removed.join(',')}`
  if (c.deleted) return `delete ${c.key}`
  return `put ${c.key} ${JSON.stringify(c.value)}`
}

function pendingOps(page: Page) {
  return page.evaluate(() =>
    window.app.db!.pending().then((ops) =>
      ops.map((o) => ({
        opId: o.opId,
        kind: o.kind,
        key: o.key,
        value: o.value,
        elements: o.elements,
      })),
    ),
  )
}

describeInChromium('the offline-mobile demo in Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium()
    outDir = await mkdtemp(join(tmpdir(), 'offline-mobile-'))
    cluster = await startDemoCluster({ port: 0, wanDelayMs: WAN_DELAY_MS })
    proxy = await startProxy(cluster.urls[0]!)
    await buildApp(outDir, cluster.urls)
    app = await serveApp(outDir)
    reader = await connect({ url: cluster.urls[0]! })
  }, 120_000)

  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close()
    for (const cleanup of cleanups.splice(0)) await cleanup()
  })

  afterAll(async () => {
    await reader?.close()
    await browser?.close()
    await app?.close()
    await proxy?.close()
    await cluster?.close()
    if (outDir !== undefined) await rm(outDir, { recursive: true, force: true })
  })

  it(
    'offline edits survive a reload and show as pending; connect() works offline after the reload',
    async () => {
      const list = freshList()
      const context = await newContext()
      const a = await openPhone(context, app.origin, {
        phone: 'a',
        gateway: cluster.urls[0]!,
        list,
      })
      await addItem(a, 'Milk')
      await waitForBadge(a, 0)
      await waitForServiceWorker(a)
      // Installable: a manifest with a standalone display and PNG icons the server has.
      const installable = await a.evaluate(async () => {
        const link = document.querySelector<HTMLLinkElement>('link[rel=manifest]')!
        const manifest = (await (await fetch(link.href)).json()) as {
          display: string
          icons: { src: string; sizes: string }[]
        }
        const icons = await Promise.all(
          manifest.icons.map(
            async (i) => `${i.sizes} ${(await fetch(new URL(i.src, link.href))).status}`,
          ),
        )
        return { display: manifest.display, icons }
      })
      expect(installable).toEqual({
        display: 'standalone',
        icons: ['192x192 200', '512x512 200', 'any 200'],
      })

      await context.setOffline(true)
      await addItem(a, 'Eggs')
      await tick(a, 'Milk')
      // Each edit is two writes: the item's key and its id in the list's set.
      await waitForBadge(a, 4)
      const queued = await pendingOps(a)
      expect(queued.map((o) => o.kind)).toEqual(['put', 'set-add', 'put', 'set-add'])

      await a.reload()
      await ready(a)
      // The page came from the service worker, the topology and the data from IndexedDB.
      expect(
        await a.evaluate(() => ({ online: window.app.db!.online, offline: !navigator.onLine })),
      ).toEqual({ online: false, offline: true })
      expect(await shownItems(a)).toEqual([
        { text: 'Milk', done: true, pending: true, conflicted: false },
        { text: 'Eggs', done: false, pending: true, conflicted: false },
      ])
      expect(await badge(a)).toBe(4)
      expect(await a.textContent('#status')).toBe('4 changes waiting for the network')
      expect(await pendingOps(a)).toEqual(queued)

      await context.setOffline(false)
      await waitForBadge(a, 0)
      await a.waitForFunction(() => document.querySelectorAll('#items .item.pending').length === 0)
      const ids = await a.evaluate(() => window.app.list!.items().map((i) => i.id))
      const values = await Promise.all(
        ids.map((id) => reader.get(`list:${list}:item:${id}`).then((r) => r.value)),
      )
      expect(values).toEqual([
        { text: 'Milk', done: true },
        { text: 'Eggs', done: false },
      ])
    },
    TEST_TIMEOUT_MS,
  )

  it(
    'reconnect: the queued edits apply in order; the other phone sees them through its change feed within 2 s',
    async () => {
      const list = freshList()
      const a = await openPhone(await newContext(), app.origin, {
        phone: 'a',
        gateway: cluster.urls[0]!,
        list,
      })
      const contextB = await newContext()
      const b = await openPhone(contextB, app.origin, {
        phone: 'b',
        gateway: cluster.urls[1]!,
        list,
      })
      await addItem(a, 'Bread')
      await waitForTexts(b, ['Bread'])

      await a.context().setOffline(true)
      await addItem(a, 'Butter')
      await rename(a, 'Bread', 'Rye bread')
      await tick(a, 'Butter')
      await addItem(a, 'Jam')
      await removeItem(a, 'Jam')
      await waitForBadge(a, 10)
      const queued = await pendingOps(a)
      // B, online all along, has seen none of it.
      expect(await texts(b)).toEqual(['Bread'])

      const feed = await gatewayFeed(`list:${list}:`, 0)
      await a.context().setOffline(false)
      // B's screen, through its feed from region 1: within 2 s of A's reconnect (its replay
      // included).
      // Every edit, the tick included: the rename and the tick are separate changes on the feed,
      // and B may show one a moment before the other.
      await waitForItems(
        b,
        [
          { text: 'Rye bread', done: false },
          { text: 'Butter', done: true },
        ],
        5000,
      )
      const seenAt = await b.evaluate(() => Date.now())
      const reconnected = (await events(a, 'online')).at(-1)!
      expect(seenAt - reconnected.at).toBeLessThan(2000)
      await a.waitForFunction(() => window.app.events.some((e) => e.name === 'synced'))
      expect(await badge(a)).toBe(0)

      // In order, each once: the gateway's stamps sort the changes as the outbox queued them.
      const changes = await readChanges(feed, queued.length)
      feed.close()
      expect(changes).toHaveLength(queued.length)
      const byStamp = [...changes].sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0))
      expect(byStamp.map(changeLine)).toEqual(queued.map(opLine))
    },
    TEST_TIMEOUT_MS,
  )

  it(
    'both phones edit one item offline: after sync both show its two versions; merging on one converges both',
    async () => {
      const list = freshList()
      const contextA = await newContext()
      const contextB = await newContext()
      const a = await openPhone(contextA, app.origin, {
        phone: 'a',
        gateway: cluster.urls[0]!,
        list,
      })
      const b = await openPhone(contextB, app.origin, {
        phone: 'b',
        gateway: cluster.urls[1]!,
        list,
      })
      await addItem(a, 'Milk')
      await waitForTexts(b, ['Milk'])

      await contextA.setOffline(true)
      await contextB.setOffline(true)
      await rename(a, 'Milk', 'Oat milk')
      await tick(b, 'Milk')
      await contextA.setOffline(false)
      await contextB.setOffline(false)

      for (const phone of [a, b]) {
        await phone.waitForSelector('#items .item.conflicted .versions-button', { timeout: 10_000 })
        expect(await phone.textContent('#items .item.conflicted .versions-button')).toBe(
          '2 versions',
        )
      }
      await b.click('#items .item.conflicted .versions-button')
      const versions = await b.$$eval('#versions .version', (rows) =>
        rows.map(
          (r) =>
            `${r.querySelector('.text')!.textContent} (${r.querySelector('.state')!.textContent})`,
        ),
      )
      expect(versions.sort()).toEqual(['Milk (bought)', 'Oat milk (to buy)'])
      await b.click('#merge')

      for (const phone of [b, a]) {
        await phone.waitForFunction(
          () =>
            document.querySelectorAll('#items .item').length === 1 &&
            document.querySelector('#items .item.conflicted') === null &&
            document.querySelector('#items .item.pending') === null,
          null,
          { timeout: 10_000, polling: 25 },
        )
      }
      const [onA, onB] = [await shownItems(a), await shownItems(b)]
      expect(onA).toEqual(onB)
      expect(onA[0]!.done).toBe(true)
      expect(onA[0]!.text.split(' / ').sort()).toEqual(['Milk', 'Oat milk'])
      expect(await b.isHidden('#conflict')).toBe(true)
    },
    TEST_TIMEOUT_MS,
  )

  for (const locks of ['Web Locks', 'the BroadcastChannel lease'] as const) {
    it(
      `two tabs of one phone (${locks}): one session, one outbox owner, each operation applied once, takeover on close`,
      async () => {
        const list = freshList()
        const context = await newContext({ withoutWebLocks: locks !== 'Web Locks' })
        const spec = { phone: 'a', gateway: cluster.urls[0]!, list }
        const tab1 = await openPhone(context, app.origin, spec)
        const tab2 = await openPhone(context, app.origin, spec)
        expect(await tab1.evaluate(() => 'locks' in navigator)).toBe(locks === 'Web Locks')
        const owners = async () =>
          Promise.all([tab1, tab2].map((t) => t.evaluate(() => window.app.db!.outboxOwner)))
        await expect.poll(owners, { timeout: 5000 }).toEqual([true, false])

        // One session: what tab 1 wrote, tab 2's session holds (shareSession), and both agree.
        await addItem(tab1, 'Tea')
        await waitForTexts(tab2, ['Tea'])
        const session = (t: Page) => t.evaluate(() => JSON.stringify(window.app.db!.session))
        await expect
          .poll(async () => (await session(tab1)) === (await session(tab2)), { timeout: 5000 })
          .toBe(true)

        // Offline, both tabs queue into the one outbox; both see all of it.
        const feed = await gatewayFeed(`list:${list}:`, 0)
        await context.setOffline(true)
        await addItem(tab1, 'Coffee')
        await addItem(tab2, 'Sugar')
        await addItem(tab1, 'Honey')
        await waitForBadge(tab1, 6)
        await waitForBadge(tab2, 6)
        await context.setOffline(false)
        await waitForBadge(tab1, 0)
        await waitForBadge(tab2, 0)
        await waitForTexts(tab2, ['Tea', 'Coffee', 'Sugar', 'Honey'])
        const changes = await readChanges(feed, 6)
        expect(changes).toHaveLength(6)
        expect(new Set(changes.map(changeLine)).size).toBe(6)

        // The owner closes with writes queued: the other tab takes the outbox over and replays it.
        await context.setOffline(true)
        await addItem(tab2, 'Salt')
        await addItem(tab1, 'Pepper')
        await waitForBadge(tab2, 4)
        await tab1.close()
        await expect
          .poll(() => tab2.evaluate(() => window.app.db!.outboxOwner), { timeout: 8000 })
          .toBe(true)
        await context.setOffline(false)
        await waitForBadge(tab2, 0)
        await waitForTexts(tab2, ['Tea', 'Coffee', 'Sugar', 'Honey', 'Salt', 'Pepper'])
        const more = await readChanges(feed, 4)
        feed.close()
        expect(more).toHaveLength(4)
        expect(new Set([...changes, ...more].map(changeLine)).size).toBe(10)
      },
      TEST_TIMEOUT_MS,
    )
  }

  it(
    'the demo page: two phones in one browser keep apart; a phone switched off queues, switched on it syncs and the other sees it',
    async () => {
      const list = freshList()
      const context = await newContext()
      const page = await context.newPage()
      const query = new URLSearchParams({
        'gateway-a': cluster.urls[0]!,
        'gateway-b': cluster.urls[1]!,
      })
      await page.goto(`${app.origin}/demo.html?${query}`)
      const frame = async (name: string) => {
        const f = (await (await page.waitForSelector(`iframe[name=${name}]`)).contentFrame())!
        await f.waitForFunction(() => window.app?.list !== undefined, null, { timeout: 15_000 })
        return f
      }
      const [a, b] = [await frame('phone-a'), await frame('phone-b')]
      expect(await a.evaluate(() => window.app.config)).toMatchObject({ store: 'shopping-a' })
      expect(await b.evaluate(() => window.app.db!.home.id)).toBe(1)
      // The demo page's list (the default one): what it shows now, and an item of this test's own.
      const items = (f: typeof a) =>
        f.$$eval('#items .item .text', (e) => e.map((x) => x.textContent))
      const before = await items(a)
      const mine = `Kiwis ${list}`
      await b.click('#network')
      expect(await b.textContent('#network-label')).toBe('offline')
      await b.fill('#new-item', mine)
      await b.click('#add button[type=submit]')
      await b.waitForFunction(() => document.querySelector('#badge')?.textContent === '2')
      // Phone A's store and outbox are its own: it has nothing waiting, and has not seen it.
      expect(await a.textContent('#badge')).toBe('0')
      expect(await items(a)).toEqual(before)
      await b.click('#network')
      await b.waitForFunction(() => document.querySelector('#badge')?.textContent === '0')
      await b.waitForFunction(
        () => document.querySelector('#network-label')?.textContent === 'online',
      )
      await a.waitForFunction(
        (t) =>
          [...document.querySelectorAll('#items .item .text')].some((e) => e.textContent === t),
        mine,
        { timeout: 5000 },
      )
    },
    TEST_TIMEOUT_MS,
  )

  it(
    'the connection is cut in the middle of a replay: after reconnect nothing is lost, nothing applied twice',
    async () => {
      const list = freshList()
      const context = await newContext()
      // Through the proxy: its sockets to the gateway are the ones cut.
      const a = await openPhone(context, app.origin, { phone: 'a', gateway: proxy.url, list })
      const prefix = `cut-${list}:`
      const total = 600
      await context.setOffline(true)
      await a.evaluate(
        async ([p, count]) => {
          const db = window.app.db!
          await Promise.all(Array.from({ length: count }, (_, i) => db.put(`${p}${i}`, i)))
        },
        [prefix, total] as const,
      )
      await waitForBadge(a, total)
      // Counted in region 1: region 0's sockets are cut, its feed with them.
      const feed = await gatewayFeed(prefix, 1)
      const before = proxy.opsRequests
      let cuts = 0
      // The first batch (500) passes; the second is applied, and every socket is closed as its
      // reply starts: the phone never learns that it was.
      proxy.dropOpsReplies(1, 1, () => {
        cuts++
        cluster.gateways[0]!.server.closeAllConnections()
      })
      await context.setOffline(false)
      await waitForBadge(a, 0, 30_000)
      expect(cuts).toBe(1)
      expect(proxy.opsRequests - before).toBeGreaterThanOrEqual(3)

      const changes = await readChanges(feed, total, 1000)
      feed.close()
      const counts = new Map<string, number>()
      for (const c of changes) counts.set(c.key, (counts.get(c.key) ?? 0) + 1)
      expect(counts.size).toBe(total)
      expect([...counts.values()].every((c) => c === 1)).toBe(true)
      expect(await a.evaluate(() => window.app.db!.failed().then((f) => f.length))).toBe(0)
      const last = await reader.get(`${prefix}${total - 1}`)
      expect(last.value).toBe(total - 1)
    },
    TEST_TIMEOUT_MS,
  )

  it(
    'a quota error surfaces as STORAGE_FULL at once; what was queued stays and syncs later',
    async () => {
      const list = freshList()
      // A profile on disk, its quota forced down before the app first stores anything (Chromium
      // enforces a quota set through DevTools only outside incognito, and reads it when the
      // origin's storage is first opened).
      const profile = await mkdtemp(join(tmpdir(), 'offline-mobile-profile-'))
      const context = await launchPersistentChromium(profile)
      contexts.push(context)
      cleanups.push(() => rm(profile, { recursive: true, force: true }))
      const page = context.pages()[0] ?? (await context.newPage())
      const cdp = await context.newCDPSession(page)
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: app.origin, quotaSize: 3_000_000 })
      const a = await openPhone(
        context,
        app.origin,
        { phone: 'a', gateway: cluster.urls[0]!, list },
        page,
      )
      await addItem(a, 'Milk')
      await context.setOffline(true)
      await addItem(a, 'Eggs')
      await waitForBadge(a, 2)

      // Offline, the phone queues photos of receipts (700 kB each, incompressible) until the
      // store is full: the write that does not fit fails at once; those before it stay queued.
      const filled = await a.evaluate(async () => {
        const photo = () => {
          let binary = ''
          for (let i = 0; i < 8; i++) {
            const bytes = crypto.getRandomValues(new Uint8Array(65536))
            binary += String.fromCharCode(...bytes)
          }
          return btoa(binary)
        }
        const queued: string[] = []
        for (let i = 0; i < 20; i++) {
          const started = Date.now()
          try {
            const w = await window.app.db!.put(`receipt:${i}`, photo())
            queued.push(w.opId)
          } catch (e) {
            const error = e as { code?: string; details?: Record<string, unknown> }
            return {
              queued,
              code: error.code,
              quota: error.details?.['quota'],
              ms: Date.now() - started,
            }
          }
        }
        return { queued, code: 'none' }
      })
      expect(filled).toMatchObject({ code: 'STORAGE_FULL', quota: true })
      expect(filled.ms).toBeLessThan(5000)
      expect(filled.queued.length).toBeGreaterThan(0)
      const pending = await pendingOps(a)
      expect(pending.map((o) => o.kind)).toEqual([
        'put',
        'set-add',
        ...filled.queued.map(() => 'put'),
      ])
      expect(pending.slice(2).map((o) => o.opId)).toEqual(filled.queued)
      expect(await badge(a)).toBe(2 + filled.queued.length)

      await cdp.send('Storage.overrideQuotaForOrigin', { origin: app.origin })
      await context.setOffline(false)
      await waitForBadge(a, 0, 20_000)
      await waitForText(a, 'Eggs')
      const id = (await a.evaluate(() => window.app.list!.items().map((i) => i.id)))[1]!
      expect((await reader.get(`list:${list}:item:${id}`)).value).toEqual({
        text: 'Eggs',
        done: false,
      })
      expect((await reader.get(`receipt:${filled.queued.length - 1}`)).found).toBe(true)
    },
    TEST_TIMEOUT_MS,
  )
})
