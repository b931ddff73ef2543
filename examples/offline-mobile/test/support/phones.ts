/**
 * Driving the demo app in Chromium: a phone is a page of the app (one browser context per phone,
 * so each has its own IndexedDB, network and service worker; two pages of one context are two
 * tabs of one phone), used through its screen like a user would, with `window.app` to read what
 * the screen cannot say (the outbox, the owner, the session).
 */
import type { BrowserContext, Page } from 'playwright-core'
import type { AppHandle } from '../../src/main.js'

declare global {
  interface Window {
    app: AppHandle
  }
}

/** What a phone page is opened with. */
export interface PhoneSpec {
  phone: string
  gateway: string
  list: string
}

/** Opens the app as `spec.phone` in `context` (in `blank` if given) and waits until it shows its list. */
export async function openPhone(
  context: BrowserContext,
  origin: string,
  spec: PhoneSpec,
  blank?: Page,
): Promise<Page> {
  const page = blank ?? (await context.newPage())
  // An exception the app did not catch is a bug: say so (the test fails on what follows).
  page.on('pageerror', (error) => console.error(`phone ${spec.phone}: uncaught`, error))
  await page.goto(`${origin}/?${new URLSearchParams({ ...spec })}`)
  await ready(page)
  return page
}

/** Waits until the app (after a load or a reload) has shown its list. */
export async function ready(page: Page): Promise<void> {
  await page.waitForFunction(() => window.app?.ready !== undefined, null, { timeout: 15_000 })
  await page.evaluate(() => window.app.ready)
}

/** What the screen shows of each item, in order. */
export interface ShownItem {
  text: string
  done: boolean
  pending: boolean
  conflicted: boolean
}

export function shownItems(page: Page): Promise<ShownItem[]> {
  return page.$$eval('#items .item', (rows) =>
    rows.map((row) => ({
      text: row.querySelector('.text')?.textContent ?? '',
      done: row.classList.contains('done'),
      pending: row.classList.contains('pending'),
      conflicted: row.classList.contains('conflicted'),
    })),
  )
}

/** The texts the screen shows, in order. */
export async function texts(page: Page): Promise<string[]> {
  return (await shownItems(page)).map((i) => i.text)
}

/** Waits until the screen shows exactly `expected` (texts, in order). */
export async function waitForTexts(
  page: Page,
  expected: string[],
  timeout = 10_000,
): Promise<void> {
  await page.waitForFunction(
    (want) =>
      JSON.stringify(
        [...document.querySelectorAll('#items .item .text')].map((e) => e.textContent),
      ) === JSON.stringify(want),
    expected,
    { timeout, polling: 25 },
  )
}

/** Waits until the screen shows exactly these items: texts in order, and which are ticked. */
export async function waitForItems(
  page: Page,
  expected: { text: string; done: boolean }[],
  timeout = 10_000,
): Promise<void> {
  await page.waitForFunction(
    (want) =>
      JSON.stringify(
        [...document.querySelectorAll('#items .item')].map((row) => ({
          text: row.querySelector('.text')?.textContent ?? '',
          done: row.classList.contains('done'),
        })),
      ) === JSON.stringify(want),
    expected,
    { timeout, polling: 25 },
  )
}

/** The pending badge's number. */
export async function badge(page: Page): Promise<number> {
  return Number(await page.textContent('#badge'))
}

/** Waits until the badge shows `count`; says what the phone was doing when it does not. */
export async function waitForBadge(page: Page, count: number, timeout = 15_000): Promise<void> {
  try {
    await page.waitForFunction(
      (want) => document.querySelector('#badge')?.textContent === String(want),
      count,
      { timeout, polling: 25 },
    )
  } catch (error) {
    throw new Error(
      `the badge did not show ${count} within ${timeout} ms: ${await describe(page)}`,
      { cause: error },
    )
  }
}

/** The phone's state, for a failure's message. */
export async function describe(page: Page): Promise<string> {
  try {
    return await page.evaluate(async () => {
      const db = window.app.db
      return JSON.stringify({
        badge: document.querySelector('#badge')?.textContent,
        status: document.querySelector('#status')?.textContent,
        online: db?.online,
        navigatorOnline: navigator.onLine,
        owner: db?.outboxOwner,
        pending: (await db?.pending())?.length,
        events: window.app.events.filter((e) => e.name !== 'pending').slice(-8),
      })
    })
  } catch (error) {
    return `(cannot tell: ${(error as Error).message})`
  }
}

/** Types an item and adds it; resolves once the screen shows it. */
export async function addItem(page: Page, text: string): Promise<void> {
  // The user acts in the tab in front (a tab behind has its timers throttled to 1 s).
  await page.bringToFront()
  await page.fill('#new-item', text)
  await page.click('#add button[type=submit]')
  await page.waitForFunction(
    (t) => [...document.querySelectorAll('#items .item .text')].some((e) => e.textContent === t),
    text,
    { timeout: 10_000, polling: 25 },
  )
}

function row(page: Page, text: string) {
  return page.locator('#items .item', { has: page.locator('.text', { hasText: text }) })
}

/** Ticks (or unticks) the item showing `text`; resolves once the screen shows it. */
export async function tick(page: Page, text: string, done = true): Promise<void> {
  await page.bringToFront()
  await row(page, text).locator('.tick').setChecked(done)
  await page.waitForFunction(
    ([t, d]) =>
      [...document.querySelectorAll('#items .item')].some(
        (r) => r.querySelector('.text')?.textContent === t && r.classList.contains('done') === d,
      ),
    [text, done] as const,
    { timeout: 10_000, polling: 25 },
  )
}

/** Renames an item (double-click, type, Enter); resolves once the screen shows the new text. */
export async function rename(page: Page, from: string, to: string): Promise<void> {
  await page.bringToFront()
  await row(page, from).locator('.text').dblclick()
  await page.fill('#items .rename', to)
  await page.press('#items .rename', 'Enter')
  await waitForText(page, to)
}

/** Removes the item showing `text`; resolves once it is gone. */
export async function removeItem(page: Page, text: string): Promise<void> {
  await page.bringToFront()
  await row(page, text).locator('.remove').click()
  await page.waitForFunction(
    (t) => ![...document.querySelectorAll('#items .item .text')].some((e) => e.textContent === t),
    text,
    { timeout: 10_000, polling: 25 },
  )
}

/** Waits until some item shows `text`. */
export async function waitForText(page: Page, text: string, timeout = 10_000): Promise<void> {
  await page.waitForFunction(
    (t) => [...document.querySelectorAll('#items .item .text')].some((e) => e.textContent === t),
    text,
    { timeout, polling: 25 },
  )
}

/** Waits until the app's service worker controls the page (so a reload works offline). */
export async function waitForServiceWorker(page: Page): Promise<void> {
  await page.evaluate(() => navigator.serviceWorker.ready)
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, {
    timeout: 10_000,
  })
}

/** The SDK events the app recorded, by name. */
export function events(page: Page, name: string): Promise<{ at: number; detail?: unknown }[]> {
  return page.evaluate((n) => window.app.events.filter((e) => e.name === n), name)
}
