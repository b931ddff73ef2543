/**
 * `node bench/dist/offline/outbox-client-cpu.js [writes] [rounds]`: the client CPU that `persist`
 * adds to an online write, without a server. The transport answers every write itself, one
 * macrotask later (as a reply from the network would arrive), with an index and a timestamp that
 * grow, so the session and the read cache do their real work; nothing else runs in the process.
 * Three clients (persist off, memory-level, classic-level) write `writes` sequential puts each
 * round, in a rotating order; the table gives the median CPU per write (`process.cpuUsage`, every
 * thread of the process: classic-level's libuv worker and LevelDB's own threads count).
 *
 * `outbox-cpu.ts` measures the same against a real cluster, where the servers' CPU makes the
 * numbers move; this one is for changes to the client's write path, side by side.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_LIMITS, type Topology, hlcFrom } from '@causeway/core'
import type { Transport, TransportRequest, TransportResponse } from '@causeway/client/node'
import { fixed, table } from '../report/markdown.js'
import {
  PERSIST_RUNS as RUNS,
  type PersistRun as Run,
  persistClients,
  persistRounds,
} from './persist-rounds.js'
import { median } from './sdk-writes.js'

const TOPOLOGY: Topology = {
  cluster: 'outbox-client-cpu',
  protocol: 1,
  region: 0,
  regions: [
    { id: 0, name: 'r0', url: 'http://r0.invalid' },
    { id: 1, name: 'r1', url: 'http://r1.invalid' },
  ],
  partitions: 4,
  replicas: 2,
  epochs: [1, 1, 1, 1],
  limits: { ...DEFAULT_LIMITS },
  shipping: 'fifo',
}

/** A gateway in the process: the topology, and every write applied at the next index. */
function answeringTransport(): Transport {
  let idx = 0
  return {
    request(req: TransportRequest): Promise<TransportResponse> {
      if (req.url.endsWith('/v1/topology')) return Promise.resolve({ status: 200, body: TOPOLOGY })
      const reply = () => ({ ts: hlcFrom(Date.now(), 0), dc: 0, idx: ++idx, epoch: 1, region: 0 })
      // A replay (`POST /v1/ops`: writes made while the outbox was busy) gets a result an op.
      const body = req.url.includes('/v1/ops')
        ? { results: (JSON.parse(req.body!) as { ops: unknown[] }).ops.map(reply) }
        : reply()
      return new Promise((resolve) => setImmediate(() => resolve({ status: 200, body })))
    },
  }
}

async function main(): Promise<void> {
  const writes = Number(process.argv[2] ?? 5000)
  const rounds = Number(process.argv[3] ?? 6)
  if (!(writes >= 100 && writes <= 1_000_000) || !(rounds >= 1 && rounds <= 100)) {
    process.stderr.write('usage: node bench/dist/offline/outbox-client-cpu.js [writes] [rounds]\n')
    process.exitCode = 2
    return
  }
  const dir = await mkdtemp(join(tmpdir(), 'causeway-outbox-client-cpu-'))
  const clients = await persistClients('http://r0.invalid', dir, answeringTransport)
  let cpu: Record<Run, number[]>
  try {
    ;({ cpu } = await persistRounds(clients, rounds, writes, async (db) => {
      const started = performance.now()
      for (let w = 0; w < writes; w++) await db.put(`k${w % 100}`, { w, at: 'x'.repeat(32) })
      return (writes / (performance.now() - started)) * 1000
    }))
  } finally {
    for (const db of Object.values(clients)) await db.close()
    await rm(dir, { recursive: true, force: true })
  }
  const off = median(cpu['persist off'])
  console.log(
    table(
      ['client', 'CPU µs/write (median)', 'added by persist, µs/write'],
      RUNS.map((run) => [
        run,
        fixed(median(cpu[run]), 1),
        run === 'persist off' ? '–' : fixed(median(cpu[run]) - off, 1),
      ]),
    ),
  )
  console.log(
    `\n${rounds} rounds of ${writes} sequential puts per client, in a rotating order, no server`,
  )
}

await main()
