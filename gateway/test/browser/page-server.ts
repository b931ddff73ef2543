/**
 * What the browser tests serve from another origin than the gateways': a tiny static server on
 * `http://localhost:5173` (where a web app's dev server would be) and the SDK bundled for the
 * browser from its sources with esbuild, as an app's bundler would.
 */
import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url))

/** `@causeway/client` as one ES module for browsers, from the sources of the SDK and core. */
export async function bundleSdk(): Promise<string> {
  const result = await build({
    entryPoints: [src('../../../packages/client/src/index.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    alias: { '@causeway/core': src('../../../packages/core/src/index.ts') },
  })
  return result.outputFiles[0]!.text
}

/** A served file. */
export interface PageFile {
  type: string
  body: string
}

/** A running page server. */
export interface PageServer {
  /** `http://localhost:<port>`: the pages' origin. */
  origin: string
  close(): Promise<void>
}

/**
 * Serves `files` (by path) on loopback, on `port` (5173 by default) or, when that is taken (by
 * another test run on this machine), on a free port, saying so.
 */
export async function startPageServer(
  files: Record<string, PageFile>,
  port = 5173,
): Promise<PageServer> {
  const server = createServer((request, response) => {
    const file = files[(request.url ?? '/').split('?', 1)[0]!]
    if (file === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
      return
    }
    response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' })
    response.end(file.body)
  })
  let listening: number
  try {
    listening = await listen(server, port)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    listening = await listen(server, 0)
    console.warn(`port ${port} is taken: the test page is served on port ${listening} instead`)
  }
  return {
    origin: `http://localhost:${listening}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      const address = server.address()
      resolve(typeof address === 'object' && address !== null ? address.port : port)
    })
  })
}
