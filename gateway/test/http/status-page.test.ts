/**
 * The status page's files as the gateway serves them (`app.inject()`): HTML at `GET /`, its
 * script and style, open even when API keys are configured (they hold no data), with a content
 * security policy that lets only the page's own script run. The page at work, in Chromium, is
 * `gateway/test/browser/status-page.test.ts`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { buildGateway, type Gateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

let app: Gateway | undefined

afterEach(async () => {
  await app?.close()
  app = undefined
})

function gateway(apiKeys: string[] = []): Gateway {
  app = buildGateway({
    service: new FakeClusterService(),
    regionUrls: ['http://127.0.0.1:7070', 'http://127.0.0.1:7071'],
    processMetrics: false,
    auth: { apiKeys },
  })
  return app
}

describe('the status page', () => {
  it('is HTML at GET / linking its script, the API document, metrics and health', async () => {
    const res = await gateway().inject({ method: 'GET', url: '/' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    for (const href of ['/status-page.js', '/v1/openapi.json', '/metrics', '/healthz'])
      expect(res.body).toContain(`"${href}"`)
  })

  it('serves its script and style with their types', async () => {
    const app = gateway()
    const script = await app.inject({ method: 'GET', url: '/status-page.js' })
    expect(script.statusCode).toBe(200)
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8')
    expect(script.body).toContain('/v1/status')
    const style = await app.inject({ method: 'GET', url: '/status-page.css' })
    expect(style.headers['content-type']).toBe('text/css; charset=utf-8')
  })

  it('lets only its own script run, and is never framed', async () => {
    const res = await gateway().inject({ method: 'GET', url: '/' })
    const csp = String(res.headers['content-security-policy'])
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain('unsafe-inline')
  })

  it('is open when the gateway needs API keys; the status it shows is not', async () => {
    const app = gateway(['client-key-0123456789'])
    for (const url of ['/', '/status-page.js', '/status-page.css'])
      expect([url, (await app.inject({ method: 'GET', url })).statusCode]).toEqual([url, 200])
    expect((await app.inject({ method: 'GET', url: '/v1/status' })).statusCode).toBe(401)
  })
})
