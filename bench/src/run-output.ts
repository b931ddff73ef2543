/**
 * Where a run's outputs go. A full run is the record: `bench/results/<id>.json` (committed) and
 * its section of `docs/benchmarks.md` with the PNG charts under `docs/benchmarks/`. A `--quick`
 * run is a smoke check (CI, an engineer after a change): its JSON and its report go under
 * `bench/results/tmp/` (gitignored), so it never overwrites the recorded full runs.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Backend } from './cluster-process.js'
import { type MachineFacts, describeMachine } from './machine.js'
import { chartPng } from './report/chart.js'
import { replaceSection } from './report/markdown.js'
import type { Suite } from './suite.js'

/** What `<id>.json` holds: one run of one suite. */
export interface RunRecord {
  suite: string
  quick: boolean
  backend: Backend
  command: string
  started: string
  seconds: number
  machine: MachineFacts
  results: unknown
  /** The other checkout measured beside this one (`--baseline`). */
  baseline?: string
}

/**
 * A run's name: the suite's, with the backend unless it is the default (`nukv-redis`), and
 * `-vs-baseline` for a run beside a baseline (so it never replaces the plain run's section).
 */
export function runId(suite: string, backend: Backend, baseline = false): string {
  const id = backend === 'memory' ? suite : `${suite}-${backend}`
  return baseline ? `${id}-vs-baseline` : id
}

/** The directories of a run's outputs under the repository `root`. */
export function outputDirs(root: string, quick: boolean): { results: string; report: string } {
  return quick
    ? { results: join(root, 'bench/results/tmp'), report: join(root, 'bench/results/tmp') }
    : { results: join(root, 'bench/results'), report: join(root, 'docs') }
}

/** The JSON file of a run of `suite` (full or quick). */
export function resultsPath(root: string, id: string, quick: boolean): string {
  return join(outputDirs(root, quick).results, `${id}.json`)
}

/** Saves a run's record where its kind belongs; returns the path. */
export async function saveRecord(root: string, record: RunRecord): Promise<string> {
  const id = runId(record.suite, record.backend, record.baseline !== undefined)
  const path = resultsPath(root, id, record.quick)
  await mkdir(outputDirs(root, record.quick).results, { recursive: true })
  await writeFile(path, JSON.stringify(record, null, 2) + '\n')
  return path
}

/** Reads a saved run (a full one unless `quick`). */
export async function loadRecord(
  root: string,
  suite: string,
  backend: Backend,
  quick: boolean,
  baseline = false,
): Promise<RunRecord> {
  return JSON.parse(
    await readFile(resultsPath(root, runId(suite, backend, baseline), quick), 'utf8'),
  ) as RunRecord
}

/** Writes a run's section (tables, PNG charts) into its report; returns the report's path. */
export async function writeReport(root: string, suite: Suite, record: RunRecord): Promise<string> {
  const id = runId(suite.name, record.backend, record.baseline !== undefined)
  const dir = outputDirs(root, record.quick).report
  const output = suite.report(record.results, record.quick)
  const images = join(dir, 'benchmarks')
  await mkdir(images, { recursive: true })
  const pictures: string[] = []
  for (const chart of output.charts) {
    const file = `${id}-${chart.file}.png`
    await writeFile(join(images, file), await chartPng(chart.spec))
    pictures.push(`![${chart.title}](benchmarks/${file})`)
  }
  const facets = [
    ...(record.backend === 'memory' ? [] : [`${record.backend} backend`]),
    ...(record.baseline === undefined ? [] : ['before and after']),
  ]
  const title = facets.length === 0 ? suite.title : `${suite.title} (${facets.join(', ')})`
  const when = `${record.started.slice(0, 16).replace('T', ' ')} UTC, ${record.seconds} s`
  const body = [
    `## ${title}`,
    '',
    `Command: \`${record.command}\` (${when}).`,
    `Machine: ${describeMachine(record.machine)}`,
    '',
    output.markdown,
    '',
    ...pictures.flatMap((p) => [p, '']),
  ].join('\n')
  const path = join(dir, 'benchmarks.md')
  let document: string
  try {
    document = await readFile(path, 'utf8')
  } catch {
    document =
      '# Benchmarks\n\nGenerated sections are replaced by `npm run bench`; text outside them is kept.\n'
  }
  await writeFile(path, replaceSection(document, id, body))
  return path
}
