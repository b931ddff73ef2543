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

/** What a suite returns. */
export interface SuiteOutput<R> {
  results: R
  /** The suite's section of docs/benchmarks.md (tables, notes; charts are appended). */
  markdown: string
  charts: Chart[]
}

/** A benchmark suite. */
export interface Suite<R = unknown> {
  name: string
  title: string
  /** Rough running time in seconds, for the plan printed before a run. */
  estimateS(quick: boolean): number
  run(ctx: SuiteContext): Promise<SuiteOutput<R>>
}
