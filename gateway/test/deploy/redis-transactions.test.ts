/**
 * Transactions on the Redis deployment across two regions (`causeway dev --backend redis`, 50 ms
 * apart, gateways shipping over HTTP): a transaction's writes reach the other region as one unit
 * (a snapshot read there holds all of them or none), a session reads its own transaction in the
 * other region, and the partition logs (commit entries included) keep shipping.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { readFile } from 'node:fs/promises'
import { type Causeway, connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseClusterConfig } from '../../src/config/cluster-config.js'
import { startCli, stopCli, urlsOf, type CliProcess } from '../cli/cli-process.js'

let cli: CliProcess
let urls: string[]
let partitions: number
const clients: Causeway[] = []

beforeAll(async () => {
  cli = startCli([
    'dev',
    '--backend',
    'redis',
    '--port',
    '0',
    '--regions',
    '2',
    '--partitions',
    '3',
    '--replicas',
    '2',
    '--wan-delay',
    '50',
    '--transactional',
    'acct',
  ])
  urls = await urlsOf(cli, 2, 60_000)
  const path = /^config (\S+)$/m.exec(cli.stdout())![1]!
  partitions = parseClusterConfig(JSON.parse(await readFile(path, 'utf8')), path).partitions
}, 70_000)

afterAll(async () => {
  for (const db of clients) await db.close()
  if (cli) await stopCli(cli, 'SIGTERM')
})

async function client(region: number): Promise<Causeway> {
  const db = await connect({ url: urls[region]! })
  clients.push(db)
  return db
}

describe('transactions on Redis across regions', () => {
  it('reach the other region as one unit, and a session reads its own there', async () => {
    const keys: string[] = []
    for (let i = 0; new Set(keys.map((k) => partitionOf(k, partitions))).size < partitions; i++)
      keys.push(`acct:u${i}`)
    const writer = await client(0)
    const reader = await client(1)
    const snapshots: unknown[][] = []
    let done = false
    const watching = (async () => {
      const deadline = Date.now() + 20_000
      while (!done && Date.now() < deadline) {
        const tx = await reader.transaction()
        const values = await Promise.all(keys.map((k) => tx.get(k)))
        snapshots.push(values)
        done = values.every((v) => v === 'one')
      }
    })()
    const { outcome } = await writer.runTransaction(async (tx) => {
      for (const key of keys) tx.put(key, 'one')
      return { outcome: 'applied' }
    })
    expect(outcome).toBe('applied')
    await watching
    expect(done).toBe(true)
    for (const values of snapshots) expect(new Set(values).size, JSON.stringify(values)).toBe(1)

    // Read your writes in the other region, in a transaction and in a plain read.
    await writer.runTransaction((tx) => tx.put('acct:ryw', { n: 2 }))
    const there = await writer.transaction({ region: 1, timeoutMs: 10_000 })
    expect(await there.get('acct:ryw')).toEqual({ n: 2 })
    expect((await writer.get('acct:ryw', { region: 1, timeoutMs: 10_000 })).value).toEqual({
      n: 2,
    })
  }, 60_000)

  it('conflicts a stale read committed with a forged later snapshot; refuses tids that made no version', async () => {
    interface Reply {
      tid: number
      outcome?: string
      code?: string
      snapshot: number
      items: { tid: number; value?: unknown }[]
    }
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${urls[0]}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Reply }
    }
    const key = 'acct:forged'
    const base = await post('/v1/tx/commit', {
      snapshot: 0,
      reads: [],
      writes: [{ key, value: 100 }],
    })
    expect(base.body.outcome).toBe('applied')
    const s1 = await post('/v1/tx/read', { keys: [key], minTid: base.body.tid })
    const v1 = s1.body.items[0]!.tid
    expect(v1).toBe(base.body.tid)
    const second = await post('/v1/tx/commit', {
      snapshot: s1.body.snapshot,
      reads: [[key, v1]],
      writes: [{ key, value: 50 }],
    })
    expect(second.body.outcome).toBe('applied')
    const forged = await post('/v1/tx/commit', {
      snapshot: second.body.tid,
      reads: [[key, v1]],
      writes: [{ key, value: 200 }],
    })
    expect([forged.status, forged.body.outcome]).toEqual([200, 'conflict'])
    for (const tid of [forged.body.tid, 0]) {
      const bad = await post('/v1/tx/commit', {
        snapshot: forged.body.tid,
        reads: [[key, tid]],
        writes: [{ key, value: 300 }],
      })
      expect([bad.status, bad.body.code], `tid ${tid}`).toEqual([400, 'INVALID_READ_SET'])
    }
    const now = await post('/v1/tx/read', { keys: [key], minTid: forged.body.tid })
    expect(now.body.items[0]).toMatchObject({ value: 50, tid: second.body.tid })
  }, 30_000)

  it('reads a transactional key after the other region wrote a plain key of its partition (issue 22.7)', async () => {
    // Region 1 relays region 0's transaction (a commit entry of region 1, shipped back to region
    // 0), then takes a plain write of the same partition: the session's read in region 0 needs
    // region 1's log up to the plain write, relay included, which region 0 holds as its own.
    const key = 'acct:echo'
    let plain = ''
    for (let i = 0; plain === ''; i++)
      if (partitionOf(`user:echo${i}`, partitions) === partitionOf(key, partitions))
        plain = `user:echo${i}`
    const db = await client(0)
    const other = await client(1)
    await db.runTransaction((tx) => tx.put(key, 100))
    // The relay is made in region 1 before the plain write there (a read in region 1 by another
    // session, with no vector, sees the transaction only once it is relayed).
    const deadline = Date.now() + 20_000
    while ((await other.get(key, { read: 'eventual' })).value !== 100) {
      if (Date.now() > deadline) throw new Error('region 1 never relayed the transaction')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await db.put(plain, 'x', { region: 1 })
    const read = await db.get(key, { timeoutMs: 5000 })
    expect(read.value).toBe(100)
  }, 60_000)
})
