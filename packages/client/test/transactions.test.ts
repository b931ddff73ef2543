/**
 * Transactions in the SDK, against a real cluster: snapshot reads, buffered writes, commits that
 * conflict when a read changed, `runTransaction` retrying them, commits sent again after a lost
 * reply applied once, and the session guarantees across transactions and plain calls.
 */
import { startDevCluster } from '@causeway/gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Causeway, type Transport, connect, fetchTransport } from '../src/index.js'

let cluster: { urls: string[]; close(): Promise<void> }
const clients: Causeway[] = []

beforeAll(async () => {
  cluster = await startDevCluster({
    regions: 1,
    partitions: 4,
    replicas: 3,
    port: 0,
    replicaLagMs: 30,
    sync: false,
    namespaces: { acct: { transactions: true } },
  })
})

afterAll(async () => {
  for (const db of clients) await db.close()
  await cluster?.close()
})

async function client(transport?: Transport): Promise<Causeway> {
  const db = await connect({ url: cluster.urls[0]!, ...(transport ? { transport } : {}) })
  clients.push(db)
  return db
}

let n = 0
const fresh = (name: string) => `acct:${name}:${n++}`

describe('transactions in the SDK', () => {
  it('read at one snapshot, see their own writes, and commit', async () => {
    const db = await client()
    const [a, b] = [fresh('a'), fresh('b')]
    const setup = await db.transaction()
    setup.put(a, { balance: 10 })
    setup.put(b, { balance: 0 })
    expect(await setup.get(a)).toEqual({ balance: 10 })
    const first = await setup.commit()
    expect(first).toEqual({ tid: expect.any(Number), outcome: 'applied' })

    const tx = await db.transaction()
    const [ra, rb] = await Promise.all([tx.get<{ balance: number }>(a), tx.get(b)])
    expect([ra, rb]).toEqual([{ balance: 10 }, { balance: 0 }])
    expect(tx.snapshot).toBeGreaterThanOrEqual(first.tid)
    // Another client moves money meanwhile; this transaction still reads its snapshot.
    const other = await client()
    await other.runTransaction(async (t) => {
      const v = await t.get<{ balance: number }>(a)
      t.put(a, { balance: v!.balance - 1 })
    })
    expect(await tx.get(a)).toEqual({ balance: 10 })
    tx.put(a, { balance: 5 })
    tx.put(b, { balance: 5 })
    expect(await tx.get(a)).toEqual({ balance: 5 })
    const late = await tx.commit()
    expect(late.outcome).toBe('conflict')
    expect(late.tid).toBeGreaterThan(first.tid)
    await expect(tx.get(a)).rejects.toMatchObject({ code: 'INVALID_REQUEST' })
    // Nothing of it was written.
    const check = await db.transaction()
    expect(await check.get(a)).toEqual({ balance: 9 })
    expect(await check.get(b)).toEqual({ balance: 0 })
  })

  it('runTransaction retries conflicts until the transfers all apply, and the money adds up', async () => {
    const accounts = Array.from({ length: 4 }, () => fresh('acct'))
    const db = await client()
    await db.runTransaction((tx) => {
      for (const key of accounts) tx.put(key, 0)
    })
    const workers = await Promise.all(Array.from({ length: 4 }, () => client()))
    let attempts = 0
    await Promise.all(
      workers.map(async (w, i) => {
        for (let round = 0; round < 5; round++)
          await w.runTransaction(
            async (tx) => {
              attempts++
              const from = accounts[(i + round) % accounts.length]!
              const to = accounts[(i + round + 1) % accounts.length]!
              const [x, y] = await Promise.all([tx.get<number>(from), tx.get<number>(to)])
              tx.put(from, x! - 3)
              tx.put(to, y! + 3)
            },
            { retries: 50 },
          )
      }),
    )
    const tx = await db.transaction()
    const values = await Promise.all(accounts.map((k) => tx.get<number>(k)))
    expect(values.reduce((s, v) => s! + v!, 0)).toBe(0)
    // Four workers moving money over four accounts at once do conflict, and retry.
    expect(attempts).toBeGreaterThanOrEqual(20)
  })

  it('gives up with TRANSACTION_CONFLICT after its retries', async () => {
    const db = await client()
    const other = await client()
    const key = fresh('hot')
    await db.runTransaction((tx) => tx.put(key, 0))
    let runs = 0
    await expect(
      db.runTransaction(
        async (tx) => {
          runs++
          const v = await tx.get<number>(key)
          // Someone else always writes the key between the read and the commit.
          await other.runTransaction((t) => t.put(key, runs))
          tx.put(key, v! + 1)
        },
        { retries: 2, backoffMs: 1 },
      ),
    ).rejects.toMatchObject({ code: 'TRANSACTION_CONFLICT', details: { attempts: 3 } })
    expect(runs).toBe(3)
  })

  it('keep the session: plain reads see a transaction’s writes, and later transactions too', async () => {
    const db = await client()
    const key = fresh('s')
    const { tid } = await db
      .runTransaction(async (tx) => {
        tx.put(key, 'v1')
        return { tid: 0 }
      })
      .then(async () => ({ tid: db.session.tid(0) }))
    expect(tid).toBeGreaterThan(0)
    // Read your writes, at any replica (followers lag 30 ms).
    for (const replica of ['follower', 'any', 'leader'] as const)
      expect((await db.get(key, { replica })).value).toBe('v1')
    // A restored session carries the tid: its next transaction reads at least that snapshot.
    const saved = JSON.stringify(db.session)
    const elsewhere = await connect({ url: cluster.urls[0]!, session: saved })
    clients.push(elsewhere)
    const tx = await elsewhere.transaction()
    expect(await tx.get(key)).toBe('v1')
    expect(tx.snapshot).toBeGreaterThanOrEqual(tid)
    // A plain read of a transactional key records its tid in the session.
    const plain = await client()
    await plain.get(key)
    expect(plain.session.tid(0)).toBeGreaterThan(0)
    // Plain writes of transactional keys are refused.
    await expect(db.put(key, 'v2')).rejects.toMatchObject({ code: 'TRANSACTION_REQUIRED' })
  })

  it('sends a commit again when its reply is lost, and it is applied once', async () => {
    const inner = fetchTransport()
    let dropped = 0
    const transport: Transport = {
      async request(req) {
        const res = await inner.request(req)
        // The gateway got the commit and answered; the answer never arrives.
        if (req.url.includes('/v1/tx/commit') && dropped++ === 0)
          throw new TypeError('fetch failed: connection reset')
        return res
      },
    }
    const db = await client(transport)
    const key = fresh('once')
    await db.runTransaction((tx) => tx.put(key, 0))
    dropped = 0
    await db.runTransaction(async (tx) => {
      tx.put(key, ((await tx.get<number>(key)) ?? 0) + 1)
    })
    expect(dropped).toBe(2)
    const tx = await db.transaction()
    expect(await tx.get(key)).toBe(1)
  })

  it('refuses keys outside transactional namespaces', async () => {
    const db = await client()
    const tx = await db.transaction()
    await expect(tx.get('user:1')).rejects.toMatchObject({ code: 'NOT_TRANSACTIONAL' })
    const w = await db.transaction()
    w.put('user:1', 1)
    await expect(w.commit()).rejects.toMatchObject({ code: 'NOT_TRANSACTIONAL' })
    await expect(db.transaction({ minTid: -1 })).rejects.toMatchObject({ code: 'INVALID_OPTION' })
  })
})
