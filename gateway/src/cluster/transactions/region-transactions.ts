/**
 * The {@link TransactionService} of one region: transactional reads at a snapshot of the region's
 * transaction log, commits appended to it, and plain reads of transactional keys, over the
 * partition leaders (which hold the versions by tid) and the log (whose recorded outcomes are the
 * snapshot watermark). The region's applier (`tx-applier.ts`) runs beside it.
 *
 * Reads are served by partition leaders: the applier writes a transaction's partitions before it
 * records the outcome, so once the watermark has passed a tid every leader has what the
 * transaction wrote, and a read at a snapshot at most the watermark sees all of a transaction or
 * none of it, whichever partitions it spans.
 *
 * A snapshot the region picks covers the session: at least its tid of this region (`minTid`), and,
 * for every partition whose vector it sends (`after`), what that vector covers: the leader waits
 * until it has applied the vector and made visible (relayed) the other regions' transactions in
 * it, and the snapshot is at least the leader's newest committed tid then.
 */
import {
  CausewayError,
  type Limits,
  type Namespaces,
  type ReadNeed,
  SessionNotAvailableError,
  checkNamespaces,
  isTransactionalKey,
  partitionOf,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import { CoverageWaiters } from '../../storage/coverage-waiters.js'
import type { AbstractTxLog, TxOutcomeRecord } from '../../storage/tx-log.js'
import type { ReadRequest, ReadResult } from '../cluster-service.js'
import { ReplicaRouter } from '../replica-router.js'
import { OpenSnapshots, type OpenSnapshotsOptions } from './open-snapshots.js'
import type {
  TransactionService,
  TxCommitRequest,
  TxCommitResult,
  TxReadItem,
  TxReadRequest,
  TxReadResult,
} from './transaction-service.js'

/** Options of {@link RegionTransactions}. */
export interface RegionTransactionsOptions {
  region: number
  regionNames: readonly string[]
  limits: Limits
  namespaces?: Namespaces
  /** `replicas[p][i]`: this region's replicas of partition `p`; replica 0 is the leader. */
  replicas: readonly (readonly AbstractPartitionReplica[])[]
  /** The region's transaction log. */
  log: AbstractTxLog
  /** What the origin leaders have written, when known (as `RegionServiceOptions.written`). */
  written?: (d: number, p: number) => number | undefined
  /** How long a `majority` commit waits for the followers. @default limits.defaultTimeoutMs */
  majorityTimeoutMs?: number
  /** The region's wall clock. @default Date.now */
  now?: () => number
  /** How long snapshots stay open for transactions (`open-snapshots.ts`). */
  snapshots?: OpenSnapshotsOptions
  /**
   * How often to publish this process's oldest open snapshot and collect versions behind the
   * region's oldest, in ms (0: never).
   * @default 1000
   */
  collectEveryMs?: number
  /**
   * Whether this process collects (one per region: the applier's; the others only publish).
   * @default always
   */
  collects?: () => boolean
  /** Told about a failed collection (retried at the next period). @default ignores it */
  onError?: (error: unknown) => void
}

/** See the module comment. */
export class RegionTransactions implements TransactionService {
  readonly region: number
  readonly #options: RegionTransactionsOptions
  readonly #router: ReplicaRouter
  readonly #log: AbstractTxLog
  readonly #namespaces: Namespaces
  readonly #snapshots: OpenSnapshots
  /** Reads and commits waiting for the watermark. */
  readonly #applied = new CoverageWaiters()
  /** Commits waiting for their outcome, by tid. */
  readonly #waiting = new Map<number, ((o: TxOutcomeRecord) => void)[]>()
  readonly #unsubscribe: () => void
  /** This process's name in the published open snapshots. */
  readonly #token = `gw-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`
  #collector: ReturnType<typeof setInterval> | undefined
  /** The watermark at each collection, the oldest first (the ones of the last two periods). */
  readonly #watermarks: { at: number; tid: number }[] = []
  #collecting: Promise<void> | undefined

  constructor(options: RegionTransactionsOptions) {
    this.region = options.region
    this.#options = options
    this.#router = new ReplicaRouter(options)
    this.#log = options.log
    this.#namespaces = checkNamespaces(options.namespaces)
    this.#snapshots = new OpenSnapshots(options.snapshots)
    this.#unsubscribe = this.#log.onOutcomes((outcomes) => this.#decided(outcomes))
    const every = options.collectEveryMs ?? 1000
    if (every > 0) {
      this.#collector = setInterval(() => void this.collect(), every)
      this.#collector.unref()
    }
  }

  /** Stops collecting; waiting reads and commits resolve as timed out. */
  async close(): Promise<void> {
    clearInterval(this.#collector)
    this.#unsubscribe()
    this.#applied.closeAll()
    await this.#collecting
  }

  /** The region's snapshot watermark: the highest tid decided and applied. */
  watermark(): number {
    return this.#log.appliedTid()
  }

  async read(request: TxReadRequest): Promise<TxReadResult> {
    this.#checkKeys(request.keys)
    const deadline = Date.now() + request.timeoutMs
    let snapshot: number
    if (request.snapshot !== undefined) {
      await this.#checkReachable(request.snapshot, 'snapshot')
      snapshot = request.snapshot
      await this.#awaitApplied(snapshot, deadline, request.timeoutMs)
    } else {
      const minTid = request.minTid ?? 0
      await this.#checkReachable(minTid, 'minTid')
      const covered = await Promise.all(
        [...(request.after ?? [])].map(([p, need]) =>
          this.#cover(p, need, deadline, request.timeoutMs),
        ),
      )
      const target = Math.max(minTid, ...covered)
      await this.#awaitApplied(target, deadline, request.timeoutMs)
      snapshot = this.#log.appliedTid()
    }
    this.#snapshots.touch(snapshot)
    const byPartition = new Map<number, number[]>()
    request.keys.forEach((key, i) => {
      const p = partitionOf(key, this.#options.replicas.length)
      let list = byPartition.get(p)
      if (list === undefined) byPartition.set(p, (list = []))
      list.push(i)
    })
    const items = new Array<TxReadItem>(request.keys.length)
    await Promise.all(
      [...byPartition].map(async ([p, indexes]) => {
        const leader = this.#router.activeLeader(p)
        const { versions, sv } = await leader.readAsOf(
          snapshot,
          indexes.map((i) => request.keys[i]!),
        )
        const epoch = leader.epoch()
        indexes.forEach((i, n) => {
          const version = versions[n]
          const item: TxReadItem = { key: request.keys[i]!, p, version, epoch }
          if (version !== undefined) item.idx = sv[version.dc] ?? 0
          items[i] = item
        })
      }),
    )
    return { snapshot, items }
  }

  async commit(request: TxCommitRequest): Promise<TxCommitResult> {
    this.#checkKeys([...request.reads.map(([k]) => k), ...request.writes.map(([k]) => k)])
    await this.#router.checkDependency(request.dt)
    if (request.snapshot > this.#log.appliedTid()) {
      await this.#log.refresh()
      await this.#checkReachable(request.snapshot, 'snapshot')
    }
    const deadline = Date.now() + request.timeoutMs
    await this.#checkReads(request, deadline)
    const op = request.op && {
      namespace: '',
      id: request.op.id,
      fingerprint: request.op.fingerprint,
      ...(request.op.tenant === undefined ? {} : { tenant: request.op.tenant }),
    }
    const appended = await this.#log.append(
      { snapshot: request.snapshot, reads: request.reads, writes: request.writes, dt: request.dt },
      op,
    )
    const tid = 'replayed' in appended ? appended.replayed.idx : appended.tid
    const outcome = await this.#outcome(tid, deadline)
    const parts = outcome.parts.map(([p, idx]) => ({
      p,
      idx,
      epoch: this.#router.leader(p).epoch(),
    }))
    if (request.durability === 'majority')
      await Promise.all(parts.map(({ p, idx }) => this.#router.majority(p, idx)))
    const result: TxCommitResult = { tid, outcome: outcome.outcome, ts: outcome.ts, parts }
    if ('replayed' in appended) result.replayed = true
    return result
  }

  async readLatest(request: ReadRequest): Promise<ReadResult> {
    const started = performance.now()
    const deadline = Date.now() + request.timeoutMs
    const p = request.partition
    const target = request.need
      ? await this.#cover(p, request.need, deadline, request.timeoutMs)
      : 0
    await this.#awaitApplied(target, deadline, request.timeoutMs)
    const snapshot = this.#log.appliedTid()
    const leader = this.#router.activeLeader(p)
    const { versions, sv } = await leader.readAsOf(snapshot, [request.key])
    const version = versions[0]
    const result: ReadResult = {
      version:
        version === undefined
          ? undefined
          : version.deleted
            ? { ts: version.ts, dc: version.dc }
            : { ts: version.ts, dc: version.dc, value: version.value! },
      epoch: leader.epoch(),
      replica: leader.replica,
      waitedMs: performance.now() - started,
      tid: version?.tid ?? 0,
    }
    if (version !== undefined) result.idx = sv[version.dc] ?? 0
    return result
  }

  /**
   * Publishes this process's oldest open snapshot, and (when it collects) raises the version floor
   * of every replica to the oldest any process published (or the watermark when none is open).
   * Runs every `collectEveryMs`; one at a time.
   */
  collect(): Promise<void> {
    this.#collecting ??= (async () => {
      try {
        const watermark = this.#log.appliedTid()
        const mine = this.#snapshots.oldest()
        await this.#log.publishOpenSnapshot(this.#token, mine)
        if (!(this.#options.collects?.() ?? true)) return
        // A process that stopped publishing (it died) holds nothing back after a while.
        const every = this.#options.collectEveryMs ?? 1000
        const open = await this.#log.oldestOpenSnapshot(Math.max(3 * every, 3000))
        // A snapshot another process picked since its last publication is at least the watermark
        // of then: keep everything from the watermark of two periods ago.
        const now = Date.now()
        this.#watermarks.push({ at: now, tid: watermark })
        while (this.#watermarks.length > 1 && now - this.#watermarks[1]!.at >= 2 * every)
          this.#watermarks.shift()
        const settled = now - this.#watermarks[0]!.at >= 2 * every ? this.#watermarks[0]!.tid : 0
        const floor = Math.min(open ?? watermark, mine ?? watermark, settled)
        if (floor <= 0) return
        await Promise.all(
          this.#options.replicas
            .flat()
            .filter((r) => r.available && r.state === 'open' && r.txFloor() < floor)
            .map((r) => r.collectGarbage(floor)),
        )
      } catch (error) {
        this.#options.onError?.(error)
      } finally {
        this.#collecting = undefined
      }
    })()
    return this.#collecting
  }

  /**
   * Refuses, before the log, a read set that no read at its snapshot answered (issue 22): a read
   * naming a tid that never made a version of its key (a conflicted transaction's tid, another
   * key's writer, or 0 for a key that has a version at the snapshot). A read naming a version that
   * a later one had replaced by the snapshot is a stale read sent with a later snapshot: it goes to
   * the log and the applier decides it a conflict. The applier checks every read again from the
   * log alone; this check gives a client its clear 4xx, and where old versions are collected (it
   * cannot tell) it leaves the verdict to the applier.
   */
  async #checkReads(request: TxCommitRequest, deadline: number): Promise<void> {
    if (request.reads.length === 0) return
    const { snapshot } = request
    await this.#awaitApplied(snapshot, deadline, request.timeoutMs)
    const held = await this.#versionTids(
      snapshot,
      request.reads.map(([key]) => key),
    )
    if (held === undefined) return
    for (const [key, tid] of request.reads) {
      if (held.get(key) === tid) continue
      if (tid !== 0) {
        const made = await this.#versionTids(tid, [key])
        if (made === undefined || made.get(key) === tid) continue
      }
      throw new CausewayError(
        'INVALID_READ_SET',
        `the read of ${JSON.stringify(key)} names tid ${tid}, which made no version of it; at snapshot ${snapshot} its version is ${held.get(key) ?? 0}`,
        { key, tid, snapshot },
      )
    }
  }

  /** The tid of each key's version at `tid` (0: none); undefined when `tid` is collected. */
  async #versionTids(
    tid: number,
    keys: readonly string[],
  ): Promise<Map<string, number> | undefined> {
    const byPartition = new Map<number, string[]>()
    for (const key of keys) {
      const p = partitionOf(key, this.#options.replicas.length)
      let list = byPartition.get(p)
      if (list === undefined) byPartition.set(p, (list = []))
      list.push(key)
    }
    const out = new Map<string, number>()
    try {
      await Promise.all(
        [...byPartition].map(async ([p, group]) => {
          const { versions } = await this.#router.leader(p).readAsOf(tid, group, { values: false })
          group.forEach((key, i) => out.set(key, versions[i]?.tid ?? 0))
        }),
      )
    } catch (error) {
      if (error instanceof CausewayError && error.code === 'SNAPSHOT_TOO_OLD') return undefined
      throw error
    }
    return out
  }

  // Keys of a transactional namespace only.
  #checkKeys(keys: readonly string[]): void {
    for (const key of keys)
      if (!isTransactionalKey(key, this.#namespaces))
        throw new CausewayError(
          'NOT_TRANSACTIONAL',
          `${JSON.stringify(key)} is not in a transactional namespace (${this.#transactional()})`,
          { key },
        )
  }

  #transactional(): string {
    const names = Object.entries(this.#namespaces)
      .filter(([, c]) => c.transactions === true)
      .map(([n]) => n)
    return names.length === 0 ? 'this cluster has none' : `these are: ${names.join(', ')}`
  }

  // A tid the log has never reached would be waited for forever.
  async #checkReachable(tid: number, what: string): Promise<void> {
    if (tid <= this.#log.lastTid()) return
    const last = await this.#log.refresh()
    if (tid <= last) return
    throw new CausewayError(
      'TID_UNREACHABLE',
      `${what} ${tid} is beyond the transaction log of region ${this.region}, which has reached ${last}`,
      { [what]: tid, last, region: this.region },
    )
  }

  /**
   * Waits until the leader of `p` has applied `need` and made visible (relayed) the other regions'
   * transactions in it; resolves to the snapshot those transactions are visible at.
   */
  async #cover(p: number, need: ReadNeed, deadline: number, timeoutMs: number): Promise<number> {
    await this.#router.checkNeed(p, need)
    const leader = this.#router.activeLeader(p)
    await this.#router.wait(p, leader, need, Math.max(0, deadline - Date.now()))
    const now = await leader.visibleAt(need.need)
    if (now !== undefined) return now
    // Another region's transaction the session saw is logged here but not relayed yet: a relay is
    // a local write, so look again on each advance.
    const visible = await new Promise<number | undefined>((resolve) => {
      let looking = false
      let settled = false
      const timer = setTimeout(() => done(undefined), Math.max(0, deadline - Date.now()))
      const look = () => {
        if (looking || settled) return
        looking = true
        leader.visibleAt(need.need).then(
          (at) => {
            looking = false
            if (at !== undefined) done(at)
          },
          () => {
            looking = false
          },
        )
      }
      const unsubscribe = leader.onAdvance(look)
      function done(at: number | undefined) {
        if (settled) return
        settled = true
        clearTimeout(timer)
        unsubscribe()
        resolve(at)
      }
      look()
    })
    if (visible !== undefined) return visible
    throw new SessionNotAvailableError(
      `partition ${p} of region ${this.region} has not yet made visible, within ${timeoutMs} ms, the transactions of other regions the session has seen`,
      { region: this.region, partition: p, timeoutMs },
    )
  }

  // Waits until the watermark reaches `tid`.
  async #awaitApplied(tid: number, deadline: number, timeoutMs: number): Promise<void> {
    if (this.#log.appliedTid() >= tid) return
    const reached = await this.#applied.wait([this.#log.appliedTid()], [tid], deadline)
    if (!reached)
      throw new SessionNotAvailableError(
        `region ${this.region} has not applied its transaction log through tid ${tid} within ${timeoutMs} ms (it is at ${this.#log.appliedTid()})`,
        { region: this.region, tid, applied: this.#log.appliedTid(), timeoutMs },
      )
  }

  // The outcome of `tid`, once recorded.
  async #outcome(tid: number, deadline: number): Promise<TxOutcomeRecord> {
    const waiting = new Promise<TxOutcomeRecord | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))
      const list = this.#waiting.get(tid) ?? []
      list.push((o) => {
        clearTimeout(timer)
        resolve(o)
      })
      this.#waiting.set(tid, list)
    })
    if (this.#log.appliedTid() >= tid) {
      const [recorded] = await this.#log.readOutcomes(tid - 1, 1)
      if (recorded?.tid === tid) this.#decided([recorded])
    }
    const outcome = await waiting
    this.#waiting.delete(tid)
    if (outcome !== undefined) return outcome
    throw new CausewayError(
      'BACKEND_UNAVAILABLE',
      `transaction ${tid} is in the log of region ${this.region} but its outcome was not known in time; commit again with the same id to learn it`,
      { tid, region: this.region },
    )
  }

  #decided(outcomes: readonly TxOutcomeRecord[]): void {
    this.#applied.advance([this.#log.appliedTid()])
    for (const o of outcomes) {
      const list = this.#waiting.get(o.tid)
      if (list === undefined) continue
      this.#waiting.delete(o.tid)
      for (const resolve of list) resolve(o)
    }
  }
}
