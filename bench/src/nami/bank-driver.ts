/**
 * The load driver of the `nami` suite, run as a child process so its CPU is its own: it opens the
 * bank's accounts (`--setup`) or runs `--workers` workers of money-movement transactions for
 * `--seconds` (at most `--max-tx` each) against Causeway (`--target causeway --url URL`, the SDK
 * over undici) or the baseline (`--target redis-watch --redis URL`: `WATCH`/`MULTI`/`EXEC` from
 * ioredis on one Redis), then prints one line of JSON: what it measured.
 */
import { parseArgs } from 'node:util'
import { type Causeway, CausewayError, connect, undiciTransport } from '@causeway/client/node'
import { Redis } from 'ioredis'
import {
  type Account,
  accountKey,
  applyTransfers,
  newAccount,
  percentile,
  randomGenerator,
  touched,
  transfers,
} from './bank-workload.js'
import { watchTransaction } from './redis-watch.js'

/** What one run of the driver measured. */
export interface DriverResult {
  workers: number
  seconds: number
  /** Transactions applied. */
  transactions: number
  /** Attempts, conflicts included. */
  attempts: number
  /** Transactions that failed with an error (not a conflict). */
  failed: number
  /** Applied transactions per second. */
  throughput: number
  /** Latency of a transaction, retries included, in ms. */
  p50: number
  p95: number
  p99: number
  /** The driver's own CPU, seconds. */
  cpuS: number
  /** After a run: the sum of every balance, read at once (0 when the money is all there). */
  sum?: number
}

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    url: { type: 'string' },
    redis: { type: 'string' },
    setup: { type: 'boolean' },
    check: { type: 'boolean' },
    accounts: { type: 'string' },
    description: { type: 'string' },
    workers: { type: 'string' },
    seconds: { type: 'string' },
    'max-tx': { type: 'string' },
    movements: { type: 'string' },
    seed: { type: 'string' },
  },
})
const target = values.target ?? 'causeway'
const accounts = Number(values.accounts ?? 30_000)
const descriptionBytes = Number(values.description ?? 1000)
const workers = Number(values.workers ?? 1)
const seconds = Number(values.seconds ?? 10)
const maxTx = Number(values['max-tx'] ?? 1_000_000)
const movements = Number(values.movements ?? 5)
const seed = Number(values.seed ?? 7)

/** How one worker runs one money movement on the target; resolves to its attempts. */
type Move = (random: () => number) => Promise<number>

async function causewayTarget(url: string): Promise<{
  move: (w: number) => Move
  setup(): Promise<void>
  sum(): Promise<number>
  close(): Promise<void>
}> {
  const transport = undiciTransport({ connections: 256 })
  const clients: Causeway[] = await Promise.all(
    Array.from({ length: Math.max(1, workers) }, () => connect({ url, transport })),
  )
  const db = clients[0]!
  return {
    move: (w) => async (random) => {
      const moves = transfers(random, accounts, movements)
      const keys = touched(moves)
      let attempts = 0
      await clients[w]!.runTransaction(
        async (tx) => {
          attempts++
          const read = await Promise.all(keys.map((n) => tx.get<Account>(accountKey(n))))
          const rows = new Map(keys.map((n, i) => [n, read[i]!]))
          applyTransfers(rows, moves)
          for (const [n, row] of rows) tx.put(accountKey(n), row)
        },
        { retries: 1000, maxBackoffMs: 50 },
      )
      return attempts
    },
    async setup() {
      let next = 0
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < accounts) {
            const from = next
            next = Math.min(accounts, from + 100)
            const to = next
            await db.runTransaction((tx) => {
              for (let n = from; n < to; n++) tx.put(accountKey(n), newAccount(n, descriptionBytes))
            })
          }
        }),
      )
    },
    async sum() {
      const tx = await db.transaction({ timeoutMs: 60_000 })
      const rows = await Promise.all(
        Array.from({ length: accounts }, (_, n) => tx.get<Account>(accountKey(n))),
      )
      return rows.reduce((s, r) => s + (r?.balance ?? 0), 0)
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()))
      await transport.close?.()
    },
  }
}

async function redisTarget(url: string) {
  const connections = Array.from({ length: Math.max(1, workers) }, () => new Redis(url))
  const admin = connections[0]!
  return {
    move: (w: number) => async (random: () => number) =>
      watchTransaction(connections[w]!, transfers(random, accounts, movements)),
    async setup() {
      await admin.flushdb()
      for (let n = 0; n < accounts; n += 500) {
        const batch = admin.multi()
        for (let k = n; k < Math.min(accounts, n + 500); k++)
          batch.set(accountKey(k), JSON.stringify(newAccount(k, descriptionBytes)))
        await batch.exec()
      }
    },
    async sum() {
      let sum = 0
      for (let n = 0; n < accounts; n += 1000) {
        const keys = Array.from({ length: Math.min(1000, accounts - n) }, (_, i) =>
          accountKey(n + i),
        )
        for (const text of await admin.mget(...keys))
          sum += text === null ? 0 : (JSON.parse(text) as Account).balance
      }
      return sum
    },
    async close() {
      await Promise.all(connections.map((c) => c.quit()))
    },
  }
}

const t =
  target === 'redis-watch'
    ? await redisTarget(values.redis ?? 'redis://127.0.0.1:6379')
    : await causewayTarget(values.url ?? 'http://127.0.0.1:7070')

if (values.setup === true) {
  await t.setup()
  await t.close()
  process.stdout.write(JSON.stringify({ setup: accounts }) + '\n')
} else {
  const cpu = process.cpuUsage()
  const latencies: number[] = []
  let applied = 0
  let attempts = 0
  let failed = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const random = randomGenerator(seed * 1000 + w)
      const move = t.move(w)
      for (let i = 0; i < maxTx && performance.now() < deadline; i++) {
        const begun = performance.now()
        try {
          const tries = await move(random)
          attempts += tries
          applied++
          latencies.push(performance.now() - begun)
        } catch (error) {
          failed++
          if (!(error instanceof CausewayError)) throw error
        }
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  latencies.sort((a, b) => a - b)
  const result: DriverResult = {
    workers,
    seconds: elapsed,
    transactions: applied,
    attempts,
    failed,
    throughput: applied / elapsed,
    p50: percentile(latencies, 0.5),
    p95: percentile(latencies, 0.95),
    p99: percentile(latencies, 0.99),
    cpuS: (used.user + used.system) / 1e6,
  }
  if (values.check === true) result.sum = await t.sum()
  await t.close()
  process.stdout.write(JSON.stringify(result) + '\n')
}
