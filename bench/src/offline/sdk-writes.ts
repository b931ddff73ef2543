/**
 * Offline cases that time the SDK's writes end to end against one cluster (a `causeway dev`
 * child): sequential `put`s of one client, the way an app writes.
 *
 * - `replay`: 1,000 writes queued offline and replayed by `db.sync()` (batched through
 *   `POST /v1/ops`) against the same 1,000 writes made online one by one (no `persist`).
 * - `outbox-cost`: 1,000 online writes with `persist` (a LevelDB store on disk: every write is
 *   queued first and removed with its result) against the same without `persist`.
 *
 * Each comparison runs in rounds, A B then B A, and the ratio is of the median rounds.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CausewayError,
  connect,
  undiciTransport,
  type PersistStore,
  type Transport,
} from '@causeway/client/node'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { type Backend, startCluster } from '../cluster-process.js'
import { fixed, table, times } from '../report/markdown.js'
import type { OfflineCase } from './offline-case.js'

const WRITES = 1000

/** A transport that can be switched off (every request fails as a dropped network would). */
function switchable(): Transport & { offline: boolean } {
  const inner = undiciTransport()
  const t = {
    offline: false,
    request(req: Parameters<Transport['request']>[0]) {
      if (t.offline)
        return Promise.reject(new CausewayError('NETWORK_ERROR', 'switched off (benchmark)'))
      return inner.request(req)
    },
    close: () => inner.close?.(),
  }
  return t
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

/** Writes/s of `WRITES` sequential puts of `prefix<i>`. */
export async function sequentialPuts(
  put: (key: string, value: unknown) => Promise<unknown>,
  prefix: string,
): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < WRITES; i++) await put(`${prefix}${i % 100}`, { i, at: 'x'.repeat(32) })
  return (WRITES / (performance.now() - started)) * 1000
}

export async function withCluster<T>(
  backend: Backend,
  run: (url: string) => Promise<T>,
): Promise<T> {
  const cluster = await startCluster({ backend, regions: 2, partitions: 4, replicas: 2 })
  try {
    return await run(cluster.urls[0]!)
  } finally {
    await cluster.stop()
  }
}

/** Replay vs online. */
export interface ReplayRow {
  rounds: number
  onlinePerS: number
  replayPerS: number
  ratio: number
  /** How long queueing the 1,000 writes offline took, ms (median). */
  queueMs: number
}

export const replayThroughput: OfflineCase<ReplayRow> = {
  name: 'replay',
  title: 'Replay of 1,000 queued writes vs the same writes online',
  estimateS: (quick) => (quick ? 8 : 20),
  async measure(ctx) {
    const rounds = ctx.quick ? 2 : 6
    return withCluster(ctx.backend, async (url) => {
      const online: number[] = []
      const replay: number[] = []
      const queue: number[] = []
      const plain = await connect({ url })
      const transport = switchable()
      const queued = await connect({
        url,
        transport,
        persist: new MemoryLevel() as unknown as PersistStore,
      })
      try {
        for (let r = 0; r < rounds; r++) {
          const runOnline = async () =>
            online.push(await sequentialPuts((k, v) => plain.put(k, v), `on${r}:`))
          const runReplay = async () => {
            transport.offline = true
            const t0 = performance.now()
            for (let i = 0; i < WRITES; i++)
              await queued.put(`off${r}:${i % 100}`, { i, at: 'x'.repeat(32) })
            queue.push(performance.now() - t0)
            transport.offline = false
            const started = performance.now()
            const result = await queued.sync()
            if (result.applied !== WRITES) throw new Error(`replay applied ${result.applied}`)
            replay.push((WRITES / (performance.now() - started)) * 1000)
          }
          if (r % 2 === 0) {
            await runOnline()
            await runReplay()
          } else {
            await runReplay()
            await runOnline()
          }
        }
      } finally {
        await plain.close()
        await queued.close()
      }
      const row: ReplayRow = {
        rounds,
        onlinePerS: median(online),
        replayPerS: median(replay),
        ratio: median(replay) / median(online),
        queueMs: median(queue),
      }
      ctx.log(
        `replay ${row.replayPerS.toFixed(0)} writes/s vs online ${row.onlinePerS.toFixed(0)} writes/s: ${row.ratio.toFixed(2)}x`,
      )
      return row
    })
  },
  report(r) {
    return [
      `One client writes ${WRITES} values (sequential \`put\`s over 100 keys in 4 partitions): online ` +
        'without `persist`, and offline into its outbox (a memory-level store) then replayed by `db.sync()` ' +
        '(`POST /v1/ops`, up to 500 ops a request). Target: replay >= 0.8x online.',
      '',
      table(
        [
          'online writes/s',
          'replay writes/s',
          'replay / online',
          'queueing 1,000 offline',
          'rounds',
        ],
        [
          [
            fixed(r.onlinePerS, 0),
            fixed(r.replayPerS, 0),
            times(r.ratio),
            `${fixed(r.queueMs, 0)} ms`,
            String(r.rounds),
          ],
        ],
      ),
    ].join('\n')
  },
}

/** Online writes with and without the outbox. */
export interface OutboxRow {
  rounds: number
  offPerS: number
  onPerS: number
  ratio: number
}

export const outboxCost: OfflineCase<OutboxRow> = {
  name: 'outbox-cost',
  title: 'Cost of the outbox on online writes (persist on, classic-level, vs off)',
  estimateS: (quick) => (quick ? 6 : 15),
  async measure(ctx) {
    const rounds = ctx.quick ? 2 : 6
    const dir = await mkdtemp(join(tmpdir(), 'causeway-bench-outbox-'))
    try {
      return await withCluster(ctx.backend, async (url) => {
        const off: number[] = []
        const on: number[] = []
        const plain = await connect({ url })
        const persisted = await connect({
          url,
          persist: new ClassicLevel(dir) as unknown as PersistStore,
        })
        try {
          // Not measured: both clients' first writes (JIT, the store's first files, the replay a
          // client starts as it takes its outbox over), which a quick run's two rounds would
          // otherwise weigh as much as the rest.
          await sequentialPuts((k, v) => plain.put(k, v), 'warm-off:')
          await sequentialPuts((k, v) => persisted.put(k, v), 'warm-on:')
          for (let r = 0; r < rounds; r++) {
            const runOff = async () =>
              off.push(await sequentialPuts((k, v) => plain.put(k, v), `off${r}:`))
            const runOn = async () =>
              on.push(await sequentialPuts((k, v) => persisted.put(k, v), `on${r}:`))
            if (r % 2 === 0) {
              await runOff()
              await runOn()
            } else {
              await runOn()
              await runOff()
            }
          }
        } finally {
          await plain.close()
          await persisted.close()
        }
        ctx.log(
          `outbox rounds, writes/s: without persist ${off.map((x) => x.toFixed(0)).join(' ')}; with ${on.map((x) => x.toFixed(0)).join(' ')}`,
        )
        const row: OutboxRow = {
          rounds,
          offPerS: median(off),
          onPerS: median(on),
          ratio: median(on) / median(off),
        }
        ctx.log(
          `outbox: ${row.onPerS.toFixed(0)} writes/s with persist vs ${row.offPerS.toFixed(0)} without: ${row.ratio.toFixed(2)}x`,
        )
        return row
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  },
  report(r) {
    return [
      `One client makes ${WRITES} sequential online \`put\`s, with \`persist\` (classic-level in a temporary ` +
        'directory: each write is queued in the outbox as its request goes out, and removed with its result ' +
        'in the read cache and the session together with the writes applied within 10 ms) and without, after ' +
        '1,000 writes of each not measured. Target: >= 0.7x.',
      '',
      table(
        ['without persist, writes/s', 'with persist, writes/s', 'with / without', 'rounds'],
        [[fixed(r.offPerS, 0), fixed(r.onPerS, 0), times(r.ratio), String(r.rounds)]],
      ),
    ].join('\n')
  },
}
