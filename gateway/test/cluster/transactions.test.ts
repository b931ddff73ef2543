import { HLC_ZERO, type TxWrite, sortWrites } from '@causeway/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { EmbeddedCluster } from '../../src/cluster/embedded-cluster.js'
import type { TransactionService } from '../../src/cluster/transactions/transaction-service.js'

const clusters: EmbeddedCluster[] = []
afterEach(async () => {
  for (const c of clusters.splice(0)) await c.close()
})

async function start(options: { commitCache?: number | false; regions?: number } = {}) {
  const cluster = await EmbeddedCluster.start({
    regions: options.regions ?? 1,
    partitions: 4,
    replicas: 2,
    sync: false,
    namespaces: { acct: { transactions: true }, plain: { conflicts: 'lww' } },
    ...(options.commitCache === undefined ? {} : { commitCache: options.commitCache }),
  })
  clusters.push(cluster)
  return { cluster, tx: cluster.service(0).transactions! }
}

function writes(w: Record<string, unknown>): TxWrite[] {
  return sortWrites(
    Object.entries(w).map(([k, v]) => [k, v === undefined ? undefined : JSON.stringify(v)]),
  )
}

async function commit(
  tx: TransactionService,
  snapshot: number,
  reads: [string, number][],
  w: Record<string, unknown>,
) {
  return tx.commit({
    snapshot,
    reads: reads.sort(([a], [b]) => (a < b ? -1 : 1)),
    writes: writes(w),
    dt: HLC_ZERO,
    durability: 'leader',
    timeoutMs: 5000,
  })
}

describe.each([10_000, false] as const)('transactions in one region (commit cache %s)', (cache) => {
  it('applies a transaction whose reads are current, and refuses one whose reads changed', async () => {
    const { tx } = await start({ commitCache: cache })
    const first = await commit(tx, 0, [], { 'acct:a': 10, 'acct:b': 0 })
    expect(first).toMatchObject({ tid: 1, outcome: 'applied' })
    expect(first.parts.length).toBeGreaterThan(0)
    const read = await tx.read({ keys: ['acct:a', 'acct:b', 'acct:c'], timeoutMs: 1000 })
    expect(read.snapshot).toBe(1)
    expect(read.items.map((i) => i.version?.value)).toEqual(['10', '0', undefined])
    expect(read.items.map((i) => i.version?.tid ?? 0)).toEqual([1, 1, 0])
    const reads: [string, number][] = [
      ['acct:a', 1],
      ['acct:b', 1],
    ]
    // Two transactions read the same snapshot and both move money: the second conflicts.
    const t1 = await commit(tx, 1, [...reads], { 'acct:a': 5, 'acct:b': 5 })
    const t2 = await commit(tx, 1, [...reads], { 'acct:a': 0, 'acct:b': 10 })
    expect(t1).toMatchObject({ tid: 2, outcome: 'applied' })
    expect(t2).toMatchObject({ tid: 3, outcome: 'conflict', parts: [] })
    const after = await tx.read({ keys: ['acct:a', 'acct:b'], timeoutMs: 1000 })
    expect(after.snapshot).toBe(3)
    expect(after.items.map((i) => i.version?.value)).toEqual(['5', '5'])
    // A snapshot reads what it read before, however much was applied since.
    const old = await tx.read({ keys: ['acct:a'], snapshot: 1, timeoutMs: 1000 })
    expect(old.items[0]!.version?.value).toBe('10')
  })

  it('does not call a blind write a conflict, nor a read of a key nobody wrote since', async () => {
    const { tx } = await start({ commitCache: cache })
    await commit(tx, 0, [], { 'acct:a': 1, 'acct:b': 1 })
    await commit(tx, 1, [['acct:a', 1]], { 'acct:a': 2 })
    // Read at 1: acct:b did not change since, acct:a did.
    expect(await commit(tx, 1, [['acct:b', 1]], { 'acct:c': 1 })).toMatchObject({
      outcome: 'applied',
    })
    expect(await commit(tx, 1, [['acct:a', 1]], { 'acct:c': 2 })).toMatchObject({
      outcome: 'conflict',
    })
    expect(await commit(tx, 0, [], { 'acct:a': 9 })).toMatchObject({ outcome: 'applied' })
  })

  it('conflicts a stale read committed with a forged later snapshot (issue 22: lost update)', async () => {
    const { tx } = await start({ commitCache: cache })
    const first = await commit(tx, 0, [], { 'acct:x': 100 })
    const s1 = (await tx.read({ keys: ['acct:x'], timeoutMs: 1000 })).snapshot
    expect([s1, first.tid]).toEqual([1, 1])
    // A second client read at s1 too and commits first.
    const t2 = await commit(tx, s1, [['acct:x', 1]], { 'acct:x': 50 })
    expect(t2).toMatchObject({ tid: 2, outcome: 'applied' })
    // The first client's stale read, sent with the later snapshot: its read is no longer current.
    const forged = await commit(tx, t2.tid, [['acct:x', 1]], { 'acct:x': 200 })
    expect(forged.outcome).toBe('conflict')
    // Sent honestly, the same stale read conflicts as well.
    expect((await commit(tx, s1, [['acct:x', 1]], { 'acct:x': 300 })).outcome).toBe('conflict')
    const now = await tx.read({ keys: ['acct:x'], timeoutMs: 1000 })
    expect(now.items[0]!.version?.value).toBe('50')
  })

  it('refuses a read naming a tid that never made a version of the key (INVALID_READ_SET)', async () => {
    const { tx } = await start({ commitCache: cache })
    await commit(tx, 0, [], { 'acct:x': 100, 'acct:y': 1 })
    await commit(tx, 1, [['acct:x', 1]], { 'acct:x': 50 })
    const conflicted = await commit(tx, 1, [['acct:x', 1]], { 'acct:x': 60 })
    expect(conflicted).toMatchObject({ tid: 3, outcome: 'conflict' })
    await commit(tx, 3, [], { 'acct:y': 2 })
    const last = 4
    const cases: [string, number, [string, number][]][] = [
      ['a conflicted transaction’s tid', last, [['acct:x', 3]]],
      ['0 for a key that exists at the snapshot', last, [['acct:x', 0]]],
      ['the tid of a transaction that wrote another key', last, [['acct:x', 4]]],
    ]
    for (const [what, snapshot, reads] of cases)
      await expect(commit(tx, snapshot, reads, { 'acct:x': 999 }), what).rejects.toMatchObject({
        code: 'INVALID_READ_SET',
      })
    // Nothing of them reached the log.
    expect((await tx.read({ keys: ['acct:x'], timeoutMs: 1000 })).snapshot).toBe(last)
    // An honest read of the current version still commits; so does 0 for a key that has none.
    expect(
      await commit(
        tx,
        last,
        [
          ['acct:x', 2],
          ['acct:z', 0],
        ],
        { 'acct:x': 51 },
      ),
    ).toMatchObject({ tid: last + 1, outcome: 'applied' })
  })

  it('refuses keys outside transactional namespaces, and plain writes of transactional keys', async () => {
    const { cluster, tx } = await start({ commitCache: cache })
    await expect(commit(tx, 0, [], { 'plain:x': 1 })).rejects.toMatchObject({
      code: 'NOT_TRANSACTIONAL',
    })
    await expect(tx.read({ keys: ['x'], timeoutMs: 100 })).rejects.toMatchObject({
      code: 'NOT_TRANSACTIONAL',
    })
    await expect(
      cluster.service(0).write({
        key: 'acct:x',
        partition: 0,
        value: '1',
        dt: HLC_ZERO,
        durability: 'leader',
        level: 'session',
      }),
    ).rejects.toMatchObject({ code: 'TRANSACTION_REQUIRED' })
    await expect(tx.read({ keys: ['acct:a'], minTid: 5, timeoutMs: 100 })).rejects.toMatchObject({
      code: 'TID_UNREACHABLE',
    })
  })

  it('serves plain reads of transactional keys at the newest snapshot, with the version’s tid', async () => {
    const { cluster, tx } = await start({ commitCache: cache })
    const { parts } = await commit(tx, 0, [], { 'acct:a': { n: 1 } })
    const read = await cluster.service(0).read({
      key: 'acct:a',
      partition: parts[0]!.p,
      replica: 'any',
      timeoutMs: 1000,
      level: 'session',
    })
    expect(read).toMatchObject({ version: { value: '{"n":1}', dc: 0 }, tid: 1, replica: 0 })
  })
})

describe('old versions', () => {
  it('are collected behind the oldest open snapshot; a read at a collected one is SNAPSHOT_TOO_OLD', async () => {
    const cluster = await EmbeddedCluster.start({
      regions: 1,
      partitions: 2,
      replicas: 2,
      sync: false,
      namespaces: { acct: { transactions: true } },
      // Room for a loaded machine: at idleMs 150 and maxAgeMs 400 a 150 ms stall between two of
      // the reads below (or 400 ms for all of them) let the snapshot be collected under them.
      snapshots: { idleMs: 1000, maxAgeMs: 20_000 },
      collectEveryMs: 25,
    })
    clusters.push(cluster)
    const tx = cluster.service(0).transactions!
    const write = (n: number) =>
      tx.commit({
        snapshot: 0,
        reads: [],
        writes: writes({ 'acct:x': n }),
        dt: HLC_ZERO,
        durability: 'leader',
        timeoutMs: 5000,
      })
    await write(1)
    // A transaction reads at snapshot 1 and keeps reading: its snapshot stays open.
    const open = await tx.read({ keys: ['acct:x'], timeoutMs: 1000 })
    expect(open.snapshot).toBe(1)
    for (let n = 2; n <= 6; n++) await write(n)
    // Reads 300 ms apart keep it open past idleMs (1.2 s in all).
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300))
      const again = await tx.read({ keys: ['acct:x'], snapshot: 1, timeoutMs: 1000 })
      expect(again.items[0]!.version?.value).toBe('1')
    }
    // Once it is idle past idleMs, the region collects behind the newest snapshot.
    const leaders = [0, 1].map((p) => cluster.replica(0, p, 0))
    const followers = [0, 1].map((p) => cluster.replica(0, p, 1))
    await vi.waitUntil(() => [...leaders, ...followers].every((r) => r.txFloor() >= 6), {
      timeout: 20_000,
      interval: 20,
    })
    await expect(tx.read({ keys: ['acct:x'], snapshot: 1, timeoutMs: 1000 })).rejects.toMatchObject(
      { code: 'SNAPSHOT_TOO_OLD' },
    )
    expect((await tx.read({ keys: ['acct:x'], timeoutMs: 1000 })).items[0]!.version?.value).toBe(
      '6',
    )
  })
})

describe('causal shipping', () => {
  it('is refused with transactional namespaces (transactions do not follow it yet)', async () => {
    await expect(
      EmbeddedCluster.start({
        regions: 2,
        partitions: 2,
        replicas: 1,
        sync: false,
        shipping: 'causal',
        namespaces: { acct: { transactions: true } },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTION', details: { option: 'shipping' } })
  })
})
