/**
 * Offline case `change-feed`: how long a write made in region A takes to reach a watcher of
 * region B (`GET /v1/watch` on B's gateway), against the one-way WAN delay injected between the
 * regions, which is the floor: the change cannot arrive sooner. Writes go one at a time, each
 * timed from the moment the client sends it until the watcher's event for it is read.
 */
import { type Backend, startCluster } from '../cluster-process.js'
import { fixed, table, times } from '../report/markdown.js'
import type { OfflineCase } from './offline-case.js'
import { openEventStream } from './event-stream.js'

/** The latency at one injected delay. */
export interface ChangeFeedRow {
  /** The one-way WAN delay injected between the regions, ms: the floor. */
  wanDelayMs: number
  samples: number
  medianMs: number
  p90Ms: number
  p99Ms: number
  minMs: number
  /** The median write's own round trip to region A's gateway, ms. */
  writeMedianMs: number
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

async function measureAt(
  backend: Backend,
  wanDelayMs: number,
  samples: number,
  log: (line: string) => void,
): Promise<ChangeFeedRow> {
  const cluster = await startCluster({
    backend,
    regions: 2,
    partitions: 4,
    replicas: 2,
    wanDelayMs,
  })
  try {
    const [a, b] = cluster.urls as [string, string]
    const stream = await openEventStream(`${b}/v1/watch?prefix=lat%3A&heartbeatMs=60000`)
    try {
      await stream.next(10_000) // the first heartbeat: the feed is live
      const latencies: number[] = []
      const writes: number[] = []
      const deadline = Date.now() + 120_000
      for (let i = 0; i < samples && Date.now() < deadline; i++) {
        const key = `lat:${i}`
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
          const event = await stream.next(10_000 + wanDelayMs * 4)
          if (event.event === 'change' && (JSON.parse(event.data) as { key: string }).key === key)
            break
        }
        latencies.push(performance.now() - started)
      }
      latencies.sort((x, y) => x - y)
      writes.sort((x, y) => x - y)
      const row: ChangeFeedRow = {
        wanDelayMs,
        samples: latencies.length,
        medianMs: quantile(latencies, 0.5),
        p90Ms: quantile(latencies, 0.9),
        p99Ms: quantile(latencies, 0.99),
        minMs: latencies[0] ?? Number.NaN,
        writeMedianMs: quantile(writes, 0.5),
      }
      log(
        `change feed, WAN ${wanDelayMs} ms: median ${row.medianMs.toFixed(1)} ms, p99 ${row.p99Ms.toFixed(1)} ms over ${row.samples} writes`,
      )
      return row
    } finally {
      stream.close()
    }
  } finally {
    await cluster.stop()
  }
}

/** The change-feed latency case. */
export const changeFeedLatency: OfflineCase<ChangeFeedRow[]> = {
  name: 'change-feed',
  title: 'Change feed: a write in region A reaches a watcher in region B',
  estimateS: (quick) => (quick ? 6 : 45),
  async measure(ctx) {
    const delays = ctx.quick ? [50] : [20, 50, 100]
    const samples = ctx.quick ? 20 : 200
    const rows: ChangeFeedRow[] = []
    for (const delay of delays) rows.push(await measureAt(ctx.backend, delay, samples, ctx.log))
    return rows
  },
  report(rows) {
    return [
      'Each write goes to region A’s gateway (`PUT /v1/kv/lat:<n>`), one at a time; a watcher on ' +
        'region B’s gateway (`GET /v1/watch?prefix=lat:`) reads the change. The time is from sending ' +
        'the write to reading its event; the floor is the one-way WAN delay injected between the ' +
        'regions (`--wan-delay`), which shipping cannot beat. Overhead = median − floor.',
      '',
      table(
        [
          'WAN delay (floor)',
          'writes',
          'median',
          'p90',
          'p99',
          'min',
          'overhead (median)',
          'median / floor',
          'write round trip (median)',
        ],
        rows.map((r) => [
          `${r.wanDelayMs} ms`,
          String(r.samples),
          `${fixed(r.medianMs, 1)} ms`,
          `${fixed(r.p90Ms, 1)} ms`,
          `${fixed(r.p99Ms, 1)} ms`,
          `${fixed(r.minMs, 1)} ms`,
          `${fixed(r.medianMs - r.wanDelayMs, 1)} ms`,
          times(r.medianMs / r.wanDelayMs),
          `${fixed(r.writeMedianMs, 1)} ms`,
        ]),
      ),
    ].join('\n')
  },
}
