/**
 * `npm run bench -- <suite> [--quick]`: runs one benchmark suite and writes its results to
 * `bench/results/<suite>.json`. Every suite measures ratios side by side in one run.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { runBookkeeping } from './bookkeeping.js'

const suites: Record<string, (quick: boolean) => Promise<unknown>> = {
  bookkeeping: runBookkeeping,
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { quick: { type: 'boolean', default: false } },
})
const names = positionals.length > 0 ? positionals : Object.keys(suites)
for (const name of names) {
  const suite = suites[name]
  if (!suite) {
    console.error(`unknown suite ${name}; known: ${Object.keys(suites).join(', ')}`)
    process.exit(2)
  }
  const started = new Date().toISOString()
  const results = await suite(values.quick)
  const out = new URL(`../results/${name}.json`, import.meta.url)
  await mkdir(new URL('.', out), { recursive: true })
  await writeFile(out, JSON.stringify({ suite: name, quick: values.quick, started, node: process.version, results }, null, 2) + '\n')
  console.log(`${name}:`)
  console.table(results)
}
