/**
 * Issue 24.6: a gateway down for a long while, the browser online all along (no `online` event
 * comes back): the retry with backoff is what finds the gateway again. While writes are queued it
 * probes at least every 4 s, so the queue drains soon after the gateway returns; with nothing
 * queued it backs off to 30 s. Fake timers: the verdict is on the delays the client picks.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { Connectivity } from '../src/offline/connectivity.js'
import { EventHub } from '../src/offline/events.js'

beforeEach(() => {
  vi.useFakeTimers()
})

afterEach(() => {
  vi.useRealTimers()
})

/** The gaps between probes over `spanMs` of a gateway that never answers. */
async function probeGaps(queued: boolean, spanMs: number): Promise<number[]> {
  const c = new Connectivity(new EventHub(), () => {})
  const at: number[] = []
  c.setProbe(async () => {
    at.push(Date.now())
    return false
  })
  c.setQueued(() => queued)
  c.markOffline(undefined)
  await vi.advanceTimersByTimeAsync(spanMs)
  c.close()
  return at.slice(1).map((t, i) => t - at[i]!)
}

it('while writes are queued, probes never wait more than 4 s once the backoff has grown', async () => {
  const gaps = await probeGaps(true, 120_000)
  expect(gaps.length).toBeGreaterThan(20)
  expect(Math.max(...gaps)).toBeLessThanOrEqual(4000)
})

it('with nothing queued the backoff grows to 30 s', async () => {
  const gaps = await probeGaps(false, 300_000)
  expect(Math.max(...gaps)).toBeGreaterThan(8000)
  expect(Math.max(...gaps)).toBeLessThanOrEqual(30_000)
})
