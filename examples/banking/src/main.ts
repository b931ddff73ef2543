/**
 * The banking app, runnable: `npm start` in the repository root starts a cluster; then
 * `npm start -w @causeway/example-banking -- --url http://127.0.0.1:7070` opens the accounts (once),
 * runs the workers and checks that the balances sum to zero. The cluster needs a transactional
 * namespace `acct` (`causeway dev --transactional acct`; `npm start` has it).
 *
 * Options: `--url URL` (default `CAUSEWAY_URL` or http://127.0.0.1:7070), `--accounts N` (30000),
 * `--workers N` (10), `--transactions N` per worker (400), `--movements N` per transaction (5),
 * `--skip-open` (the accounts exist already). Exits 1 when the balances do not sum to zero.
 */
import { parseArgs } from 'node:util'
import { connect } from '@causeway/client'
import { openAccounts, runWorkers, totalBalance } from './bank.js'

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    accounts: { type: 'string' },
    workers: { type: 'string' },
    transactions: { type: 'string' },
    movements: { type: 'string' },
    'skip-open': { type: 'boolean' },
  },
})
const url = values.url ?? process.env['CAUSEWAY_URL'] ?? 'http://127.0.0.1:7070'
const accounts = Number(values.accounts ?? 30_000)
const workers = Number(values.workers ?? 10)
const transactions = Number(values.transactions ?? 400)
const movements = Number(values.movements ?? 5)

const db = await connect({ url })
if (values['skip-open'] !== true) {
  console.log(`opening ${accounts} accounts with 1 KB descriptions ...`)
  await openAccounts(db, { accounts })
}
const clients = await Promise.all(Array.from({ length: workers }, () => connect({ url })))
console.log(`${workers} workers × ${transactions} transactions of ${movements} movements ...`)
const report = await runWorkers((w) => clients[w]!, { accounts, workers, transactions, movements })
const p = (q: number) => report.latencies[Math.floor(q * (report.latencies.length - 1))] ?? 0
console.log(
  `${report.transactions} applied (${report.attempts - report.transactions} conflicts retried, ${report.failed} failed), ` +
    `${report.throughput.toFixed(1)} tx/s, p50 ${p(0.5).toFixed(1)} ms, p95 ${p(0.95).toFixed(1)} ms, p99 ${p(0.99).toFixed(1)} ms`,
)
const total = await totalBalance(db, { accounts })
console.log(
  `balances of ${total.accounts} accounts at snapshot ${total.snapshot} sum to ${total.sum}`,
)
for (const c of [db, ...clients]) await c.close()
process.exitCode = total.sum === 0 ? 0 : 1
