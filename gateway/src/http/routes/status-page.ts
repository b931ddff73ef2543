/**
 * `GET /`: the status page an operator sees on opening a gateway's port in a browser. Plain HTML
 * and one small script (`gateway/static/`, served as they are, no build step) that polls
 * `/v1/topology` and every region's `/v1/status` and draws regions × partitions × replicas. The
 * page itself holds no data, so it is open like `/healthz` (see `http/auth.ts`); the script asks
 * for an API key when the gateway wants one. Hidden from the OpenAPI document: it is for people.
 */
import { readFile } from 'node:fs/promises'
import type { FastifyPluginAsync } from 'fastify'

/** Path of the page's script. */
export const STATUS_PAGE_SCRIPT = '/status-page.js'

// `gateway/static/`, one level above both `src/` and `dist/`.
const STATIC = new URL('../../../static/', import.meta.url)

/**
 * The page runs only its own script and reads other regions' status (their gateways, which may be
 * on other hosts); it is never framed.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self' http: https:",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** The page's routes. */
export const statusPageRoutes: FastifyPluginAsync = async (app) => {
  // Read once: they are small and never change while the gateway runs.
  const [html, script, style] = await Promise.all(
    ['status-page.html', 'status-page.js', 'status-page.css'].map((name) =>
      readFile(new URL(name, STATIC), 'utf8'),
    ),
  )
  const common = {
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-cache',
  }
  const files: Array<[string, string, string]> = [
    ['/', 'text/html; charset=utf-8', html!],
    [STATUS_PAGE_SCRIPT, 'text/javascript; charset=utf-8', script!],
    ['/status-page.css', 'text/css; charset=utf-8', style!],
  ]
  for (const [path, type, body] of files) {
    app.get(
      path,
      { config: { operation: 'status-page' }, schema: { hide: true } },
      async (_request, reply) =>
        reply
          .headers({ ...common, 'content-security-policy': CONTENT_SECURITY_POLICY })
          .type(type)
          .send(body),
    )
  }
}
