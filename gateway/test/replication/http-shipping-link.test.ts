/**
 * The HTTP shipping link with an injected fetch: one request at a time in the order sent (FIFO),
 * the envelopes that waited for their turn joined into one request, batches split by size, the
 * cluster secret on every request, the next gateway after a failure, queued batches dropped once
 * one failed (so a hanging destination costs one timeout), and a request to a gateway that fails
 * its health check given up at once. (A real frozen gateway process:
 * `test/deploy/redis-gateway-stop.test.ts`.)
 */
import { HLC_ZERO, type ShipEnvelopeWire } from '@causeway/core'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { GatewayHealth } from '../../src/replication/gateway-health.js'
import { HttpShippingLink, jsonLengthBound } from '../../src/replication/http-shipping-link.js'
import type { LogEntry } from '../../src/storage/partition-replica.js'
import { entry as logEntry, ship } from '../support/log-entries.js'

interface Seen {
  url: string
  method: string
  auth: string | null
  idxs: number[]
  /** The envelope's head: version, sender, epoch, first and last idx. */
  head?: [number, number, number, number, number]
}

function entry(idx: number, value = 'x'): LogEntry {
  return logEntry(0, idx, `k${idx}`, JSON.stringify(value), HLC_ZERO, idx)
}

/** Until an abort: how a frozen process answers. */
function hang(signal: AbortSignal | null | undefined): Promise<never> {
  return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)))
}

/**
 * A destination that applies entries in order, as a leader's receive does. Its gateways answer
 * their health checks (`/healthz`, not in `seen`) as `health` says.
 */
function destination(
  options: {
    fail?: (n: number, url: string) => 'refuse' | 'error' | 'hang' | undefined
    health?: (url: string) => 'up' | 'hang'
  } = {},
) {
  const seen: Seen[] = []
  let sv = 0
  let active = 0
  let maxActive = 0
  let hanging = 0
  let probes = 0
  const fetch = (async (url: string, init: RequestInit) => {
    if (url.endsWith('/healthz')) {
      probes++
      if (options.health?.(url) === 'hang') return hang(init.signal)
      return Response.json({ status: 'ok' })
    }
    const n = seen.length
    const body = init.body ? (JSON.parse(String(init.body)) as ShipEnvelopeWire) : undefined
    seen.push({
      url,
      method: init.method ?? 'GET',
      auth: new Headers(init.headers).get('authorization'),
      idxs: body?.entries.map((e) => e.idx) ?? [],
      ...(body ? { head: [body.v, body.from, body.epoch, body.first, body.last] } : {}),
    })
    active++
    maxActive = Math.max(maxActive, active)
    try {
      await new Promise((r) => setTimeout(r, 2))
      const failure = options.fail?.(n, url)
      if (failure === 'refuse') throw new TypeError('fetch failed')
      if (failure === 'hang') {
        hanging++
        await hang(init.signal)
      }
      if (failure === 'error')
        return Response.json({ code: 'BACKEND_UNAVAILABLE', message: 'down' }, { status: 503 })
      for (const e of body?.entries ?? []) if (e.idx === sv + 1) sv = e.idx
      return Response.json({ checkpoint: sv })
    } finally {
      active--
    }
  }) as unknown as typeof globalThis.fetch
  return {
    fetch,
    seen,
    maxActive: () => maxActive,
    hanging: () => hanging,
    probes: () => probes,
  }
}

const GATEWAYS = ['http://a.example', 'http://b.example']

describe('HttpShippingLink', () => {
  it('sends one request at a time, in order, with the cluster secret, joining what waited', async () => {
    const dest = destination()
    const link = new HttpShippingLink({
      gateways: GATEWAYS,
      partition: 3,
      origin: 0,
      secret: 's3cret',
      fetch: dest.fetch,
    })
    expect(await link.checkpoint()).toBe(0)
    const first = link.send(ship(0, [entry(1), entry(2)]))
    await vi.waitFor(() => expect(dest.seen).toHaveLength(2))
    // Sent while the first is on its way: they wait, and go as one envelope.
    const sends = [3, 5, 7].map((i) => link.send(ship(0, [entry(i), entry(i + 1)])))
    expect(await Promise.all([first, ...sends])).toEqual([2, 8, 8, 8])
    expect(dest.maxActive()).toBe(1)
    expect(dest.seen.map((s) => s.idxs)).toEqual([[], [1, 2], [3, 4, 5, 6, 7, 8]])
    // Each a versioned envelope: v 1, from region 0, epoch 1, first and last idx.
    expect(dest.seen.slice(1).map((s) => s.head)).toEqual([
      [1, 0, 1, 1, 2],
      [1, 0, 1, 3, 8],
    ])
    // Sent in one go, they join too; but nothing joins across a checkpoint.
    const later = [link.send(ship(0, [entry(9)])), link.send(ship(0, [entry(10)]))]
    const asked = link.checkpoint()
    const last = link.send(ship(0, [entry(11)]))
    expect(await Promise.all([...later, asked, last])).toEqual([10, 10, 10, 11])
    expect(dest.seen.slice(3).map((s) => s.idxs)).toEqual([[9, 10], [], [11]])
    expect(new Set(dest.seen.map((s) => s.url))).toEqual(
      new Set(['http://a.example/v1/internal/ship/3/0']),
    )
    expect(new Set(dest.seen.map((s) => s.auth))).toEqual(new Set(['Bearer s3cret']))
  })

  it('splits a batch by size, keeping order, and stops at a gap', async () => {
    const dest = destination()
    const link = new HttpShippingLink({
      gateways: GATEWAYS,
      partition: 0,
      origin: 0,
      secret: 's',
      maxBatchBytes: 300,
      fetch: dest.fetch,
    })
    const big = 'y'.repeat(400)
    expect(await link.send(ship(0, [entry(1), entry(2), entry(3, big), entry(4), entry(5)]))).toBe(
      5,
    )
    expect(dest.seen.map((s) => s.idxs)).toEqual([[1, 2], [3], [4, 5]])
    // Each chunk its own envelope of consecutive entries.
    expect(dest.seen.map((s) => s.head?.slice(3))).toEqual([
      [1, 2],
      [3, 3],
      [4, 5],
    ])
    // A batch that starts past the destination's checkpoint: one request, then it stops.
    const before = dest.seen.length
    expect(await link.send(ship(0, [entry(9), entry(10, big), entry(11)]))).toBe(5)
    expect(dest.seen.length - before).toBe(1)
  })

  it('goes to the next gateway after a failure and drops the batches queued behind it', async () => {
    const dest = destination({ fail: (n) => (n === 1 ? 'error' : undefined) })
    const link = new HttpShippingLink({
      gateways: GATEWAYS,
      partition: 0,
      origin: 0,
      secret: 's',
      fetch: dest.fetch,
    })
    const first = link.send(ship(0, [entry(1)]))
    await vi.waitFor(() => expect(dest.seen).toHaveLength(1))
    const results = await Promise.allSettled([
      first,
      link.send(ship(0, [entry(2)])),
      // Does not follow 2, so it waits for a request of its own.
      link.send(ship(0, [entry(4)])),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain(
      '503 BACKEND_UNAVAILABLE',
    )
    expect(String((results[2] as PromiseRejectedResult).reason)).toContain('dropped')
    // The third batch was never sent; the next call goes to the other gateway.
    expect(dest.seen).toHaveLength(2)
    expect(await link.checkpoint()).toBe(1)
    expect(dest.seen.at(-1)!.url).toBe('http://b.example/v1/internal/ship/0/0')
  })

  it('gives up on a destination that hangs after its timeout, once', async () => {
    const dest = destination({ fail: (n) => (n === 0 ? 'hang' : undefined) })
    const link = new HttpShippingLink({
      gateways: GATEWAYS,
      partition: 0,
      origin: 0,
      secret: 's',
      timeoutMs: 100,
      fetch: dest.fetch,
    })
    const started = performance.now()
    const results = await Promise.allSettled(
      [1, 2, 3, 4].map((i) => link.send(ship(0, [entry(i)]))),
    )
    expect(results.every((r) => r.status === 'rejected')).toBe(true)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(dest.seen).toHaveLength(1)
  })

  it("bounds an envelope's JSON from above without encoding it, whatever its values hold", () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 })
    fc.assert(
      fc.property(
        fc.array(fc.tuple(text, fc.option(text, { nil: undefined }), fc.nat()), { maxLength: 8 }),
        (rows) => {
          const entries = rows.map(([key, value, at], i) =>
            logEntry(0, i + 1, key || 'k', value, HLC_ZERO, at),
          )
          const exact = entries.reduce((sum, e) => sum + JSON.stringify(e).length, 0)
          expect(jsonLengthBound(entries)).toBeGreaterThanOrEqual(exact)
        },
      ),
    )
  })

  it('rejects what is pending and everything after close', async () => {
    const dest = destination({ fail: () => 'hang' })
    const link = new HttpShippingLink({
      gateways: GATEWAYS,
      partition: 0,
      origin: 0,
      secret: 's',
      fetch: dest.fetch,
    })
    const pending = link.send(ship(0, [entry(1)]))
    await vi.waitFor(() => expect(dest.hanging()).toBe(1))
    await link.close()
    await expect(pending).rejects.toThrow()
    await expect(link.checkpoint()).rejects.toThrow('closed')
  })

  it('gives up at once on a gateway that fails its health check, and goes to another', async () => {
    // Gateway a is frozen: its requests and its health checks hang.
    let frozen = false
    const dest = destination({
      fail: (_, url) => (frozen && url.startsWith('http://a.') ? 'hang' : undefined),
      health: (url) => (frozen && url.startsWith('http://a.') ? 'hang' : 'up'),
    })
    const health = new GatewayHealth({
      gateways: GATEWAYS,
      intervalMs: 20,
      timeoutMs: 60,
      fetch: dest.fetch,
    })
    const link = new HttpShippingLink({
      gateways: health,
      partition: 0,
      origin: 0,
      secret: 's',
      timeoutMs: 60_000,
      fetch: dest.fetch,
    })
    expect(await link.send(ship(0, [entry(1)]))).toBe(1)
    frozen = true
    const started = performance.now()
    await expect(link.send(ship(0, [entry(2)]))).rejects.toThrow(
      'http://a.example failed its health check',
    )
    // Given up on by the health check, long before the request's own timeout.
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(health.isUp('http://a.example')).toBe(false)
    expect(await link.checkpoint()).toBe(1)
    expect(await link.send(ship(0, [entry(2)]))).toBe(2)
    expect(dest.seen.at(-1)!.url).toBe('http://b.example/v1/internal/ship/0/0')
    // The link held the health checks; closing it stops them.
    await link.close()
    const probes = dest.probes()
    await new Promise((r) => setTimeout(r, 100))
    expect(dest.probes()).toBe(probes)
  })
})
