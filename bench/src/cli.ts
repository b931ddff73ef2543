/**
 * `npm run bench -- <suite...> [--quick] [--backend memory|disk|redis]`: runs benchmark suites
 * and writes `bench/results/<suite>.json`. A full run also writes its section (tables, PNG
 * charts) into `docs/benchmarks.md`; a `--quick` run renders them under `bench/results/tmp/`
 * instead, so smoke checks never overwrite the recorded numbers.
 *
 * `npm run bench -- bundle` only builds the k6 bundle (`bench/dist/causeway-k6.js`);
 * `npm run bench -- report [suite...]` writes the report again from the saved results.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { type Backend } from './cluster-process.js'
import { buildK6Bundle } from './k6-bundle.js'
import { findK6 } from './k6-runner.js'
import { type MachineFacts, describeMachine, machineFacts } from './machine.js'
import { chartPng } from './report/chart.js'
import { replaceSection } from './report/markdown.js'
import type { Suite } from './suite.js'
import { bigsetsSuite } from './suites/bigsets.js'
import { bookkeepingSuite } from './suites/bookkeeping.js'
import { dvvSuite } from './suites/dvv.js'
import { gatewaySuite } from './suites/gateway.js'
import { nukvSuite } from './suites/nukv.js'
import { namiSuite } from './suites/nami.js'
import { offlineSuite } from './suites/offline.js'
import { profileSuite } from './suites/profile.js'

const SUITES: Suite[] = [
  bookkeepingSuite,
  gatewaySuite,
  nukvSuite,
  profileSuite,
  dvvSuite,
  bigsetsSuite,
  offlineSuite,
  namiSuite,
] as Suite[]
const BACKENDS: Backend[] = ['memory', 'disk', 'redis']
/** What `--quick` over every suite may take, in seconds (builds included, it must stay under 3 min). */
const QUICK_BUDGET_S = 150

const USAGE = `Usage: npm run bench -- [suite...] [--quick] [--backend memory|disk|redis]

Suites (all of them when none is named):
${SUITES.map((s) => `  ${s.name.padEnd(12)} ${s.title}`).join('\n')}
  bundle       only build the k6 bundle (bench/dist/causeway-k6.js)
  report [suite...]  write the report again from bench/results/*.json (measures nothing)

  --quick      short runs for smoke checks (every suite together in under 3 minutes)
  --backend B  storage of the clusters: memory (default), disk, or redis (when available)
`

const repo = (p: string): string => fileURLToPath(new URL(`../../${p}`, import.meta.url))

function commandLine(names: string[], quick: boolean, backend: Backend): string {
  const args = [
    ...names,
    ...(quick ? ['--quick'] : []),
    ...(backend === 'memory' ? [] : ['--backend', backend]),
  ]
  return `npm run bench -- ${args.join(' ')}`
}

/** Where a run's results go: the suite's name, with the backend unless it is the default. */
function runId(suite: Suite, backend: Backend): string {
  return backend === 'memory' ? suite.name : `${suite.name}-${backend}`
}

/** What `bench/results/<id>.json` holds: one run of one suite. */
interface RunRecord {
  suite: string
  quick: boolean
  backend: Backend
  command: string
  started: string
  seconds: number
  machine: MachineFacts
  results: unknown
}

/** Writes a run's section (tables, PNG charts) into the report; returns the report's path. */
async function writeReport(suite: Suite, record: RunRecord): Promise<string> {
  const id = runId(suite, record.backend)
  const docsDir = record.quick ? repo('bench/results/tmp') : repo('docs')
  const output = suite.report(record.results, record.quick)
  const images = `${docsDir}/benchmarks`
  await mkdir(images, { recursive: true })
  const pictures: string[] = []
  for (const chart of output.charts) {
    const file = `${id}-${chart.file}.png`
    await writeFile(`${images}/${file}`, await chartPng(chart.spec))
    pictures.push(`![${chart.title}](benchmarks/${file})`)
  }
  const title =
    record.backend === 'memory' ? suite.title : `${suite.title} (${record.backend} backend)`
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
  const path = `${docsDir}/benchmarks.md`
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

function resultsPath(suite: Suite, backend: Backend): string {
  return repo(`bench/results/${runId(suite, backend)}.json`)
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      backend: { type: 'string', default: 'memory' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  const backend = values.backend as Backend
  if (!BACKENDS.includes(backend)) {
    process.stderr.write(`unknown backend ${values.backend}\n\n${USAGE}`)
    return 2
  }
  if (positionals[0] === 'bundle') {
    const { outfile, bytes } = await buildK6Bundle()
    console.log(`k6 bundle: ${outfile} (${(bytes / 1024).toFixed(1)} kB)`)
    return 0
  }
  const rerender = positionals[0] === 'report'
  const requested = rerender ? positionals.slice(1) : positionals
  const names = requested.length > 0 ? requested : SUITES.map((s) => s.name)
  const suites = names.map((name) => SUITES.find((s) => s.name === name))
  const unknown = names.filter((_, i) => !suites[i])
  if (unknown.length > 0) {
    process.stderr.write(`unknown suite ${unknown.join(', ')}\n\n${USAGE}`)
    return 2
  }
  if (rerender) {
    // Write the report again from saved results, measuring nothing.
    for (const suite of suites as Suite[]) {
      const record = JSON.parse(await readFile(resultsPath(suite, backend), 'utf8')) as RunRecord
      console.log(`${suite.name}: report in ${await writeReport(suite, record)}`)
    }
    return 0
  }
  const quick = values.quick
  // Fail before starting anything when k6 is missing (every suite but bookkeeping needs it).
  const needsK6 = suites.some((s) => !['bookkeeping', 'dvv', 'offline'].includes(s!.name))
  const k6 = needsK6 ? findK6() : undefined
  if (needsK6) await buildK6Bundle()
  const estimate = suites.reduce((sum, s) => sum + s!.estimateS(quick), 0)
  console.log(
    `bench: ${names.join(', ')}${quick ? ' (quick)' : ''}, about ${Math.ceil(estimate / 60)} min`,
  )

  const runStarted = Date.now()
  for (const suite of suites as Suite[]) {
    const machine = machineFacts(k6)
    const started = new Date()
    console.log(`\n== ${suite.name}: ${suite.title}`)
    const results = await suite.measure({
      quick,
      backend,
      log: (line) => console.log(`  ${line}`),
    })
    machine.loadEnd = loadavg()[0]
    const record: RunRecord = {
      suite: suite.name,
      quick,
      backend,
      command: commandLine([suite.name], quick, backend),
      started: started.toISOString(),
      seconds: Math.round((Date.now() - started.getTime()) / 1000),
      machine,
      results,
    }
    const path = resultsPath(suite, backend)
    await mkdir(repo('bench/results'), { recursive: true })
    await writeFile(path, JSON.stringify(record, null, 2) + '\n')
    const docs = await writeReport(suite, record)
    console.log(`${suite.name}: ${record.seconds} s; results in ${path}; report in ${docs}`)
  }
  const totalS = Math.round((Date.now() - runStarted) / 1000)
  console.log(`\nbench: ${suites.length} suite${suites.length === 1 ? '' : 's'} in ${totalS} s`)
  // The promise of --quick (issue 4): every suite together in under 3 minutes.
  if (quick && suites.length === SUITES.length && totalS > QUICK_BUDGET_S)
    console.warn(`bench: the quick run took ${totalS} s, over its ${QUICK_BUDGET_S} s budget`)
  return 0
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 1
  },
)
