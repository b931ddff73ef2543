/**
 * The health of a region's gateways as the shipping links see it, with an injected fetch: which
 * gateway requests go to (the same one while it is up, another after a failure or a failed health
 * check), what counts as down (no answer in time, not 200), the listeners told, and health checks
 * that run only while a link holds them.
 */
import { describe, expect, it, vi } from 'vitest'
import { GatewayHealth } from '../../src/replication/gateway-health.js'

const A = 'http://a.example'
const B = 'http://b.example'
const C = 'http://c.example'

/** Gateways whose `/healthz` answers as `state` says now; counts the checks of each. */
function gateways(state: Record<string, 'up' | 'draining' | 'hang' | 'refuse'>) {
  const checks = new Map<string, number>()
  const fetch = (async (url: string, init: RequestInit) => {
    const base = url.replace(/\/healthz$/, '')
    expect(url).toBe(`${base}/healthz`)
    checks.set(base, (checks.get(base) ?? 0) + 1)
    switch (state[base]) {
      case 'draining':
        return Response.json({ code: 'SHUTTING_DOWN' }, { status: 503 })
      case 'hang':
        return new Promise((_, reject) =>
          init.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
        )
      case 'refuse':
        throw new TypeError('fetch failed')
      default:
        return Response.json({ status: 'ok' })
    }
  }) as unknown as typeof globalThis.fetch
  return { fetch, checks: (url: string) => checks.get(url) ?? 0 }
}

describe('GatewayHealth', () => {
  it('keeps to one gateway while it works, and moves on after a failure', () => {
    const health = new GatewayHealth({ gateways: [A, `${B}/`, C], fetch: gateways({}).fetch })
    expect(health.gateways).toEqual([A, B, C])
    expect([health.pick(), health.pick()]).toEqual([A, A])
    health.failed(A)
    expect([health.pick(), health.pick()]).toEqual([B, B])
    // A failure of a gateway no longer in use changes nothing.
    health.failed(A)
    expect(health.pick()).toBe(B)
    health.failed(B)
    health.failed(C)
    expect(health.pick()).toBe(A)
  })

  it('calls a gateway down when its check is not answered in time or not 200, and up again', async () => {
    const state: Record<string, 'up' | 'draining' | 'hang' | 'refuse'> = {}
    const { fetch } = gateways(state)
    const changes: string[] = []
    const health = new GatewayHealth({
      gateways: [A, B, C],
      intervalMs: 10,
      timeoutMs: 50,
      fetch,
      onChange: (url, up) => changes.push(`${url} ${up ? 'up' : 'down'}`),
    })
    const downs: string[] = []
    health.onDown(A, () => downs.push(A))
    const unsubscribe = health.onDown(B, () => downs.push(B))
    unsubscribe()
    health.retain()
    try {
      state[A] = 'hang'
      state[B] = 'draining'
      state[C] = 'refuse'
      await vi.waitFor(() =>
        expect([A, B, C].map((g) => health.isUp(g))).toEqual([false, false, false]),
      )
      expect(downs).toEqual([A])
      // None is up: requests still go somewhere (the checks may be what fails), in turn.
      expect(health.pick()).toBe(A)
      state[C] = 'up'
      await vi.waitFor(() => expect(health.isUp(C)).toBe(true))
      expect(health.pick()).toBe(C)
      state[A] = 'up'
      await vi.waitFor(() => expect(health.isUp(A)).toBe(true))
      // Back up, but requests stay where they go while that works.
      expect(health.pick()).toBe(C)
      expect(changes).toEqual(
        expect.arrayContaining([`${A} down`, `${B} down`, `${C} down`, `${C} up`, `${A} up`]),
      )
      expect(changes.filter((c) => c === `${A} down`)).toHaveLength(1)
    } finally {
      health.release()
    }
  })

  it('checks only while some link holds it', async () => {
    const { fetch, checks } = gateways({})
    const health = new GatewayHealth({ gateways: [A, B], intervalMs: 10, timeoutMs: 50, fetch })
    await new Promise((r) => setTimeout(r, 50))
    expect(checks(A)).toBe(0)
    health.retain()
    health.retain()
    await vi.waitFor(() => expect(checks(A)).toBeGreaterThanOrEqual(2))
    health.release()
    const after = checks(B)
    await vi.waitFor(() => expect(checks(B)).toBeGreaterThan(after))
    health.release()
    const stopped = checks(A) + checks(B)
    await new Promise((r) => setTimeout(r, 60))
    expect(checks(A) + checks(B)).toBe(stopped)
  })
})
