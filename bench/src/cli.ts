/**
 * `npm run bench -- <suite...> [--quick] [--backend memory|disk|redis]`: runs benchmark suites.
 * A full run writes `bench/results/<suite>.json` and its section (tables, PNG charts) of
 * `docs/benchmarks.md`; a `--quick` run writes both under `bench/results/tmp/` instead
 * (`run-output.ts`), so smoke checks never overwrite the recorded numbers.
 *
 * `npm run bench -- bundle` only builds the k6 bundle (`bench/dist/causeway-k6.js`);
 * `npm run bench -- report [suite...]` writes the report again from the saved full runs
 * (`--quick`: from the saved quick runs, into `bench/results/tmp/benchmarks.md`).
 */
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { type Backend } from './cluster-process.js'
import { buildK6Bundle } from './k6-bundle.js'
import { findK6 } from './k6-runner.js'
import { machineFacts } from './machine.js'
import { type RunRecord, loadRecord, saveRecord, writeReport } from './run-output.js'
import type { Suite } from './suite.js'
import { bigsetsSuite } from './suites/bigsets.js'
import { bookkeepingSuite } from './suites/bookkeeping.js'
import { dvvSuite } from './suites/dvv.js'
import { eunomiaSuite } from './suites/eunomia.js'
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
  eunomiaSuite,
] as Suite[]
const BACKENDS: Backend[] = ['memory', 'disk', 'redis']
/** What `--quick` over every suite may take, in seconds (builds included, it must stay under 3 min). */
const QUICK_BUDGET_S = 150

/** The suites that can measure a second checkout beside this one (`--baseline`). */
const WITH_BASELINE = ['gateway']

const USAGE = `Usage: npm run bench -- [suite...] [--quick] [--backend memory|disk|redis] [--baseline DIR]

Suites (all of them when none is named):
${SUITES.map((s) => `  ${s.name.padEnd(12)} ${s.title}`).join('\n')}
  bundle       only build the k6 bundle (bench/dist/causeway-k6.js)
  report [suite...]  write docs/benchmarks.md again from bench/results/*.json (measures
               nothing; with --quick, bench/results/tmp/benchmarks.md from the quick runs)

  --quick      short runs for smoke checks (every suite together in under 3 minutes); their
               results and report go to bench/results/tmp/ (gitignored), never over the
               recorded full runs
  --backend B  storage of the clusters: memory (default), disk, or redis (when available)
  --baseline DIR  also run the clusters from another checkout's build (npm ci && npm run build
               there first), side by side in the same run: before and after (${WITH_BASELINE.join(', ')})
`

/** The repository's root. */
const root = fileURLToPath(new URL('../../', import.meta.url))

function commandLine(
  names: string[],
  quick: boolean,
  backend: Backend,
  baseline: string | undefined,
): string {
  const args = [
    ...names,
    ...(quick ? ['--quick'] : []),
    ...(backend === 'memory' ? [] : ['--backend', backend]),
    ...(baseline === undefined ? [] : ['--baseline', baseline]),
  ]
  return `npm run bench -- ${args.join(' ')}`
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      backend: { type: 'string', default: 'memory' },
      baseline: { type: 'string' },
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
  const baseline = values.baseline === undefined ? undefined : resolve(values.baseline)
  const unable = names.filter((n) => !WITH_BASELINE.includes(n))
  if (baseline !== undefined && unable.length > 0) {
    process.stderr.write(`--baseline: ${unable.join(', ')} cannot measure a baseline\n\n${USAGE}`)
    return 2
  }
  if (rerender) {
    // Write the report again from saved results, measuring nothing.
    for (const suite of suites as Suite[]) {
      const record = await loadRecord(
        root,
        suite.name,
        backend,
        values.quick,
        baseline !== undefined,
      )
      console.log(`${suite.name}: report in ${await writeReport(root, suite, record)}`)
    }
    return 0
  }
  const quick = values.quick
  // Fail before starting anything when k6 is missing (every suite but bookkeeping needs it).
  const needsK6 = suites.some(
    (s) => !['bookkeeping', 'dvv', 'offline', 'eunomia'].includes(s!.name),
  )
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
      baseline,
      log: (line) => console.log(`  ${line}`),
    })
    machine.loadEnd = loadavg()[0]
    const record: RunRecord = {
      suite: suite.name,
      quick,
      backend,
      command: commandLine([suite.name], quick, backend, baseline),
      started: started.toISOString(),
      seconds: Math.round((Date.now() - started.getTime()) / 1000),
      machine,
      results,
      ...(baseline === undefined ? {} : { baseline }),
    }
    const path = await saveRecord(root, record)
    const docs = await writeReport(root, suite, record)
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
