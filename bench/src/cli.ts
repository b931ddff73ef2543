/**
 * `npm run bench -- <suite...> [--quick] [--backend memory|disk|redis]`: runs benchmark suites
 * and writes `bench/results/<suite>.json`. A full run also writes its section (tables, PNG
 * charts) into `docs/benchmarks.md`; a `--quick` run renders them under `bench/results/tmp/`
 * instead, so smoke checks never overwrite the recorded numbers.
 *
 * `npm run bench -- bundle` only builds the k6 bundle (`bench/dist/causeway-k6.js`).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { type Backend } from './cluster-process.js'
import { buildK6Bundle } from './k6-bundle.js'
import { findK6 } from './k6-runner.js'
import { describeMachine, machineFacts } from './machine.js'
import { chartPng } from './report/chart.js'
import { replaceSection } from './report/markdown.js'
import type { Suite, SuiteOutput } from './suite.js'
import { bookkeepingSuite } from './suites/bookkeeping.js'
import { gatewaySuite } from './suites/gateway.js'
import { nukvSuite } from './suites/nukv.js'
import { profileSuite } from './suites/profile.js'

const SUITES: Suite[] = [bookkeepingSuite, gatewaySuite, nukvSuite, profileSuite] as Suite[]
const BACKENDS: Backend[] = ['memory', 'disk', 'redis']

const USAGE = `Usage: npm run bench -- [suite...] [--quick] [--backend memory|disk|redis]

Suites (all of them when none is named):
${SUITES.map((s) => `  ${s.name.padEnd(12)} ${s.title}`).join('\n')}
  bundle       only build the k6 bundle (bench/dist/causeway-k6.js)

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

async function writeReport(
  suite: Suite,
  id: string,
  title: string,
  output: SuiteOutput<unknown>,
  docsDir: string,
  header: string,
): Promise<string> {
  const images = `${docsDir}/benchmarks`
  await mkdir(images, { recursive: true })
  const pictures: string[] = []
  for (const chart of output.charts) {
    const file = `${id}-${chart.file}.png`
    await writeFile(`${images}/${file}`, await chartPng(chart.spec))
    pictures.push(`![${chart.title}](benchmarks/${file})`)
  }
  const body = [
    `## ${title}`,
    '',
    header,
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
  if (positionals.includes('bundle')) {
    const { outfile, bytes } = await buildK6Bundle()
    console.log(`k6 bundle: ${outfile} (${(bytes / 1024).toFixed(1)} kB)`)
    return 0
  }
  const names = positionals.length > 0 ? positionals : SUITES.map((s) => s.name)
  const suites = names.map((name) => SUITES.find((s) => s.name === name))
  const unknown = names.filter((_, i) => !suites[i])
  if (unknown.length > 0) {
    process.stderr.write(`unknown suite ${unknown.join(', ')}\n\n${USAGE}`)
    return 2
  }
  const quick = values.quick
  // Fail before starting anything when k6 is missing (every suite but bookkeeping needs it).
  const needsK6 = suites.some((s) => s!.name !== 'bookkeeping')
  const k6 = needsK6 ? findK6() : undefined
  if (needsK6) await buildK6Bundle()
  const estimate = suites.reduce((sum, s) => sum + s!.estimateS(quick), 0)
  console.log(
    `bench: ${names.join(', ')}${quick ? ' (quick)' : ''}, about ${Math.ceil(estimate / 60)} min`,
  )

  for (const suite of suites as Suite[]) {
    const facts = machineFacts(k6)
    const started = new Date()
    console.log(`\n== ${suite.name}: ${suite.title}`)
    const output = await suite.run({
      quick,
      backend,
      log: (line) => console.log(`  ${line}`),
    })
    facts.loadEnd = (await import('node:os')).loadavg()[0]
    const seconds = (Date.now() - started.getTime()) / 1000
    const command = commandLine([suite.name], quick, backend)
    const record = {
      suite: suite.name,
      quick,
      backend,
      command,
      started: started.toISOString(),
      seconds: Math.round(seconds),
      machine: facts,
      results: output.results,
    }
    const id = runId(suite, backend)
    const resultsPath = repo(`bench/results/${id}.json`)
    await mkdir(repo('bench/results'), { recursive: true })
    await writeFile(resultsPath, JSON.stringify(record, null, 2) + '\n')
    const header = [
      `Command: \`${command}\` (${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${Math.round(seconds)} s).`,
      `Machine: ${describeMachine(facts)}`,
    ].join('\n')
    const title = backend === 'memory' ? suite.title : `${suite.title} (${backend} backend)`
    const docs = await writeReport(
      suite,
      id,
      title,
      output,
      quick ? repo('bench/results/tmp') : repo('docs'),
      header,
    )
    console.log(
      `${suite.name}: ${Math.round(seconds)} s; results in ${resultsPath}; report in ${docs}`,
    )
  }
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
