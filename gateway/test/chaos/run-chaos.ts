/**
 * `npm run chaos`: the chaos suite (see `scenarios.ts`), one scenario after another, each on a
 * fresh cluster of real processes.
 *
 *   npm run chaos                         every scenario, full length; writes docs/reliability.md
 *                                         and docs/reliability.json
 *   npm run chaos -- --short              the short mode CI runs (scenarios that pass today)
 *   npm run chaos -- --only wiped-leader  named scenarios (comma-separated), full length
 *   options: --short (shorter runs too), --seed N, --json FILE, --markdown FILE, --list
 *
 * Prints the table (markdown) on stdout, progress on stderr. Exits 1 when any scenario it ran
 * failed, known failures included: they are failures.
 */
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { format, resolveConfig } from 'prettier'
import {
  machine,
  markdownDetails,
  markdownTable,
  reliabilityPage,
  type ChaosReport,
} from './chaos-report.js'
import { runScenario, SHAPE, TIMINGS, type ScenarioResult } from './run-scenario.js'
import { SCENARIOS } from './scenarios.js'

const DOCS = fileURLToPath(new URL('../../../docs/', import.meta.url))

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      short: { type: 'boolean' },
      only: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'string' },
      markdown: { type: 'string' },
      list: { type: 'boolean' },
    },
  })
  if (values.list) {
    for (const s of SCENARIOS)
      process.stdout.write(
        `${s.name.padEnd(24)} ${s.short ? 'short' : '     '} ${s.fault}${s.knownFailure ? ` [fails today: ${s.knownFailure}]` : ''}\n`,
      )
    return 0
  }
  const mode = values.short ? 'short' : 'full'
  const only = values.only?.split(',').map((s) => s.trim())
  const unknown = only?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? []
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown scenario(s) ${unknown.join(', ')}; there are: ${SCENARIOS.map((s) => s.name).join(', ')}\n`,
    )
    return 2
  }
  const chosen = SCENARIOS.filter((s) =>
    only ? only.includes(s.name) : mode === 'full' || s.short,
  )
  const baseSeed =
    values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
  const command = `npm run chaos${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
  const log = (line: string) => process.stderr.write(`chaos: ${line}\n`)
  log(`${chosen.length} scenario(s), ${mode} mode, seed ${baseSeed}`)

  const results: ScenarioResult[] = []
  for (const [i, scenario] of chosen.entries()) {
    const result = await runScenario(scenario, TIMINGS[mode], baseSeed + i, log)
    results.push(result)
    log(
      `${scenario.name}: ${result.passed ? 'pass' : `FAIL: ${result.reasons.join('; ')}`} (${Math.round(result.elapsedMs / 1000)} s)`,
    )
  }

  const report: ChaosReport = {
    command,
    mode,
    date: new Date().toISOString().slice(0, 10),
    machine: machine(),
    timing: TIMINGS[mode],
    shape: SHAPE,
    scenarios: results,
  }
  process.stdout.write(`${markdownTable(results)}\n\n`)
  const failed = results.filter((r) => !r.passed)
  if (failed.length > 0) process.stdout.write(`${markdownDetails(failed)}\n`)
  const full = mode === 'full' && only === undefined
  const json = values.json ?? (full ? `${DOCS}reliability.json` : undefined)
  const markdown = values.markdown ?? (full ? `${DOCS}reliability.md` : undefined)
  // Formatted as the repository's prettier would (lint checks the JSON of docs/).
  if (json)
    await writeFile(
      json,
      await format(JSON.stringify(report), {
        ...(await resolveConfig(json)),
        parser: 'json',
      }),
    )
  if (markdown) await writeFile(markdown, reliabilityPage(report) + '\n')
  log(`${results.length - failed.length} of ${results.length} passed`)
  return failed.length > 0 ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    )
    process.exit(3)
  },
)
