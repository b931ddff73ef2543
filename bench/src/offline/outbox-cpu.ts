/**
 * `node bench/dist/offline/outbox-cpu.js [rounds]`: where the `outbox-cost` case's time goes.
 * One cluster, three clients of this checkout (persist off, on with memory-level, on with
 * classic-level), each round in a rotating order: writes/s of 1,000 sequential puts and the CPU
 * this process spent per write (`process.cpuUsage`: user + system of every thread, so
 * classic-level's libuv worker and LevelDB's own threads count).
 *
 * The client is latency-bound when the machine is idle, but the cluster shares its cores: when
 * they are busy, every microsecond of CPU the client spends per write is taken from the servers
 * that answer it, and the ratio of writes/s follows the ratio of CPU per write. memory-level
 * (no thread, no file) separates what the outbox's own code costs from what the LevelDB store
 * adds (a batch handed to the thread pool and back, and its write to the log).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fixed, table, times } from '../report/markdown.js'
import {
  PERSIST_RUNS as RUNS,
  type PersistRun as Run,
  persistClients,
  persistRounds,
} from './persist-rounds.js'
import { median, sequentialPuts, withCluster } from './sdk-writes.js'

/** Writes per `sequentialPuts` call (its `WRITES`). */
const WRITES = 1000

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 8)
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
    process.stderr.write('usage: node bench/dist/offline/outbox-cpu.js [rounds, 1-100]\n')
    process.exitCode = 2
    return
  }
  const dir = await mkdtemp(join(tmpdir(), 'causeway-outbox-cpu-'))
  try {
    const measured = await withCluster('memory', async (url) => {
      const clients = await persistClients(url, dir)
      try {
        return await persistRounds(clients, rounds, WRITES, (db, run, r) =>
          sequentialPuts((k, v) => db.put(k, v), `${run}${r}:`),
        )
      } finally {
        for (const db of Object.values(clients)) await db.close()
      }
    })
    const m = (run: Run) => median(measured.perS[run])
    const c = (run: Run) => median(measured.cpu[run])
    console.log(
      table(
        [
          'client',
          'writes/s (median)',
          'vs persist off',
          'client CPU µs/write (median)',
          'CPU added by persist, µs/write',
        ],
        RUNS.map((run) => [
          run,
          fixed(m(run), 0),
          times(m(run) / m('persist off')),
          fixed(c(run), 0),
          run === 'persist off' ? '–' : fixed(c(run) - c('persist off'), 0),
        ]),
      ),
    )
    console.log(`\n${rounds} rounds of ${WRITES} sequential puts per client, in a rotating order`)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

await main()
