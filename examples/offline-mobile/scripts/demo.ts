/**
 * `npm run demo`: a 2-region dev cluster with a WAN delay (region 0 on :7080, region 1 on :7081,
 * data kept in examples/offline-mobile/.causeway), the app built by Vite and served on :4173, and
 * the page that shows two phones side by side, each talking to its own region.
 *
 * Environment: CAUSEWAY_DEMO_PORT (7080), CAUSEWAY_DEMO_APP_PORT (4173),
 * CAUSEWAY_DEMO_WAN_DELAY_MS (150).
 */
import { join } from 'node:path'
import { APP_ROOT, buildApp, serveApp, startDemoCluster } from './stack.js'

function envInt(name: string, fallback: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be an integer, not ${text}`)
  return value
}

const port = envInt('CAUSEWAY_DEMO_PORT', 7080)
const appPort = envInt('CAUSEWAY_DEMO_APP_PORT', 4173)
const wanDelayMs = envInt('CAUSEWAY_DEMO_WAN_DELAY_MS', 150)

// Kept on disk: the phones keep their stores (IndexedDB) across restarts, and a store belongs to
// one cluster (its id is in the data directory).
const cluster = await startDemoCluster({ port, wanDelayMs, dataDir: join(APP_ROOT, '.causeway') })
const outDir = join(APP_ROOT, 'dist')
await buildApp(outDir, cluster.urls)
const app = await serveApp(outDir, appPort)

console.log(`Causeway offline demo
  gateways   region 0 ${cluster.urls[0]}, region 1 ${cluster.urls[1]} (WAN delay ${wanDelayMs} ms each way)
  two phones ${app.origin}/demo.html
  one phone  ${app.origin}/?phone=a   (installable: open it, then "Install app" in the browser's menu)
Ctrl-C stops.`)

let stopping = false
async function stop(): Promise<void> {
  if (stopping) return
  stopping = true
  await app.close()
  await cluster.close()
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
