/**
 * What the demo runs on, for `npm run demo`, the browser tests and the screenshots alike: a
 * 2-region dev cluster with a WAN delay and the `list` siblings namespace, the app built by Vite,
 * and a static server for the build on another origin than the gateways'.
 */
import { fileURLToPath } from 'node:url'
import { startDevCluster, type DevCluster } from '@causeway/gateway'
import { build, preview, type PreviewServer } from 'vite'

/** The example's folder. */
export const APP_ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Options of {@link startDemoCluster}. */
export interface DemoClusterOptions {
  /** Region 0 listens on `port`, region 1 on `port + 1`; 0 picks free ports. @default 7080 */
  port?: number
  /** One-way delay between the regions. @default 150 */
  wanDelayMs?: number
  /** Keep the data under this directory (else in memory, gone on exit). */
  dataDir?: string
}

/** The demo's cluster: 2 regions, 4 partitions, 2 replicas, `list:` keeps siblings. */
export function startDemoCluster(options: DemoClusterOptions = {}): Promise<DevCluster> {
  return startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 2,
    port: options.port ?? 7080,
    wanDelayMs: options.wanDelayMs ?? 150,
    namespaces: { list: { conflicts: 'siblings' } },
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
  })
}

/** Builds the app into `outDir`, the gateways of each region given to the demo page. */
export async function buildApp(outDir: string, gateways: readonly string[]): Promise<void> {
  const env = { ...process.env }
  process.env['VITE_CAUSEWAY_GATEWAYS'] = gateways.join(',')
  // What ships, even from a test runner (vitest sets NODE_ENV=test, and Vite then makes a
  // development build, without the service worker).
  process.env['NODE_ENV'] = 'production'
  try {
    await build({
      configFile: fileURLToPath(new URL('../vite.config.ts', import.meta.url)),
      root: APP_ROOT,
      mode: 'production',
      logLevel: 'warn',
      build: { outDir, emptyOutDir: true },
    })
  } finally {
    for (const name of ['VITE_CAUSEWAY_GATEWAYS', 'NODE_ENV']) {
      if (env[name] === undefined) delete process.env[name]
      else process.env[name] = env[name]
    }
  }
}

/** Serves a build on loopback (`vite preview`): on `port`, or a free one with 0. */
export async function serveApp(
  outDir: string,
  port = 0,
): Promise<{ origin: string; server: PreviewServer; close(): Promise<void> }> {
  const server = await preview({
    configFile: fileURLToPath(new URL('../vite.config.ts', import.meta.url)),
    root: APP_ROOT,
    logLevel: 'warn',
    build: { outDir },
    preview: { host: '127.0.0.1', port, strictPort: port !== 0, open: false },
  })
  const address = server.httpServer.address()
  if (address === null || typeof address === 'string') throw new Error('the app server has no port')
  return {
    origin: `http://127.0.0.1:${address.port}`,
    server,
    close: () => server.close(),
  }
}
