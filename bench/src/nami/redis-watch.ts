/**
 * The baseline of the `nami` suite: the banking transaction as Redis optimistic transactions
 * straight from ioredis on one Redis (the paper compares with RocksDB's OptimisticTransactionDB on
 * one node). `WATCH` the accounts, read them, `MULTI`, write them back, `EXEC`; a `null` reply
 * (a watched key changed) is a conflict, tried again at once.
 */
import type { Redis } from 'ioredis'
import {
  type Account,
  type Transfer,
  accountKey,
  applyTransfers,
  touched,
} from './bank-workload.js'

/** Runs `moves` as one optimistic transaction on `redis` (a connection of its own); resolves to the attempts. */
export async function watchTransaction(redis: Redis, moves: readonly Transfer[]): Promise<number> {
  const numbers = touched(moves)
  const keys = numbers.map(accountKey)
  for (let attempts = 1; ; attempts++) {
    await redis.watch(...keys)
    const texts = await redis.mget(...keys)
    const rows = new Map<number, Account>(
      numbers.map((n, i) => [n, JSON.parse(texts[i] ?? 'null') as Account]),
    )
    applyTransfers(rows, moves)
    const multi = redis.multi()
    for (const [n, row] of rows) multi.set(accountKey(n), JSON.stringify(row))
    const done = await multi.exec()
    if (done !== null) return attempts
  }
}
