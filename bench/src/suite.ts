/**
 * What a benchmark suite is: something the harness runs (`npm run bench -- <suite>`) that
 * returns machine-readable results plus the Markdown and charts of its section of
 * `docs/benchmarks.md`.
 */
import type { Backend } from './cluster-process.js'

/** What the harness gives a suite. */
export interface SuiteContext {
  /** Short run for smoke checks (every suite together well under 3 minutes). */
  quick: boolean
  /** Storage backend of the clusters the suite starts. */
  backend: Backend
  /**
   * Another checkout to measure beside this one (`--baseline <checkout>`, its build), for a
   * before/after comparison in one run; only suites that say so use it.
   */
  baseline?: string | undefined
  /** Progress output. */
  log(line: string): void
}

/** A chart for the docs, as a Vega-Lite spec (rendered to PNG by the harness). */
export interface Chart {
  /** File name stem: the PNG is `docs/benchmarks/<suite>-<file>.png`. */
  file: string
  /** Alt text and caption. */
  title: string
  spec: Record<string, unknown>
}

/** A suite's section of the report. */
export interface SuiteReport {
  /** Tables and notes for docs/benchmarks.md (the charts are appended). */
  markdown: string
  charts: Chart[]
}

/**
 * A benchmark suite. Measuring and reporting are apart, so a report can be written again from
 * the saved results (`npm run bench -- report <suite>`) without measuring again.
 */
export interface Suite<R = unknown> {
  name: string
  title: string
  /** Rough running time in seconds, for the plan printed before a run. */
  estimateS(quick: boolean): number
  measure(ctx: SuiteContext): Promise<R>
  report(results: R, quick: boolean): SuiteReport
}
