/**
 * Remote visibility for the `eunomia` suite: how long a write made in region 0 takes to become
 * visible in region 1, against the one-way WAN delay injected between the regions (the floor).
 * Writes go one at a time to region 0's gateway, to keys spread over every partition; a watcher
 * on region 1's gateway (`GET /v1/watch`) reads the change once region 1 applied it, which in
 * causal mode is once the receiver had both its data and its label and its causal past (Alg. 5).
 * Each is timed from sending the write to reading its event.
 */
import { openEventStream } from '../offline/event-stream.js'

/** Options of {@link measureVisibility}. */
export interface VisibilityOptions {
  /** Region 0's and region 1's gateways. */
  urls: readonly string[]
  /** Writes timed. */
  samples: number
  /** The one-way WAN delay of the cluster, ms (bounds how long an event may take). */
  wanDelayMs: number
  /** Key prefix, unique per measurement. */
  prefix: string
  /** Upper bound on the whole measurement, ms. @default 120,000 */
  budgetMs?: number
}

/** What one measurement saw, in ms. */
export interface Visibility {
  /** Every write's visibility latency, sorted. */
  latenciesMs: number[]
  p50Ms: number
  p99Ms: number
  /** The median round trip of the write itself to region 0. */
  writeMedianMs: number
}

/** The `q` quantile of sorted values (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/** Times `samples` writes from region 0 until region 1's watcher sees them. */
export async function measureVisibility(options: VisibilityOptions): Promise<Visibility> {
  const [a, b] = options.urls as [string, string]
  const prefix = `${options.prefix}:`
  const stream = await openEventStream(
    `${b}/v1/watch?prefix=${encodeURIComponent(prefix)}&heartbeatMs=60000`,
  )
  try {
    await stream.next(10_000) // the first heartbeat: the feed is live
    const latencies: number[] = []
    const writes: number[] = []
    const deadline = performance.now() + (options.budgetMs ?? 120_000)
    for (let i = 0; i < options.samples && performance.now() < deadline; i++) {
      const key = `${prefix}${i}`
      const started = performance.now()
      const res = await fetch(`${a}/v1/kv/${encodeURIComponent(key)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: i }),
      })
      writes.push(performance.now() - started)
      if (!res.ok) throw new Error(`write failed: ${res.status} ${await res.text()}`)
      await res.arrayBuffer()
      for (;;) {
        const event = await stream.next(10_000 + options.wanDelayMs * 4)
        if (event.event === 'change' && (JSON.parse(event.data) as { key: string }).key === key)
          break
      }
      latencies.push(performance.now() - started)
      // A gap, so the next write does not find every partition just woken by this one.
      await new Promise((resolve) => setTimeout(resolve, 5 + (i % 7) * 3))
    }
    latencies.sort((x, y) => x - y)
    writes.sort((x, y) => x - y)
    return {
      latenciesMs: latencies,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      writeMedianMs: quantile(writes, 0.5),
    }
  } finally {
    stream.close()
  }
}
