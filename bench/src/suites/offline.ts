/**
 * Suite `offline`: what offline-first costs and how fast changes travel (issue 14). A list of
 * cases (`offline/offline-case.ts`), each measured and reported on its own:
 *
 * - `change-feed`: a write in region A to a watcher in region B, against the injected one-way WAN
 *   delay (the floor).
 * - `replay`: 1,000 writes queued offline and replayed by the SDK vs the same writes online.
 * - `outbox-cost`: online writes with `persist` (classic-level) vs without.
 *
 * Add a case by appending it to {@link OFFLINE_CASES}.
 */
import { changeFeedLatency } from '../offline/change-feed-latency.js'
import { outboxCost, replayThroughput } from '../offline/sdk-writes.js'
import type { OfflineCase } from '../offline/offline-case.js'
import type { Suite } from '../suite.js'

/** The cases of the suite, measured in this order. */
export const OFFLINE_CASES: OfflineCase[] = [
  changeFeedLatency as OfflineCase,
  replayThroughput as OfflineCase,
  outboxCost as OfflineCase,
]

/** What the suite records: each case's results by its name. */
export type OfflineResults = Record<string, unknown>

/** The `offline` suite. */
export const offlineSuite: Suite<OfflineResults> = {
  name: 'offline',
  title: 'Offline-first: change feed latency, replay throughput, outbox cost',
  estimateS: (quick) => OFFLINE_CASES.reduce((sum, c) => sum + c.estimateS(quick), 0),
  async measure(ctx) {
    const results: OfflineResults = {}
    for (const c of OFFLINE_CASES) {
      ctx.log(`case ${c.name}: ${c.title}`)
      results[c.name] = await c.measure(ctx)
    }
    return results
  },
  report(results, quick) {
    const parts = OFFLINE_CASES.filter((c) => results[c.name] !== undefined).map(
      (c) => `### ${c.title}\n\n${c.report(results[c.name], quick)}`,
    )
    return { markdown: parts.join('\n\n'), charts: [] }
  },
}
