/**
 * The SDK on `RATE_LIMITED` (429): it waits what the reply asks (the body's `retryAfterMs`, else
 * the `retry-after` header) and sends the same request again while that fits in the call's
 * deadline, for reads and writes; otherwise it throws a `RateLimitedError` carrying
 * `retryAfterMs` at once. With a stub transport, then against a real rate-limited gateway.
 */
import { describe, expect, it } from 'vitest'
import { startDevCluster } from '../../../gateway/src/dev-server.js'
import { RateLimitedError, connect } from '../src/index.js'
import { connect as connectNode } from '../src/node.js'
import { retryAfterMs } from '../src/rate-limit-backoff.js'
import type { TransportResponse } from '../src/transport.js'
import { FakeGateway, readOk, rejection, writeOk } from './fake-gateway.js'

function limited(retryAfterMsDetail: number | undefined, header?: string): TransportResponse {
  const response: TransportResponse = {
    status: 429,
    body: {
      statusCode: 429,
      code: 'RATE_LIMITED',
      message: 'rate limit reached',
      ...(retryAfterMsDetail === undefined
        ? {}
        : { details: { retryAfterMs: retryAfterMsDetail } }),
    },
  }
  if (header !== undefined) response.retryAfter = header
  return response
}

async function open(gw: FakeGateway) {
  return connect({ url: 'http://us.test', transport: gw })
}

describe('rate-limit backoff (stub transport)', () => {
  it('waits retryAfterMs and sends the same read again', async () => {
    const gw = new FakeGateway().reply(limited(120, '1'), readOk({ value: 'after' }))
    const db = await open(gw)
    const started = performance.now()
    const r = await db.get('k', { timeoutMs: 2000 })
    expect(r.value).toBe('after')
    expect(performance.now() - started).toBeGreaterThanOrEqual(110)
    expect(gw.kv).toHaveLength(2)
    expect(gw.kv[1]!.url).toBe(gw.kv[0]!.url)
    expect(gw.kv[1]!.headers).toEqual(gw.kv[0]!.headers)
  })

  it('resends a write too (a refused write was not applied), and honours a header alone', async () => {
    const gw = new FakeGateway().reply(limited(undefined, '1'), writeOk({ idx: 3 }))
    const db = await open(gw)
    const started = performance.now()
    const w = await db.put('k', 1, { timeoutMs: 3000 })
    expect(w.idx).toBe(3)
    expect(performance.now() - started).toBeGreaterThanOrEqual(950)
    expect(gw.kv.map((r) => r.method)).toEqual(['PUT', 'PUT'])
    expect(gw.kv[1]!.body).toEqual(gw.kv[0]!.body)
  })

  it('throws RateLimitedError with retryAfterMs at once when the wait does not fit the deadline', async () => {
    const gw = new FakeGateway().reply(limited(5000, '5'))
    const db = await open(gw)
    const started = performance.now()
    const error = await rejection(db.get('k', { timeoutMs: 1000 }))
    expect(performance.now() - started).toBeLessThan(500)
    expect(error).toBeInstanceOf(RateLimitedError)
    expect(error.code).toBe('RATE_LIMITED')
    expect((error as RateLimitedError).retryAfterMs).toBe(5000)
    expect(gw.kv).toHaveLength(1)
    // From the header when the body has no details.
    const gw2 = new FakeGateway().reply(limited(undefined, '7'))
    const error2 = await rejection((await open(gw2)).put('k', 1, { timeoutMs: 1000 }))
    expect((error2 as RateLimitedError).retryAfterMs).toBe(7000)
  })

  it('stops after a bounded number of resends, even with zero waits', async () => {
    const gw = new FakeGateway().reply(...Array.from({ length: 20 }, () => limited(0)))
    const db = await open(gw)
    const error = await rejection(db.get('k', { timeoutMs: 2000 }))
    expect(error).toBeInstanceOf(RateLimitedError)
    expect(gw.kv.length).toBeLessThanOrEqual(9)
  })

  it('reads the wait from the body, the header in seconds, or an HTTP date', () => {
    expect(retryAfterMs(limited(250, '1'))).toBe(250)
    expect(retryAfterMs(limited(undefined, '2'))).toBe(2000)
    expect(retryAfterMs(limited(undefined, 'soon'))).toBeUndefined()
    const at = new Date(Date.now() + 3000).toUTCString()
    expect(retryAfterMs(limited(undefined, at))).toBeGreaterThan(1000)
  })
})

describe('rate-limit backoff (a real gateway)', () => {
  it.each([
    ['fetch', connect],
    ['undici', connectNode],
  ] as const)('waits out the gateway’s 429 within the deadline (%s transport)', async (_, open) => {
    const dev = await startDevCluster({
      regions: 1,
      partitions: 2,
      replicas: 1,
      port: 0,
      rateLimit: { max: 3, windowMs: 600 },
    })
    try {
      // The topology fetch is one request of the window.
      const db = await open({ url: dev.urls[0]! })
      try {
        for (let i = 0; i < 4; i++) await db.put(`k${i}`, i, { timeoutMs: 3000 })
        expect((await db.get('k3', { timeoutMs: 3000 })).value).toBe(3)
        // A deadline shorter than the window's rest: refused at once, with the wait (of 5
        // quick calls, at most 3 fit in a window).
        let error: unknown
        for (let i = 0; i < 5 && error === undefined; i++)
          error = await db.get('k0', { timeoutMs: 30 }).then(
            () => undefined,
            (e: unknown) => e,
          )
        expect(error).toBeInstanceOf(RateLimitedError)
        expect((error as RateLimitedError).retryAfterMs).toBeGreaterThan(0)
        expect((error as RateLimitedError).retryAfterMs).toBeLessThanOrEqual(600)
      } finally {
        await db.close()
      }
    } finally {
      await dev.close()
    }
  })
})
