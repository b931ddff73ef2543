/**
 * The banking app: workers moving money between random accounts in transactions keep the balances
 * summing to zero, on a cluster in this process, and on a `causeway dev` process killed (-9) in the
 * middle of the run and started again on its data directory (every leader, the transaction log and
 * the gateway die at once; commits in flight are sent again under their id and decided once).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Causeway, connect } from '@causeway/client'
import { type DevCluster, startDevCluster } from '@causeway/gateway'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { startCli, stopCli, urlsOf } from '../../../gateway/test/cli/cli-process.js'
import {
  moveMoneyWithoutTransactions,
  openAccounts,
  randomGenerator,
  runWorkers,
  totalBalance,
} from '../src/bank.js'

const clients: Causeway[] = []
afterAll(async () => {
  for (const db of clients.splice(0)) await db.close()
})

async function clientsOf(url: string, n: number): Promise<Causeway[]> {
  const made = await Promise.all(Array.from({ length: n }, () => connect({ url })))
  clients.push(...made)
  return made
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

describe('the banking app', () => {
  it('keeps the balances summing to zero while workers move money concurrently', async () => {
    const dev: DevCluster = await startDevCluster({
      regions: 1,
      partitions: 4,
      replicas: 3,
      port: 0,
      namespaces: { acct: { transactions: true } },
    })
    try {
      const bank = { accounts: 2000 }
      const [admin, ...workers] = await clientsOf(dev.urls[0]!, 9)
      await openAccounts(admin!, bank)
      const report = await runWorkers((w) => workers[w]!, { ...bank, workers: 8, transactions: 25 })
      expect(report.failed).toBe(0)
      expect(report.transactions).toBe(200)
      // The run did meet conflicts (else it shows nothing about them): the applier decided some,
      // and the workers ran those transfers again.
      expect(dev.cluster.applier(0)!.stats.conflicts).toBeGreaterThan(0)
      expect(report.retried).toBeGreaterThan(0)
      expect(report.attempts).toBeGreaterThan(report.transactions)
      const total = await totalBalance(admin!, bank)
      expect(total).toMatchObject({ sum: 0, accounts: 2000 })
      // Money did move: the accounts are not all at zero.
      const tx = await admin!.transaction()
      const some = await Promise.all(
        Array.from({ length: 50 }, (_, n) => tx.get<{ balance: number }>(`acct:${n}`)),
      )
      expect(some.some((a) => a!.balance !== 0)).toBe(true)
    } finally {
      await dev.close()
    }
  }, 120_000)

  it('loses money without transactions: plain get and put transfers break the sum (control)', async () => {
    const dev: DevCluster = await startDevCluster({
      regions: 1,
      partitions: 4,
      replicas: 2,
      port: 0,
      namespaces: { acct: { transactions: true } },
    })
    try {
      // A plain namespace, few accounts: concurrent transfers read the same balances.
      const bank = { accounts: 10, namespace: 'cash', descriptionBytes: 10 }
      const [admin, ...workers] = await clientsOf(dev.urls[0]!, 9)
      await Promise.all(
        Array.from({ length: bank.accounts }, (_, n) =>
          admin!.put(`cash:${n}`, { balance: 0, description: '' }),
        ),
      )
      const sum = async () => {
        const rows = await Promise.all(
          Array.from({ length: bank.accounts }, (_, n) =>
            admin!.get<{ balance: number }>(`cash:${n}`, { replica: 'leader' }),
          ),
        )
        return rows.reduce((total, r) => total + r.value!.balance, 0)
      }
      // Rounds of concurrent transfers, each checked once every worker is done, until the sum
      // breaks (it does in the first round on any machine seen so far; the rounds only bound it).
      let total = 0
      for (let round = 0; round < 20 && total === 0; round++) {
        await Promise.all(
          workers.map((db, w) =>
            moveMoneyWithoutTransactions(db!, randomGenerator(round * 100 + w), {
              ...bank,
              movements: 10,
            }),
          ),
        )
        total = await sum()
      }
      expect(total, 'the sum of the balances after transfers without transactions').not.toBe(0)
    } finally {
      await dev.close()
    }
  }, 120_000)

  it('keeps them summing to zero when the cluster is killed mid-run and restarted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'causeway-bank-'))
    const port = await freePort()
    const args = [
      'dev',
      '--regions',
      '1',
      '--partitions',
      '4',
      '--replicas',
      '2',
      '--port',
      String(port),
      '--data',
      dir,
      '--transactional',
      'acct',
    ]
    let cli = startCli(args)
    try {
      const [url] = await urlsOf(cli, 1)
      const bank = { accounts: 500 }
      const [admin, ...workers] = await clientsOf(url!, 7)
      await openAccounts(admin!, bank)
      let stop = false
      let applied = 0
      const running = runWorkers((w) => workers[w]!, {
        ...bank,
        workers: 6,
        transactions: 1_000_000,
        pauseMs: 50,
        until: () => stop,
        onApplied: () => applied++,
      })
      // Kill it -9 once some transfers are in, and more are in flight.
      await vi.waitUntil(() => applied >= 40, { timeout: 60_000, interval: 20 })
      cli.child.kill('SIGKILL')
      await cli.exited
      const before = applied
      cli = startCli(args)
      await urlsOf(cli, 1)
      // The workers' clients reach it again on the same port; they move money again for a while.
      await vi.waitUntil(() => applied >= before + 40, { timeout: 60_000, interval: 50 })
      stop = true
      const report = await running
      expect(report.transactions).toBeGreaterThan(80)
      expect(report.retried).toBeGreaterThan(0)
      const total = await totalBalance(admin!, bank)
      expect(total).toMatchObject({ sum: 0, accounts: 500 })
    } finally {
      await stopCli(cli, 'SIGKILL')
      await rm(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
