/**
 * The banking app of the Nami paper (section 4.1), on Causeway transactions: accounts with a
 * balance and a 1 KB description, workers that each run money-movement transactions (five
 * movements between random accounts, ten accounts read and written), and a check, at one snapshot,
 * that the balances still sum to zero.
 */
import { type Causeway, CausewayError } from '@causeway/client'

/** One account as stored: `acct:<n>` → `{ balance, description }`. */
export interface Account {
  balance: number
  description: string
}

/** The shape of a bank. */
export interface BankOptions {
  /** Number of accounts. @default 30000 */
  accounts?: number
  /** Characters of each account's description (a row is about this many bytes). @default 1000 */
  descriptionBytes?: number
  /** The transactional namespace of the accounts. @default 'acct' */
  namespace?: string
}

/** The key of account `n`. */
export function accountKey(n: number, namespace = 'acct'): string {
  return `${namespace}:${n}`
}

/** A small, seedable random generator (mulberry32), so a run can be repeated. */
export function randomGenerator(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function description(n: number, bytes: number, random: () => number): string {
  const words = 'savings checking joint business trust escrow payroll travel'.split(' ')
  let text = `account ${n}:`
  while (text.length < bytes) text += ' ' + words[Math.floor(random() * words.length)]!
  return text.slice(0, bytes)
}

/**
 * Opens the bank's accounts with zero balances, in transactions of `batch` accounts (at most the
 * cluster's `maxTxKeys`), `parallel` at a time.
 */
export async function openAccounts(
  db: Causeway,
  options: BankOptions = {},
  batch = 100,
  parallel = 4,
): Promise<void> {
  const accounts = options.accounts ?? 30_000
  const bytes = options.descriptionBytes ?? 1000
  const random = randomGenerator(1)
  let next = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (;;) {
        const from = next
        if (from >= accounts) return
        next = Math.min(accounts, from + batch)
        const to = next
        await db.runTransaction((tx) => {
          for (let n = from; n < to; n++)
            tx.put(accountKey(n, options.namespace), {
              balance: 0,
              description: description(n, bytes, random),
            } satisfies Account)
        })
      }
    }),
  )
}

/** What one money movement transaction did. */
export interface Movement {
  /** How many times it ran (1 + its conflicts). */
  attempts: number
  /** From its first read to its applied commit, retries included, in ms. */
  latencyMs: number
}

/**
 * One money movement transaction: `movements` transfers of a random amount between two random
 * accounts (five by default: ten accounts), retried on conflict.
 */
export async function moveMoney(
  db: Causeway,
  random: () => number,
  options: BankOptions & { movements?: number; retries?: number } = {},
): Promise<Movement> {
  const accounts = options.accounts ?? 30_000
  const movements = options.movements ?? 5
  const pairs = Array.from({ length: movements }, () => {
    const from = Math.floor(random() * accounts)
    let to = Math.floor(random() * (accounts - 1))
    if (to >= from) to++
    return { from, to, amount: 1 + Math.floor(random() * 100) }
  })
  let attempts = 0
  const started = performance.now()
  await db.runTransaction(
    async (tx) => {
      attempts++
      const keys = [...new Set(pairs.flatMap((m) => [m.from, m.to]))]
      const read = await Promise.all(
        keys.map((n) => tx.get<Account>(accountKey(n, options.namespace))),
      )
      const rows = new Map(keys.map((n, i) => [n, read[i]!]))
      for (const { from, to, amount } of pairs) {
        rows.get(from)!.balance -= amount
        rows.get(to)!.balance += amount
      }
      for (const [n, row] of rows) tx.put(accountKey(n, options.namespace), row)
    },
    { retries: options.retries ?? 100 },
  )
  return { attempts, latencyMs: performance.now() - started }
}

/** The sum of every balance, read at one snapshot. */
export async function totalBalance(
  db: Causeway,
  options: BankOptions = {},
): Promise<{ sum: number; accounts: number; snapshot: number }> {
  const accounts = options.accounts ?? 30_000
  const tx = await db.transaction({ timeoutMs: 30_000 })
  const rows = await Promise.all(
    Array.from({ length: accounts }, (_, n) => tx.get<Account>(accountKey(n, options.namespace))),
  )
  let sum = 0
  let found = 0
  for (const row of rows) {
    if (row === undefined) continue
    found++
    sum += row.balance
  }
  await tx.commit()
  return { sum, accounts: found, snapshot: tx.snapshot ?? 0 }
}

/**
 * The same transfers done the wrong way, for the control run that shows why the bank needs
 * transactions: each transfer reads both balances with plain `get`s and writes them back with
 * plain `put`s (in a namespace that is not transactional). Two workers moving money from one
 * account at once both read the same balance, and one write is lost: the sum drifts from zero.
 */
export async function moveMoneyWithoutTransactions(
  db: Causeway,
  random: () => number,
  options: BankOptions & { movements?: number } = {},
): Promise<void> {
  const accounts = options.accounts ?? 30_000
  for (let i = 0; i < (options.movements ?? 5); i++) {
    const from = Math.floor(random() * accounts)
    let to = Math.floor(random() * (accounts - 1))
    if (to >= from) to++
    const amount = 1 + Math.floor(random() * 100)
    const [a, b] = await Promise.all(
      [from, to].map((n) =>
        db.get<Account>(accountKey(n, options.namespace), { replica: 'leader' }),
      ),
    )
    await Promise.all([
      db.put(accountKey(from, options.namespace), {
        ...a!.value!,
        balance: a!.value!.balance - amount,
      }),
      db.put(accountKey(to, options.namespace), {
        ...b!.value!,
        balance: b!.value!.balance + amount,
      }),
    ])
  }
}

/** What a run of workers did. */
export interface RunReport {
  transactions: number
  /** Runs of the movements' functions: one per transaction, and one per retry after a conflict. */
  attempts: number
  /**
   * Movements that ran more than once (a conflict, or a snapshot collected under them, made
   * `runTransaction` run them again).
   */
  retried: number
  /** Transactions that failed with an error (the cluster unreachable, ...), not a conflict. */
  failed: number
  /** Applied transactions per second. */
  throughput: number
  /** Latency of each movement (retries included), ms, sorted. */
  latencies: number[]
  errors: Map<string, number>
}

/**
 * Runs `workers` workers, each of `transactions` money movements one after the other (or until
 * `until()` says stop), on clients `clientFor(i)`. A movement that fails with an error (not a
 * conflict: `runTransaction` retries those) is counted, and the worker pauses `pauseMs` and goes
 * on: its transfer may or may not have been applied, which keeps the sum at zero either way.
 */
export async function runWorkers(
  clientFor: (worker: number) => Causeway,
  options: BankOptions & {
    workers: number
    transactions: number
    movements?: number
    seed?: number
    pauseMs?: number
    until?: () => boolean
    /** Told after each applied movement. */
    onApplied?: () => void
  },
): Promise<RunReport> {
  const report: RunReport = {
    transactions: 0,
    attempts: 0,
    retried: 0,
    failed: 0,
    throughput: 0,
    latencies: [],
    errors: new Map(),
  }
  const started = performance.now()
  await Promise.all(
    Array.from({ length: options.workers }, async (_, w) => {
      const db = clientFor(w)
      const random = randomGenerator((options.seed ?? 7) * 1000 + w)
      for (let i = 0; i < options.transactions && !(options.until?.() ?? false); i++) {
        try {
          const moved = await moveMoney(db, random, options)
          report.transactions++
          report.attempts += moved.attempts
          if (moved.attempts > 1) report.retried++
          report.latencies.push(moved.latencyMs)
          options.onApplied?.()
        } catch (error) {
          report.failed++
          const code = error instanceof CausewayError ? error.code : String(error)
          report.errors.set(code, (report.errors.get(code) ?? 0) + 1)
          await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 100))
        }
      }
    }),
  )
  report.throughput = report.transactions / ((performance.now() - started) / 1000)
  report.latencies.sort((a, b) => a - b)
  return report
}
