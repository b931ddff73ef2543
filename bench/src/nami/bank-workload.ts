/**
 * The banking workload of Nami's evaluation (section 4.1), as the `nami` suite drives it: accounts
 * `acct:<n>` with a balance and a 1 KB description; a worker runs money-movement transactions one
 * after the other, each five transfers of a random amount between random accounts (ten accounts
 * read and written, about 10 KB). The same transaction runs on Causeway (`db.runTransaction`) and
 * on the baseline (Redis `WATCH`/`MULTI`/`EXEC`, `redis-watch.ts`).
 */

/** One account as stored. */
export interface Account {
  balance: number
  description: string
}

/** The key of account `n`. */
export function accountKey(n: number): string {
  return `acct:${n}`
}

/** A seedable random generator (mulberry32). */
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

/** A new account of `bytes` description characters. */
export function newAccount(n: number, bytes: number): Account {
  const base = `account ${n}: savings checking joint business trust escrow payroll travel `
  return { balance: 0, description: base.repeat(Math.ceil(bytes / base.length)).slice(0, bytes) }
}

/** One transaction's transfers: `movements` pairs of distinct accounts and an amount each. */
export interface Transfer {
  from: number
  to: number
  amount: number
}

/** Picks a transaction's transfers. */
export function transfers(random: () => number, accounts: number, movements: number): Transfer[] {
  return Array.from({ length: movements }, () => {
    const from = Math.floor(random() * accounts)
    let to = Math.floor(random() * (accounts - 1))
    if (to >= from) to++
    return { from, to, amount: 1 + Math.floor(random() * 100) }
  })
}

/** The accounts a transaction touches, each once. */
export function touched(moves: readonly Transfer[]): number[] {
  return [...new Set(moves.flatMap((m) => [m.from, m.to]))]
}

/** Applies `moves` to the rows read (by account number), in place. */
export function applyTransfers(rows: Map<number, Account>, moves: readonly Transfer[]): void {
  for (const { from, to, amount } of moves) {
    rows.get(from)!.balance -= amount
    rows.get(to)!.balance += amount
  }
}

/** Latency percentiles of sorted samples. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
