/**
 * The region's applier (Nami section 2.3): reads the transaction log in tid order, decides each
 * transaction, hands the writes of the applied ones to their partition leaders as `commit`s, and
 * records the outcomes in the log, which advances the region's snapshot watermark.
 *
 * The decision is a function of the log alone, so any applier that replays it decides the same:
 * a transaction of this region is `applied` when every read names, as the version it saw, the
 * key's newest version before the transaction's tid (its reads validated at `tid - 1`: the tid it
 * lists made that version, and no write to the key lies between it and the commit), and no read
 * names a tid above the snapshot; else `conflict`. The snapshot the client sends decides nothing
 * else: a stale read sent with a forged later snapshot conflicts (issue 22). Another region's
 * transaction is always applied (key by key, its version wins only by `(ts, dc)`). A key's newest
 * version is answered by the {@link CommitCache} when it can, else by the partition leader's
 * versions at `tid - 1` (`readAsOf`), which are exact whatever the partition has applied since.
 *
 * With the cache, a round decides a run of transactions in memory (the cache holds the changes of
 * those decided before, in this round and in rounds still being written) and hands their writes to
 * the partitions, and the next round is decided while they are written: rounds are pipelined, each
 * partition takes its commits in tid order (a round's commit to a partition is sent once the
 * previous round's there succeeded), and outcomes are recorded in tid order. Without the cache,
 * every decision reads the partitions at `tid - 1`, so a round is one transaction, stored before
 * the next is decided: Nami's Table 3 compares the two.
 *
 * Replay after a crash is idempotent: a partition returns the entry of a tid it committed before
 * instead of applying it again, and outcomes are decided again the same way.
 */
import { type TxWrite, writesByPartition } from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import type { TxCommit } from '../../storage/partition-replica.js'
import type { AbstractTxLog, TxOutcomeRecord, TxRecord } from '../../storage/tx-log.js'
import { type CachedVersion, CommitCache } from './commit-cache.js'

/** Options of a {@link TxApplier}. */
export interface TxApplierOptions {
  /** The region's transaction log. */
  log: AbstractTxLog
  /** This region. */
  region: number
  /** Number of partitions. */
  partitions: number
  /** The current leader of partition `p` in this region. */
  leader: (p: number) => AbstractPartitionReplica
  /**
   * Transactions the commit cache indexes (Nami: 10,000); `false` decides every transaction from
   * the partitions' versions, one at a time.
   * @default 10000
   */
  commitCache?: number | false
  /**
   * Most transactions decided in one round.
   * @default 512
   */
  batchSize?: number
  /**
   * Rounds decided and being written at once (with the commit cache).
   * @default 4
   */
  maxInFlight?: number
  /**
   * Told about a failed round (a partition down): the round is retried after a pause.
   * @default ignores it
   */
  onError?: (error: unknown) => void
  /**
   * Longest pause between retries of a failed round, in ms (from 20 ms, doubling).
   * @default 1000
   */
  retryMaxMs?: number
}

/** Counters of what the applier did (status, metrics, the benchmark). */
export interface TxApplierStats {
  applied: number
  conflicts: number
  foreign: number
  rounds: number
  /** Decisions the commit cache answered, and reads it sent to the partitions. */
  cacheHits: number
  cacheMisses: number
}

/** See the module comment. */
export class TxApplier {
  readonly #log: AbstractTxLog
  readonly #region: number
  readonly #partitions: number
  readonly #leader: (p: number) => AbstractPartitionReplica
  readonly #cache: CommitCache | undefined
  readonly #batchSize: number
  readonly #maxInFlight: number
  readonly #onError: (error: unknown) => void
  readonly #retryMaxMs: number
  #running: Promise<void> | undefined
  #stopped = false
  #wake: (() => void) | undefined
  #unsubscribe: (() => void) | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  /** The last tid decided (its round may still be being written). */
  #next = 0
  /** Rounds being written, oldest first: each resolves once its outcomes are recorded. */
  #inFlight: Promise<void>[] = []
  /** The recording of the newest round: outcomes are recorded in order. */
  #recorded: Promise<void> = Promise.resolve()
  /** By partition: the commit of the newest round there (the next waits for it). */
  #partitionTails = new Map<number, Promise<unknown>>()
  readonly stats: TxApplierStats = {
    applied: 0,
    conflicts: 0,
    foreign: 0,
    rounds: 0,
    cacheHits: 0,
    cacheMisses: 0,
  }

  constructor(options: TxApplierOptions) {
    this.#log = options.log
    this.#region = options.region
    this.#partitions = options.partitions
    this.#leader = options.leader
    const capacity = options.commitCache ?? 10_000
    this.#cache = capacity === false ? undefined : new CommitCache(capacity)
    this.#batchSize = capacity === false ? 1 : (options.batchSize ?? 512)
    this.#maxInFlight = capacity === false ? 1 : (options.maxInFlight ?? 4)
    this.#onError = options.onError ?? (() => {})
    this.#retryMaxMs = options.retryMaxMs ?? 1000
  }

  /** Whether decisions use the commit cache. */
  get cached(): boolean {
    return this.#cache !== undefined
  }

  /** Starts applying from the log's watermark. */
  start(): void {
    if (this.#running || this.#stopped) return
    this.#reset()
    this.#unsubscribe = this.#log.onAppend(() => this.#poke())
    this.#running = this.#loop()
  }

  /** Stops after the round in progress. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#unsubscribe?.()
    clearTimeout(this.#timer)
    this.#poke()
    await this.#running
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  // Starts deciding again after the last recorded outcome, with an empty cache.
  #reset(): void {
    this.#next = this.#log.appliedTid()
    this.#cache?.reset(this.#next + 1)
    this.#inFlight = []
    this.#recorded = Promise.resolve()
    this.#partitionTails.clear()
  }

  async #loop(): Promise<void> {
    let failures = 0
    while (!this.#stopped) {
      try {
        if (this.#inFlight.length >= this.#maxInFlight) {
          await this.#inFlight.shift()
          continue
        }
        const issued = await this.#round()
        if (issued) {
          failures = 0
          continue
        }
        if (this.#inFlight.length > 0) await this.#inFlight.shift()
        else await this.#idle()
      } catch (error) {
        // A round failed: what it and the rounds after it decided may be half written. Once they
        // have all settled, decide again from the last recorded outcome.
        await Promise.allSettled(this.#inFlight)
        if (this.#stopped) break
        this.#onError(error)
        this.#reset()
        await this.#pause(Math.min(this.#retryMaxMs, 20 * 2 ** failures++))
      }
    }
    await Promise.allSettled(this.#inFlight)
  }

  // Waits for an append (or, for a log other processes append to, a look now and then).
  async #idle(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#wake = resolve
      this.#timer = setTimeout(() => this.#poke(), 1000)
    })
    clearTimeout(this.#timer)
    if (!this.#stopped) await this.#log.refresh().catch(() => undefined)
  }

  #pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve
      this.#timer = setTimeout(() => this.#poke(), ms)
    })
  }

  /**
   * Decides the next run of transactions and starts writing it (with the cache; without, writes it
   * before returning); false when there was none.
   */
  async #round(): Promise<boolean> {
    const from = this.#next
    if (this.#log.lastTid() <= from) return false
    const records = await this.#log.read(from, this.#batchSize)
    if (records.length === 0) return false
    this.#next = records.at(-1)!.tid
    this.stats.rounds++
    const outcomes: TxOutcomeRecord[] = []
    const commits = new Map<number, { commit: TxCommit; outcome: TxOutcomeRecord }[]>()
    for (const record of records) {
      const applied = await this.#decide(record)
      const outcome: TxOutcomeRecord = {
        tid: record.tid,
        outcome: applied ? 'applied' : 'conflict',
        ts: record.ts,
        parts: [],
      }
      outcomes.push(outcome)
      if (!applied) {
        this.stats.conflicts++
        continue
      }
      if (record.foreign) this.stats.foreign++
      else this.stats.applied++
      const changed = await this.#changes(record)
      this.#cache?.record(record.tid, changed, this.#log.appliedTid())
      const parts = new Map(record.foreign?.parts ?? [])
      for (const [p, writes] of writesByPartition(record.writes, this.#partitions)) {
        const commit: TxCommit = { tid: record.tid, ts: record.ts, writes }
        if (record.foreign) {
          const idx = parts.get(p)
          if (idx === undefined)
            throw new Error(`foreign transaction ${record.tid} names no idx for partition ${p}`)
          commit.relay = [record.foreign.region, record.foreign.tid, idx]
        }
        let list = commits.get(p)
        if (list === undefined) commits.set(p, (list = []))
        list.push({ commit, outcome })
      }
    }
    const written = Promise.all(
      [...commits].map(async ([p, list]) => {
        // After the previous round's commit to this partition (a failure stops the ones after it).
        const previous = this.#partitionTails.get(p) ?? Promise.resolve()
        const committing = previous.then(() => this.#leader(p).commit(list.map((c) => c.commit)))
        this.#partitionTails.set(p, committing)
        const entries = await committing
        const byTid = new Map(entries.map((e) => [e.tid, e.idx]))
        for (const { commit, outcome } of list)
          (outcome.parts as [number, number][]).push([p, byTid.get(commit.tid)!])
      }),
    )
    const recording = Promise.all([this.#recorded, written]).then(async () => {
      for (const o of outcomes) (o.parts as [number, number][]).sort((a, b) => a[0] - b[0])
      await this.#log.recordOutcomes(outcomes)
    })
    this.#recorded = recording
    // Settled here too, so a failure is not reported as unhandled before the loop awaits it.
    recording.catch(() => {})
    this.#inFlight.push(recording)
    if (this.#cache === undefined) await this.#inFlight.shift()
    return true
  }

  /**
   * Whether `record` is applied: each key it read has, as its newest version before `tid`, the
   * version the read names (0: none), and no read names a tid above the snapshot.
   */
  async #decide(record: TxRecord): Promise<boolean> {
    if (record.foreign) return true
    const unknown: string[] = []
    for (const [key, seen] of record.reads) {
      if (seen > record.snapshot) return false
      const newest = this.#cache?.newestTid(key)
      if (newest !== undefined) {
        this.stats.cacheHits++
        if (newest !== seen) return false
      } else if (this.#cache !== undefined && seen >= this.#cache.start) {
        // The window lists every change from `start` on, and none by `seen` to this key: that tid
        // never made a version of it.
        this.stats.cacheHits++
        return false
      } else unknown.push(key)
    }
    if (unknown.length === 0) return true
    this.stats.cacheMisses += unknown.length
    const versions = await this.#versionsAt(record.tid - 1, unknown)
    for (const key of unknown) this.#cache?.learn(key, versions.get(key))
    const seen = new Map(record.reads)
    return unknown.every((key) => (versions.get(key)?.tid ?? 0) === seen.get(key))
  }

  /**
   * The versions `record` makes (the cache needs them): every write of this region's own
   * transaction wins (its ts is past everything logged before it); another region's wins by
   * `(ts, dc)` only.
   */
  async #changes(record: TxRecord): Promise<[string, CachedVersion][]> {
    if (this.#cache === undefined) return []
    const dc = record.foreign?.region ?? this.#region
    const made = (write: TxWrite): [string, CachedVersion] => [
      write[0],
      { tid: record.tid, ts: record.ts, dc },
    ]
    if (!record.foreign) return record.writes.map(made)
    const unknown = record.writes.filter(([key]) => this.#cache!.newest(key) === null)
    const stored =
      unknown.length === 0
        ? new Map()
        : await this.#versionsAt(
            record.tid - 1,
            unknown.map(([k]) => k),
          )
    const order = (ts: string, d: number) => `${ts}${d.toString(16).padStart(2, '0')}`
    const mine = order(record.ts, dc)
    return record.writes
      .filter(([key]) => {
        const current = this.#cache!.newest(key) ?? stored.get(key)
        return current === undefined || order(current.ts, current.dc) < mine
      })
      .map(made)
  }

  /** The versions of `keys` at `tid` from their partition leaders, without values. */
  async #versionsAt(
    tid: number,
    keys: readonly string[],
  ): Promise<Map<string, { tid: number; ts: string; dc: number } | undefined>> {
    const byPartition = writesByPartition(
      keys.map((k) => [k, undefined] as const),
      this.#partitions,
    )
    const out = new Map<string, { tid: number; ts: string; dc: number } | undefined>()
    await Promise.all(
      [...byPartition].map(async ([p, group]) => {
        const names = group.map(([k]) => k)
        const { versions } = await this.#leader(p).readAsOf(tid, names, { values: false })
        names.forEach((k, i) => out.set(k, versions[i]))
      }),
    )
    return out
  }
}
