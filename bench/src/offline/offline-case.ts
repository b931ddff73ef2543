/**
 * One measurement of the `offline` suite. The suite runs a list of cases (`suites/offline.ts`),
 * each measured and reported on its own, so a case is added by writing one module and putting it
 * in that list (the SDK's replay and outbox measurements go there too).
 */
import type { SuiteContext } from '../suite.js'

/** A case of the `offline` suite. */
export interface OfflineCase<R = unknown> {
  /** Short name: the key of its results in `bench/results/offline.json`. */
  name: string
  /** Heading of its part of the report. */
  title: string
  /** Rough running time in seconds. */
  estimateS(quick: boolean): number
  measure(ctx: SuiteContext): Promise<R>
  /** Its part of the report (Markdown, without the heading). */
  report(results: R, quick: boolean): string
}
