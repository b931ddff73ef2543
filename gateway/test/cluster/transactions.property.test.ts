/**
 * The applier, checked on generated histories (fast-check): concurrent transactions read at
 * snapshots (some behind the newest) and commit in an interleaved order. Then:
 *
 * - the applied ones are serializable in tid order: replayed one after the other on a model, each
 *   read what the model held just before its tid, and the partitions end as the model does;
 * - the outcomes are exactly the rule: applied if and only if, for every key it read, the tid its
 *   read names is at most its snapshot and is the newest applied version of the key before its
 *   tid (0: none). Commits are honest or forged (issue 22): a later snapshot than the reads were
 *   made at, a stale version's tid, a tid that never made a version of the key, 0 for a key that
 *   has one, a tid above the snapshot; the log takes them all (the route's checks are bypassed), so
 *   the applier alone must decide them;
 * - every replica decides the same: the same log replayed by an applier without the commit cache,
 *   by one with a cache of a single transaction, and by one that starts after a crash left some
 *   partitions ahead of the recorded outcomes, records the same outcomes and ends in the same state;
 * - followers applying their leader's log read the same at every snapshot.
 *
 * Negative controls: the same checker, given an applier that ignores conflicts or one that trusts
 * the snapshot a commit names (the bug of issue 22), reports a violation.
 */
import { HLC_ZERO, type TxRead, type TxWrite, partitionOf, sortWrites } from '@causeway/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { TxApplier } from '../../src/cluster/transactions/tx-applier.js'
import { LevelPartitionReplica } from '../../src/storage/level/level-replica.js'
import { LevelTxLog } from '../../src/storage/level/level-tx-log.js'
import type { TxOutcomeRecord, TxRecord } from '../../src/storage/tx-log.js'

const PARTITIONS = 3
const KEYS = ['acct:a', 'acct:b', 'acct:c', 'acct:d', 'acct:e']

/** A region's machinery in memory: its log, its partition leaders, an applier. */
class Region {
  readonly log: LevelTxLog
  readonly leaders = Array.from(
    { length: PARTITIONS },
    (_, p) =>
      new LevelPartitionReplica({ region: 0, partition: p, replica: 0, regions: 1, sync: false }),
  )
  applier: TxApplier | undefined

  constructor(log?: LevelTxLog) {
    this.log = log ?? new LevelTxLog({ region: 0, regions: 1, sync: false })
  }

  async open(): Promise<this> {
    await this.log.open()
    await Promise.all(this.leaders.map((l) => l.open()))
    return this
  }

  start(commitCache: number | false): void {
    this.applier = new TxApplier({
      log: this.log,
      region: 0,
      partitions: PARTITIONS,
      leader: (p) => this.leaders[p]!,
      commitCache,
      batchSize: 4,
    })
    this.applier.start()
  }

  async settle(): Promise<void> {
    if (this.log.appliedTid() >= this.log.lastTid()) return
    await new Promise<void>((resolve) => {
      const off = this.log.onOutcomes(() => {
        if (this.log.appliedTid() >= this.log.lastTid()) {
          off()
          resolve()
        }
      })
    })
  }

  async outcomes(): Promise<TxOutcomeRecord['outcome'][]> {
    const all = await this.log.readOutcomes(0, 10_000)
    return all.map((o) => o.outcome)
  }

  async state(tid: number): Promise<(string | undefined)[]> {
    return Promise.all(
      KEYS.map(async (key) => {
        const { versions } = await this.leaders[partitionOf(key, PARTITIONS)]!.readAsOf(tid, [key])
        return versions[0]?.value
      }),
    )
  }

  async close(): Promise<void> {
    await this.applier?.stop()
    await Promise.all(this.leaders.map((l) => l.close()))
    await this.log.close()
  }
}

/** How a commit lies about its reads (issue 22). */
type Forgery = 'honest' | 'later-snapshot' | 'stale-tid' | 'any-tid' | 'zero-tid' | 'above-snapshot'

interface GeneratedTx {
  lag: number
  reads: string[]
  writes: string[]
  forge: Forgery
  /** Which read it forges, and the tid an `any-tid` read names (both modulo what fits). */
  pick: number
}

const txArb = fc.record({
  lag: fc.nat(3),
  reads: fc.subarray(KEYS),
  writes: fc.subarray(KEYS, { minLength: 1 }),
  forge: fc.constantFrom<Forgery>(
    'honest',
    'honest',
    'honest',
    'later-snapshot',
    'stale-tid',
    'any-tid',
    'zero-tid',
    'above-snapshot',
  ),
  pick: fc.nat(1000),
})

// A history: transactions, and an order in which each begins (reads) before it commits.
const historyArb = fc.array(txArb, { minLength: 1, maxLength: 14 }).chain((txs) =>
  fc
    .shuffledSubarray(
      txs.flatMap((_, i) => [`b${i}`, `c${i}`, 's']),
      { minLength: txs.length * 2 },
    )
    .map((steps) => ({ txs, steps: order(steps, txs.length) })),
)

// Keeps each commit after its begin (and every tx's steps present), settles sprinkled in.
function order(steps: string[], n: number): string[] {
  const out: string[] = []
  const begun = new Set<number>()
  const pending = new Set<number>()
  for (const step of steps) {
    if (step === 's') out.push(step)
    else if (step[0] === 'b') {
      begun.add(Number(step.slice(1)))
      out.push(step)
      const i = Number(step.slice(1))
      if (pending.delete(i)) out.push(`c${i}`)
    } else {
      const i = Number(step.slice(1))
      if (begun.has(i)) out.push(step)
      else pending.add(i)
    }
  }
  for (let i = 0; i < n; i++) {
    if (!begun.has(i)) out.push(`b${i}`)
    if (!out.includes(`c${i}`)) out.push(`c${i}`)
  }
  return out
}

async function runHistory(
  region: Region,
  txs: GeneratedTx[],
  steps: string[],
): Promise<{ snapshot: number; reads: Map<string, { tid: number; value?: string }> }[]> {
  const begun: { snapshot: number; reads: Map<string, { tid: number; value?: string }> }[] = []
  for (const step of steps) {
    if (step === 's') {
      await region.settle()
      continue
    }
    const i = Number(step.slice(1))
    const tx = txs[i]!
    if (step[0] === 'b') {
      const snapshot = Math.max(0, region.log.appliedTid() - tx.lag)
      const reads = new Map<string, { tid: number; value?: string }>()
      for (const key of tx.reads) {
        const { versions } = await region.leaders[partitionOf(key, PARTITIONS)]!.readAsOf(
          snapshot,
          [key],
        )
        const v = versions[0]
        reads.set(key, { tid: v?.tid ?? 0, ...(v?.value === undefined ? {} : { value: v.value }) })
      }
      begun[i] = { snapshot, reads }
    } else {
      const { snapshot: readAt, reads } = begun[i]!
      const readSet: [string, number][] = [...reads].map(([k, { tid }]) => [k, tid])
      readSet.sort(([a], [b]) => (a < b ? -1 : 1))
      const snapshot = await forge(region, tx, readAt, readSet)
      const writes: TxWrite[] = sortWrites(tx.writes.map((k) => [k, JSON.stringify(`t${i}:${k}`)]))
      // Not awaited for its outcome: commits pile up while the applier works.
      await region.log.append({ snapshot, reads: readSet as TxRead[], writes, dt: HLC_ZERO })
    }
  }
  await region.settle()
  return begun
}

/**
 * Makes the commit `tx.forge` says out of an honest one (read at `readAt`): changes `readSet` in
 * place and resolves to the snapshot the commit names. Every forgery but `above-snapshot` names
 * the newest tid of the log as its snapshot, as a client that wants its stale reads to pass would.
 */
async function forge(
  region: Region,
  tx: GeneratedTx,
  readAt: number,
  readSet: [string, number][],
): Promise<number> {
  if (tx.forge === 'honest') return readAt
  const later = Math.max(readAt, region.log.lastTid())
  if (tx.forge === 'later-snapshot' || readSet.length === 0) return later
  const read = readSet[tx.pick % readSet.length]!
  switch (tx.forge) {
    case 'stale-tid': {
      // The version before the one read: a tid that did make a version of the key.
      if (read[1] > 0) {
        const leader = region.leaders[partitionOf(read[0], PARTITIONS)]!
        read[1] = (await leader.readAsOf(read[1] - 1, [read[0]])).versions[0]?.tid ?? 0
      }
      return later
    }
    case 'any-tid':
      read[1] = tx.pick % (later + 1)
      return later
    case 'zero-tid':
      read[1] = 0
      return later
    case 'above-snapshot':
      read[1] = readAt + 1 + (tx.pick % 3)
      return readAt
  }
}

/**
 * The checker: the applied transactions are serializable in tid order, each outcome is exactly
 * the rule, and the partitions end as the model does. Throws on the first violation.
 */
async function checkModel(region: Region): Promise<void> {
  const log = region.log
  const records = await (log instanceof BrokenLog ? log.truth() : log.read(0, 10_000))
  const outcomes = await region.outcomes()
  expect(outcomes).toHaveLength(records.length)
  const model = new Map<string, { tid: number; value: string | undefined }>()
  records.forEach((r, n) => {
    const valid = r.reads.every(
      ([key, seen]) => seen <= r.snapshot && (model.get(key)?.tid ?? 0) === seen,
    )
    expect(outcomes[n], `tid ${r.tid}`).toBe(valid ? 'applied' : 'conflict')
    if (outcomes[n] !== 'applied') return
    for (const [key, seen] of r.reads)
      expect(model.get(key)?.tid ?? 0, `tid ${r.tid} read ${key}`).toBe(seen)
    for (const [key, value] of r.writes) model.set(key, { tid: r.tid, value })
  })
  expect(await region.state(region.log.appliedTid())).toEqual(KEYS.map((k) => model.get(k)?.value))
}

/**
 * A log that hands its applier altered records, making of the real {@link TxApplier} a broken one
 * for the negative controls (production code untouched): `ignore-conflicts` drops every read set
 * (nothing ever conflicts), `trust-snapshot` replaces each read's tid with the version its key had
 * at the snapshot the commit names (what deciding against the client's snapshot does: issue 22).
 */
class BrokenLog extends LevelTxLog {
  leaders: readonly LevelPartitionReplica[] = []

  constructor(readonly broken: 'ignore-conflicts' | 'trust-snapshot') {
    super({ region: 0, regions: 1, sync: false })
  }

  /** The records as they were appended, for the checker. */
  truth(): Promise<TxRecord[]> {
    return super.read(0, 10_000)
  }

  override async read(afterTid: number, limit: number): Promise<TxRecord[]> {
    const records = await super.read(afterTid, limit)
    if (this.broken === 'ignore-conflicts') return records.map((r) => ({ ...r, reads: [] }))
    return Promise.all(
      records.map(async (r) => {
        const at = Math.min(r.snapshot, r.tid - 1)
        const reads = await Promise.all(
          r.reads.map(async ([key]): Promise<TxRead> => {
            const leader = this.leaders[partitionOf(key, PARTITIONS)]!
            return [key, (await leader.readAsOf(at, [key])).versions[0]?.tid ?? 0]
          }),
        )
        return { ...r, reads }
      }),
    )
  }
}

// Copies the records of `from` into the log of `to`, one by one with the same tids.
async function copyLog(from: Region, to: Region): Promise<TxRecord[]> {
  const records = await from.log.read(0, 10_000)
  for (const r of records)
    await to.log.append({ snapshot: r.snapshot, reads: r.reads, writes: r.writes, dt: HLC_ZERO })
  return records
}

describe('the applier on generated histories', () => {
  it(
    'applies a serializable history in tid order, by the rule, and every replica decides the same',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          historyArb,
          fc.integer({ min: 1, max: 4 }),
          async ({ txs, steps }, cache) => {
            const main = await new Region().open()
            main.start(cache)
            const others: Region[] = []
            try {
              await runHistory(main, txs, steps)
              // Serializable in tid order, and exactly the rule.
              await checkModel(main)
              const outcomes = await main.outcomes()
              const last = main.log.appliedTid()

              // The same log, decided by other appliers: no cache, a one-transaction cache.
              for (const commitCache of [false, 1] as const) {
                const replay = await new Region().open()
                others.push(replay)
                await copyLog(main, replay)
                replay.start(commitCache)
                await replay.settle()
                expect(await replay.outcomes()).toEqual(outcomes)
                for (let tid = 0; tid <= last; tid++)
                  expect(await replay.state(tid), `at ${tid}`).toEqual(await main.state(tid))
              }

              // A crash left partitions ahead of the outcomes, each by its own amount (a partition
              // takes its commits in tid order): replaying is idempotent.
              const crashed = await new Region().open()
              others.push(crashed)
              const copied = await copyLog(main, crashed).then(() => crashed.log.read(0, 10_000))
              for (let p = 0; p < PARTITIONS; p++) {
                const cut = Math.floor((copied.length * (p + 1)) / (PARTITIONS + 1))
                for (const r of copied.slice(0, cut)) {
                  if (outcomes[r.tid - 1] !== 'applied') continue
                  const writes = r.writes.filter(([key]) => partitionOf(key, PARTITIONS) === p)
                  if (writes.length > 0)
                    await crashed.leaders[p]!.commit([{ tid: r.tid, ts: r.ts, writes }])
                }
              }
              crashed.start(cache)
              await crashed.settle()
              expect(await crashed.outcomes()).toEqual(outcomes)
              expect(await crashed.state(last)).toEqual(await main.state(last))

              // Followers applying their leaders' logs read the same at every snapshot.
              for (const leader of main.leaders) {
                const follower = new LevelPartitionReplica({
                  region: 0,
                  partition: leader.partition,
                  replica: 1,
                  regions: 1,
                  sync: false,
                })
                await follower.open()
                await follower.apply(await leader.readLog(0, 0, 10_000))
                for (let tid = 0; tid <= last; tid++)
                  expect((await follower.readAsOf(tid, KEYS)).versions).toEqual(
                    (await leader.readAsOf(tid, KEYS)).versions,
                  )
                await follower.close()
              }
            } finally {
              await main.close()
              for (const o of others) await o.close()
            }
          },
        ),
        {
          timeout: 5000,
          numRuns: Number(process.env.RUNS ?? 40),
          ...(process.env.SEED ? { seed: Number(process.env.SEED) } : {}),
        },
      )
    },
    Number(process.env.TMO ?? 120_000),
  )
})

describe('negative controls: the checker catches a broken applier', () => {
  it.each(['ignore-conflicts', 'trust-snapshot'] as const)(
    'reports a violation when the applier is made to %s',
    async (broken) => {
      const result = await fc.check(
        fc.asyncProperty(historyArb, async ({ txs, steps }) => {
          const log = new BrokenLog(broken)
          const region = new Region(log)
          log.leaders = region.leaders
          await region.open()
          region.start(10_000)
          try {
            await runHistory(region, txs, steps)
            await checkModel(region)
          } finally {
            await region.close()
          }
        }),
        { numRuns: 200, endOnFailure: true, seed: Number(process.env.SEED ?? 22) },
      )
      expect(result.failed, 'the checker found no violation').toBe(true)
    },
    Number(process.env.TMO ?? 120_000),
  )

  it('reports the lost update of issue 22 when the applier trusts the snapshot', async () => {
    const log = new BrokenLog('trust-snapshot')
    const region = new Region(log)
    log.leaders = region.leaders
    await region.open()
    region.start(10_000)
    try {
      const x = 'acct:a'
      await region.log.append({ snapshot: 0, reads: [], writes: [[x, '100']], dt: HLC_ZERO })
      await region.log.append({ snapshot: 1, reads: [[x, 1]], writes: [[x, '50']], dt: HLC_ZERO })
      // The stale read of tid 1, sent with snapshot 2.
      await region.log.append({ snapshot: 2, reads: [[x, 1]], writes: [[x, '200']], dt: HLC_ZERO })
      await region.settle()
      expect(await region.outcomes()).toEqual(['applied', 'applied', 'applied'])
      await expect(checkModel(region)).rejects.toThrow(/tid 3/)
    } finally {
      await region.close()
    }
  })
})
