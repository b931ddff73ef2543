/**
 * `npx tsx scripts/icons.ts`: renders public/icon.svg to the PNG icons the web manifest lists
 * (192 and 512 px; browsers want PNGs to offer installing the app), in headless Chromium.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { APP_ROOT } from './stack.js'

const svg = await readFile(join(APP_ROOT, 'public/icon.svg'), 'utf8')
const browser = await chromium.launch({
  executablePath: process.env['CHROMIUM_PATH'] || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking'],
})
try {
  for (const size of [192, 512]) {
    const page = await browser.newPage({ viewport: { width: size, height: size } })
    await page.setContent(
      `<body style="margin:0"><img src="data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}" width="${size}" height="${size}"></body>`,
    )
    const png = await page.screenshot({ omitBackground: true })
    await writeFile(join(APP_ROOT, `public/icon-${size}.png`), png)
    await page.close()
  }
} finally {
  await browser.close()
}
