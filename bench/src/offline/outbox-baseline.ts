/**
 * `node bench/dist/offline/outbox-baseline.js <checkout> [rounds]`: the `outbox-cost` case for
 * this checkout's SDK and another checkout's (the baseline, its client built:
 * `npm ci && npx tsc -b packages/client` there), side by side in one run, against one cluster:
 * each round runs the four (this and the baseline, each with `persist` on classic-level and
 * without) in a rotating order, and every ratio is of the medians of the same run. What a change
 * to the outbox gained, measured on a noisy machine without comparing runs made at different
 * times. Prints a Markdown table (`docs/benchmarks.md` keeps it).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { connect, type PersistStore } from '@causeway/client/node'
import { ClassicLevel } from 'classic-level'
import { fixed, table, times } from '../report/markdown.js'
import { median, sequentialPuts, withCluster } from './sdk-writes.js'

/** What a client exposes that this measurement uses. */
interface Writer {
  put(key: string, value: unknown): Promise<unknown>
  close(): Promise<void>
}
type Connect = (options: { url: string; persist?: unknown }) => Promise<Writer>

/** The four ways measured, in the order of round 0. */
const RUNS = ['this, off', 'this, on', 'baseline, off', 'baseline, on'] as const
type Run = (typeof RUNS)[number]

async function main(): Promise<void> {
  const [checkout, roundsArg] = process.argv.slice(2)
  if (checkout === undefined) {
    process.stderr.write('usage: node bench/dist/offline/outbox-baseline.js <checkout> [rounds]\n')
    process.exitCode = 2
    return
  }
  const rounds = Number(roundsArg ?? 8)
  const entry = pathToFileURL(resolve(checkout, 'packages/client/dist/node.js')).href
  const baseline = (await import(entry)) as { connect: Connect }
  const dirs = [
    await mkdtemp(join(tmpdir(), 'causeway-outbox-this-')),
    await mkdtemp(join(tmpdir(), 'causeway-outbox-base-')),
  ]
  try {
    const perS = await withCluster('memory', async (url) => {
      const ours = connect as unknown as Connect
      const clients: Record<Run, Writer> = {
        'this, off': await ours({ url }),
        'this, on': await ours({
          url,
          persist: new ClassicLevel(dirs[0]!) as unknown as PersistStore,
        }),
        'baseline, off': await baseline.connect({ url }),
        'baseline, on': await baseline.connect({ url, persist: new ClassicLevel(dirs[1]!) }),
      }
      const measured = Object.fromEntries(RUNS.map((r) => [r, [] as number[]])) as Record<
        Run,
        number[]
      >
      try {
        for (let r = 0; r < rounds; r++) {
          for (let i = 0; i < RUNS.length; i++) {
            const run = RUNS[(i + r) % RUNS.length]!
            const db = clients[run]
            measured[run].push(await sequentialPuts((k, v) => db.put(k, v), `${run}${r}:`))
          }
          console.error(
            `round ${r + 1}/${rounds}: ` +
              RUNS.map((run) => `${run} ${measured[run].at(-1)!.toFixed(0)}`).join(', '),
          )
        }
      } finally {
        for (const db of Object.values(clients)) await db.close()
      }
      return measured
    })
    const m = Object.fromEntries(RUNS.map((r) => [r, median(perS[r])])) as Record<Run, number>
    const spread = (run: Run) => {
      const all = [...perS[run]].sort((a, b) => a - b)
      return `${fixed(all[0], 0)}–${fixed(all.at(-1), 0)}`
    }
    const ratioSpread = (on: Run, off: Run) => {
      const per = perS[on].map((v, i) => v / perS[off][i]!).sort((a, b) => a - b)
      return `${times(per[0]!)}–${times(per.at(-1)!)}`
    }
    console.log(
      table(
        [
          'SDK',
          'without persist, writes/s (median; range)',
          'with persist, writes/s (median; range)',
          'with / without (of medians; per round)',
        ],
        (['this', 'baseline'] as const).map((sdk) => [
          sdk === 'this' ? 'this checkout' : `baseline (${checkout})`,
          `${fixed(m[`${sdk}, off`], 0)}; ${spread(`${sdk}, off`)}`,
          `${fixed(m[`${sdk}, on`], 0)}; ${spread(`${sdk}, on`)}`,
          `${times(m[`${sdk}, on`] / m[`${sdk}, off`])}; ${ratioSpread(`${sdk}, on`, `${sdk}, off`)}`,
        ]),
      ),
    )
    console.log(
      `\n${rounds} rounds of 1,000 sequential puts each; with persist, this / baseline: ` +
        times(m['this, on'] / m['baseline, on']),
    )
  } finally {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  }
}

await main()
