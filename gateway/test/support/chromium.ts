/**
 * Real Chromium for the browser tests: Debian's `chromium` (`apt-get install chromium`) driven
 * by `playwright-core`, which downloads no browser of its own. Where it is missing, the tests
 * that need it are skipped with one line saying so, except under CI (`CI` set, as `.ci/run`
 * does), where they fail: CI installs it, so a missing browser there is a broken setup.
 */
import { accessSync, constants } from 'node:fs'
import { chromium, type Browser, type BrowserContext } from 'playwright-core'
import { describe } from 'vitest'

/** The browser the tests launch: `CHROMIUM_PATH`, or Debian's. */
export const CHROMIUM_PATH = process.env['CHROMIUM_PATH'] || '/usr/bin/chromium'

function underCi(): boolean {
  const ci = process.env['CI']
  return ci !== undefined && ci !== '' && ci !== '0' && ci !== 'false'
}

/** Why Chromium cannot be used here, or undefined when it can. */
function chromiumMissing(): string | undefined {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK)
    return undefined
  } catch {
    return `no Chromium at ${CHROMIUM_PATH}`
  }
}

/**
 * `describe` for tests that need Chromium: skipped, with one line saying why and how to run them,
 * when it is missing outside CI; run (and failing at launch) when it is missing under CI.
 */
export function describeInChromium(name: string, body: () => void): void {
  const missing = chromiumMissing()
  if (missing !== undefined && !underCi()) {
    console.warn(
      `skipping "${name}": ${missing} (apt-get install chromium, or set CHROMIUM_PATH; under CI this fails instead)`,
    )
    describe.skip(name, body)
    return
  }
  describe(name, body)
}

const LAUNCH = {
  executablePath: CHROMIUM_PATH,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-gpu',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
}

function throwIfMissing(): void {
  const missing = chromiumMissing()
  if (missing !== undefined)
    throw new Error(`${missing}: CI installs it with apt-get install chromium`)
}

/** Launches headless Chromium; throws, saying what to install, when there is none. */
export async function launchChromium(): Promise<Browser> {
  throwIfMissing()
  return chromium.launch(LAUNCH)
}

/**
 * Launches headless Chromium with a profile on disk in `userDataDir`: a browser context like a
 * user's, not an incognito one (what `launchChromium().newContext()` gives). Storage quotas set
 * through the DevTools protocol (`Storage.overrideQuotaForOrigin`) hold only there.
 */
export async function launchPersistentChromium(userDataDir: string): Promise<BrowserContext> {
  throwIfMissing()
  return chromium.launchPersistentContext(userDataDir, LAUNCH)
}
