/**
 * The {@link ClusterService} of one region: NuKV Algorithm 2 on top of partition replicas.
 * Reads pick a replica and wait (without polling) until its `sv` covers what the session needs;
 * writes go to the partition leader, stamped with an HLC past the session's dependency time.
 *
 * It knows the replicas only through the storage contract (`AbstractPartitionReplica`): what a
 * backend can do is in its `supports` manifest, so one service serves every backend, in one
 * process (the embedded cluster) or as one of several stateless gateways over shared stores
 * (Redis), where `status` re-reads each replica's `sv` (`supports.refresh`) and measures lag from
 * the leader's log.
 */
import {
  type CausalContext,
  CausewayError,
  type DivergenceStatus,
  type LeaderStatus,
  type Namespaces,
  type Limits,
  type ReadNeed,
  type ReplicaStatus,
  SessionNotAvailableError,
  type ShipperStatus,
  type Status,
  checkNamespaces,
  covers,
  vectorToObject,
  conflictModeOf,
  hasTransactions,
  isMajorityKey,
  isTransactionalKey,
  namespaceOf,
  actorRegion,
  siblingActor,
} from '@causeway/core'
import type { SiblingContexts } from './sibling-contexts.js'
import { PROCESS_SIBLING_CONTEXTS } from './sibling-contexts.js'
import type { FollowerLag } from '../replication/follower-feed.js'
import type { OpRecord } from '../storage/op-records.js'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { SiblingRead, SiblingsEntry } from '../storage/partition-replica.js'
import type { QuarantineRegistry } from '../storage/quarantine.js'
import type { AbstractTxLog } from '../storage/tx-log.js'
import {
  MAX_SIBLINGS,
  contextOf,
  decodeSiblingSet,
  listSiblings,
  maxSiblingSetChars,
  siblingsAfter,
} from '../storage/sibling-set.js'
import { type ChangeFeedService, RegionChanges } from './change-feed.js'
import { RegionSets, type SetService } from './region-sets.js'
import {
  ReplicaRouter,
  type ReplicaRouterOptions,
  keptPosition,
  keptVector,
  positionEpoch,
} from './replica-router.js'
import type { OpenSnapshotsOptions } from './transactions/open-snapshots.js'
import { RegionTransactions } from './transactions/region-transactions.js'
import type {
  ClusterService,
  ClusterShape,
  ReadRequest,
  ReadResult,
  WriteRequest,
  WriteResult,
} from './cluster-service.js'

/** Options of a {@link RegionService}. */
export interface RegionServiceOptions {
  /** Id of the cluster (sessions are bound to it). */
  cluster: string
  /** This region's id. */
  region: number
  /** Name of every region, by id. */
  regionNames: readonly string[]
  limits: Limits
  /** `replicas[p][i]`: this region's replicas of partition `p`; replica 0 leads unless `leaderOf` says otherwise. */
  replicas: readonly (readonly AbstractPartitionReplica[])[]
  /**
   * Which replica of partition `p` leads now (its index in `replicas[p]`), for a deployment
   * whose leaders fail over.
   * @default 0
   */
  leaderOf?: (p: number) => number
  /**
   * Why the leader of partition `p` may serve nothing now (no read, no write), or undefined when
   * it may (`ReplicaRouterOptions.leaderFence`).
   * @default never fenced
   */
  leaderFence?: (p: number) => string | undefined
  /**
   * The highest idx region `d`'s leader of partition `p` has written, when this region can know
   * it. A read needing more can never be served, so it fails at once with `VECTOR_UNREACHABLE`.
   * @default unknown (such reads wait out their deadline)
   */
  written?: (d: number, p: number) => number | undefined
  /** See `ReplicaRouterOptions.writtenElsewhere`. @default never asked */
  writtenElsewhere?: ReplicaRouterOptions['writtenElsewhere']
  /**
   * How far follower `i` of partition `p` is behind its leader (when its replication knows, as the
   * embedded cluster's follower feeds do).
   * @default measured by `status`: the gap between their `sv`s, and the age of the oldest entry
   * of it in the leader's log
   */
  lag?: (p: number, i: number) => FollowerLag
  /**
   * How long a `majority` write waits for the followers' confirmation, in ms.
   * @default limits.defaultTimeoutMs
   */
  majorityTimeoutMs?: number
  /**
   * The status of this region's shippers.
   * @default none
   */
  shippers?: () => Promise<ShipperStatus[]>
  /**
   * The region's wall clock in ms, the one its leaders' HLCs read; writes whose dependency is too
   * far ahead of it, and of every other region's clock it knows of, are refused.
   * @default Date.now
   */
  now?: () => number
  /**
   * How long a write whose dependency time is more than `limits.maxSkewMs` ahead of every clock
   * the region knows waits, in ms, for a later one to be known (another region's entries
   * arriving, or its own clock moving on) before it is refused with `CLOCK_SKEW_EXCEEDED`.
   * @default 2000
   */
  skewWaitMs?: number
  /**
   * How far another region's wall clock may run ahead of this region's, in ms: a write dependency
   * more than `limits.maxSkewMs` past this region's clock plus this (and past every clock the
   * region knows) is refused at once, without the `skewWaitMs` wait.
   * @default 3600000 (an hour)
   */
  maxClockOffsetMs?: number
  /**
   * How far ahead of the latest region clock known a write's dependency time may be, in ms
   * (`ReplicaRouterOptions.maxAheadMs`: tight in a causal cluster).
   * @default limits.maxSkewMs
   */
  maxAheadMs?: number
  /**
   * Chooses among equally good replicas.
   * @default Math.random
   */
  random?: () => number
  /**
   * Namespaces and their conflict mode (a key's namespace is the text before its first `:`).
   * Keys of a `siblings` namespace keep concurrent writes as siblings; every other key is
   * last-writer-wins.
   * @default {} (every key last-writer-wins)
   */
  namespaces?: Namespaces
  /**
   * The secret set element contexts are signed with (`set-contexts.ts`); every gateway of the
   * cluster needs the same one.
   * @default a random secret per process
   */
  contextSecret?: Uint8Array
  /**
   * Signs and checks sibling contexts (`sibling-contexts.ts`); every gateway of the cluster needs
   * the same secrets.
   * @default the process's signer
   */
  siblingContexts?: SiblingContexts
  /**
   * Where this region's replicas report keys whose stored value does not decode
   * (`quarantine.ts`); listed in the status.
   * @default none (the status has no quarantine section)
   */
  quarantine?: Pick<QuarantineRegistry, 'status'>
  /**
   * The region's transaction log, which namespaces configured `transactions: true` need (and
   * replicas that keep versions, `supports.multiVersionReads`); with it the service has
   * {@link RegionService.transactions}. The applier that decides the log runs beside it.
   * @default none (no transactional namespace may be configured)
   */
  transactions?: {
    log: AbstractTxLog
    /** How long snapshots stay open for transactions. */
    snapshots?: OpenSnapshotsOptions
    /** How often to publish open snapshots and collect versions behind the oldest (0: never). */
    collectEveryMs?: number
    /** Whether this process collects (the one running the region's applier). @default always */
    collects?: () => boolean
    onError?: (error: unknown) => void
  }
  /**
   * Where leaders fail over: each partition's leader, its state and epoch (the status's
   * `leaders`).
   * @default none (the status has no `leaders` section)
   */
  leadership?: () => LeaderStatus[]
  /**
   * Shipping links whose envelopes disagreed with what this region holds (the status's
   * `divergence`).
   * @default none
   */
  divergence?: () => Promise<DivergenceStatus[]>
}

/** One region of a cluster, served from its partition replicas. */
export class RegionService implements ClusterService {
  readonly region: number
  /** The sets of this region (`/v1/sets`), when its backend has them (`supports.sets`). */
  readonly sets: SetService | undefined
  /** The change feeds of this region (`/v1/watch`). */
  readonly changes: ChangeFeedService
  readonly contexts: SiblingContexts
  /** The transactions of this region (`/v1/tx`), when it has a transaction log. */
  readonly transactions: RegionTransactions | undefined
  readonly #options: RegionServiceOptions
  /** Replica choice, waiting, skew and majority: shared with the set service. */
  readonly #router: ReplicaRouter
  readonly #namespaces: Namespaces
  /** Lag of each follower (`p:i`) as the last {@link status} measured it (without `lag`). */
  readonly #lags = new Map<string, FollowerLag>()

  constructor(options: RegionServiceOptions) {
    if (options.replicas.length === 0 || options.replicas.some((r) => r.length === 0)) {
      throw new RangeError('every partition needs at least one replica')
    }
    this.region = options.region
    this.sets = options.replicas.every((partition) => partition.every((r) => r.supports.sets))
      ? new RegionSets(options)
      : undefined
    this.changes = new RegionChanges(options)
    this.contexts = options.siblingContexts ?? PROCESS_SIBLING_CONTEXTS
    this.#options = options
    this.#router = new ReplicaRouter(options)
    this.#namespaces = checkNamespaces(options.namespaces)
    const tx = options.transactions
    if (hasTransactions(this.#namespaces) && tx === undefined)
      throw new TypeError('transactional namespaces need a transaction log (transactions.log)')
    if (
      tx !== undefined &&
      !options.replicas.every((p) => p.every((r) => r.supports.multiVersionReads))
    )
      throw new TypeError(
        'transactions need replicas that keep versions (supports.multiVersionReads)',
      )
    this.transactions =
      tx === undefined
        ? undefined
        : new RegionTransactions({
            ...options,
            log: tx.log,
            ...(tx.snapshots ? { snapshots: tx.snapshots } : {}),
            ...(tx.collectEveryMs === undefined ? {} : { collectEveryMs: tx.collectEveryMs }),
            ...(tx.collects ? { collects: tx.collects } : {}),
            ...(tx.onError ? { onError: tx.onError } : {}),
          })
  }

  /** Stops the background work of the service (the transactions' version collection). */
  async close(): Promise<void> {
    await this.transactions?.close()
  }

  shape(): ClusterShape {
    const { cluster, regionNames, limits, replicas } = this.#options
    return {
      cluster,
      region: this.region,
      regionNames: [...regionNames],
      partitions: replicas.length,
      replicas: replicas[0]!.length,
      epochs: replicas.map((_, p) => this.#router.leader(p).epoch()),
      limits: { ...limits },
      shipping: 'fifo',
      namespaces: { ...this.#namespaces },
    }
  }

  async read(request: ReadRequest): Promise<ReadResult> {
    if (this.transactions !== undefined && isTransactionalKey(request.key, this.#namespaces))
      return this.transactions.readLatest(request)
    const { replica: chosen, waitedMs } = await this.#router.serve(
      request.partition,
      request.need,
      request.replica,
      request.timeoutMs,
    )
    if (conflictModeOf(request.key, this.#namespaces) === 'siblings') {
      const [replica, { siblings, sv }] = await this.#coveredRead(chosen, request, (r) =>
        r.readSiblings(request.key),
      )
      if (
        this.#committedReads(request) &&
        siblings.entries.some(([actor]) => actor === this.region)
      )
        await this.#router.committed(request.partition, sv[this.region] ?? 0, request.timeoutMs)
      const seen = keptVector(replica, sv)
      const listed = listSiblings(siblings).map((s) => ({ ...s, idx: seen[s.dc]! }))
      // The newest sibling stands for the read in the one-version fields.
      const newest = listed.at(-1)
      const result: ReadResult = {
        version: newest && { ts: newest.ts, dc: newest.dc },
        epoch: positionEpoch(replica, newest?.dc, newest?.idx),
        replica: replica.replica,
        waitedMs,
        siblings: listed,
        context: contextOf(siblings),
      }
      if (newest) result.idx = newest.idx
      return result
    }
    const [replica, { version, sv }] = await this.#coveredRead(chosen, request, (r) =>
      r.read(request.key),
    )
    if (version?.dc === this.region && this.#committedReads(request))
      await this.#router.committed(request.partition, sv[this.region] ?? 0, request.timeoutMs)
    const position = version && keptPosition(replica, version.dc, sv[version.dc]!)
    const result: ReadResult = {
      version,
      epoch: position?.epoch ?? replica.epoch(),
      replica: replica.replica,
      waitedMs,
    }
    if (position) result.idx = position.idx
    return result
  }

  async write(request: WriteRequest): Promise<WriteResult> {
    const { partition, dt } = request
    if (isTransactionalKey(request.key, this.#namespaces))
      throw new CausewayError(
        'TRANSACTION_REQUIRED',
        `${JSON.stringify(request.key)} is in a transactional namespace: write it in a transaction (db.transaction(), POST /v1/tx/commit)`,
        { key: request.key },
      )
    await this.#router.checkDependency(dt)
    // A write after one of the session's that a failover lost would be applied without it.
    if (request.need !== undefined) await this.#router.checkPositions(partition, request.need)
    const siblings = conflictModeOf(request.key, this.#namespaces) === 'siblings'
    if (!siblings && request.context !== undefined) {
      throw new CausewayError(
        'INVALID_CONTEXT',
        `${JSON.stringify(request.key)} is in a last-writer-wins namespace; a causal context applies only to siblings namespaces`,
      )
    }
    const leader = this.#router.activeLeader(partition)
    if (request.op !== undefined) return this.#writeOnce(leader, request, siblings)
    if (siblings) {
      await this.#checkSiblingRoom(leader, request)
      const entry = await leader.writeSibling(request.key, request.value, dt, request.context ?? [])
      if (this.#majority(request)) await this.#router.majority(partition, entry.idx)
      const result: WriteResult = {
        ts: entry.ts,
        dc: this.region,
        idx: entry.idx,
        epoch: positionEpoch(leader, this.region, entry.idx),
      }
      const context = this.#contextAfter(entry, request.context ?? [], leader.epoch())
      if (context) result.context = context
      return result
    }
    const entry = await leader.write(request.key, request.value, dt)
    if (this.#majority(request)) await this.#router.majority(partition, entry.idx)
    return {
      ts: entry.ts,
      dc: this.region,
      idx: entry.idx,
      epoch: positionEpoch(leader, this.region, entry.idx),
    }
  }

  /**
   * Resolves once the leader of `partition` has applied `need` (checked like a read's vector:
   * `EPOCH_MISMATCH`, `VECTOR_UNREACHABLE`, `SESSION_NOT_AVAILABLE` at the deadline), to the ms
   * it waited; at once without a vector.
   */
  awaitLeader(partition: number, need: ReadNeed | undefined, timeoutMs: number): Promise<number> {
    return this.#router.awaitLeader(partition, need, timeoutMs)
  }

  /**
   * A write with an operation id: applied at most once (`AbstractPartitionReplica.writeOnce`); the checks
   * that depend on the moment (the dependency wait, the room for siblings) run only for a new one,
   * so a replay answers the first result whatever happened since.
   */
  async #writeOnce(
    leader: AbstractPartitionReplica,
    request: WriteRequest,
    siblings: boolean,
  ): Promise<WriteResult> {
    const op = request.op!
    const outcome = await leader.writeOnce(
      {
        namespace: namespaceOf(request.key) ?? '',
        id: op.id,
        fingerprint: op.fingerprint,
        ...(op.tenant === undefined ? {} : { tenant: op.tenant }),
      },
      siblings
        ? {
            kind: 'sibling',
            key: request.key,
            value: request.value,
            context: request.context ?? [],
          }
        : { kind: 'kv', key: request.key, value: request.value },
      request.dt,
      async () => {
        if (siblings) await this.#checkSiblingRoom(leader, request)
      },
    )
    const record: OpRecord = 'replayed' in outcome ? outcome.replayed : outcome.record
    if (this.#majority(request)) await this.#router.majority(request.partition, record.idx)
    const result: WriteResult = {
      ts: record.ts,
      dc: this.region,
      idx: record.idx,
      epoch: record.epoch,
    }
    if ('replayed' in outcome) result.replayed = true
    if (siblings && record.dot !== undefined) {
      const actor = siblingActor(this.region, record.epoch)
      const context = this.#contextAt(actor, record.dot, request.context ?? [])
      if (context) result.context = context
    }
    return result
  }

  /**
   * Whether a read returns only what a majority of the partition's replicas hold (its namespace
   * is `durability: 'majority'`). Such a read whose newest version is of this region waits until
   * a majority holds this region's log up to the `sv` it was read at (which covers the version):
   * one read, then at most one replication round trip, instead of versions kept per index.
   */
  #committedReads(request: ReadRequest): boolean {
    return isMajorityKey(request.key, this.#namespaces)
  }

  // Whether a write is acknowledged at a majority: asked so, or its namespace's floor.
  #majority(request: WriteRequest): boolean {
    return request.durability === 'majority' || isMajorityKey(request.key, this.#namespaces)
  }

  /**
   * Refuses a sibling write that would leave its key with more than {@link MAX_SIBLINGS} siblings
   * or a set longer than {@link maxSiblingSetChars} (every log entry carries the whole set). The
   * check reads the leader's set just before the write, so concurrent writes can each pass it and
   * overshoot by a few values; shipping leaves room for that.
   */
  async #checkSiblingRoom(leader: AbstractPartitionReplica, request: WriteRequest): Promise<void> {
    const { siblings } = await this.#readForWrite(leader, request.key)
    const actor = siblingActor(this.region, leader.epoch())
    const after = siblingsAfter(siblings, request.context ?? [], request.value, actor)
    const { maxValueBytes } = this.#options.limits
    const maxChars = maxSiblingSetChars(this.#options.regionNames.length, maxValueBytes)
    if (after.siblings <= MAX_SIBLINGS && after.chars <= maxChars) return
    throw new CausewayError(
      'VALUE_TOO_LARGE',
      `the write would leave ${JSON.stringify(request.key)} with ${after.siblings} siblings (${after.chars} characters); ` +
        `the limits are ${MAX_SIBLINGS} siblings and ${maxChars} characters. Resolve the siblings: write with the context of a read`,
      { siblings: after.siblings, chars: after.chars, maxSiblings: MAX_SIBLINGS, maxChars },
    )
  }

  /**
   * The context a sibling write hands back: the writer's context with this region's counter at
   * the write's dot. It is exact (covers what the writer saw and the write, nothing else) only when
   * the writer had seen every earlier dot of this region for the key, i.e. its counter for the
   * region is the dot's minus one; otherwise the leader held versions the writer never saw, and
   * no context is given rather than one that would supersede them.
   */
  #contextAfter(
    entry: SiblingsEntry,
    context: CausalContext,
    epoch: number,
  ): CausalContext | undefined {
    const set = decodeSiblingSet(entry.siblings, this.#options.regionNames.length)
    // The write's own dot: the newest sibling of this region stamped with its ts (the leader's
    // actor of the epoch it wrote in, normally `epoch`).
    const own =
      set.entries.find(
        ([actor, , siblings]) => actorRegion(actor) === this.region && siblings[0]?.ts === entry.ts,
      ) ?? set.entries.find(([actor]) => actor === siblingActor(this.region, epoch))!
    return this.#contextAt(own[0], own[1], context)
  }

  // #contextAfter, from the write's dot (its actor's counter in the key's set after it).
  #contextAt(actor: number, dot: number, context: CausalContext): CausalContext | undefined {
    const seen = context.find(([a]) => a === actor)?.[1] ?? 0
    if (seen !== dot - 1) return undefined
    return [...context.filter(([a]) => a !== actor), [actor, dot] as const].sort(
      (a, b) => a[0] - b[0],
    )
  }

  async status(): Promise<Status> {
    // Stores other processes write: this process's view of each `sv` may be behind.
    const shared = this.#options.replicas.flat().filter((r) => r.supports.refresh && r.available)
    await Promise.allSettled(shared.map((r) => r.refresh()))
    if (!this.#options.lag)
      await Promise.all(this.#options.replicas.map((_, p) => this.#measureLag(p)))
    const replicas: ReplicaStatus[] = []
    this.#options.replicas.forEach((partition, p) => {
      const leader = this.#router.leader(p)
      partition.forEach((replica, i) => {
        const isLeader = replica === leader
        replicas.push({
          region: this.region,
          partition: p,
          replica: replica.replica,
          role: isLeader ? 'leader' : 'follower',
          backend: replica.backend,
          epoch: replica.epoch(),
          sv: replica.sv(),
          lag: isLeader ? { entries: 0, ms: 0 } : this.#lag(p, i, leader, replica),
        })
      })
    })
    const status: Status = {
      cluster: this.#options.cluster,
      region: this.region,
      replicas,
      shippers: (await this.#options.shippers?.()) ?? [],
    }
    if (this.#options.quarantine) status.quarantine = this.#options.quarantine.status()
    const tx = this.#options.transactions?.log
    if (tx !== undefined && tx.available) {
      await tx.refresh().catch(() => undefined)
      status.transactions = { lastTid: tx.lastTid(), appliedTid: tx.appliedTid() }
    }
    if (this.#options.leadership) status.leaders = this.#options.leadership()
    if (this.#options.divergence) {
      const divergence = await this.#options.divergence().catch(() => [])
      if (divergence.length > 0) status.divergence = divergence
    }
    return status
  }

  /**
   * Runs a read at `replica` (as {@link #quarantineAware}) and checks the `sv` the read was taken
   * at, atomically with the value, against the request's vector: the wait judged by the
   * replica's view of its `sv`, which is ahead of the store when the server lost what it had
   * (it restarted with less, or was wiped, or was resynchronised from a leader that holds less).
   * Such a read is never answered: it is taken again from the leader (unless the call asked for
   * a follower), else refused with `SESSION_NOT_AVAILABLE`.
   */
  async #coveredRead<T extends { sv: number[] }>(
    replica: AbstractPartitionReplica,
    request: ReadRequest,
    read: (replica: AbstractPartitionReplica) => Promise<T>,
  ): Promise<[AbstractPartitionReplica, T]> {
    const first = await this.#quarantineAware(replica, request, read)
    const need = request.need
    if (need === undefined || covers(first[1].sv, need.need)) return first
    const p = request.partition
    const leader = this.#router.leader(p)
    // A fenced leader (it came back empty or behind) is no better than the replica that was.
    if (first[0] !== leader && request.replica !== 'follower' && !this.#router.fence(p)) {
      await this.#router.wait(p, leader, need, request.timeoutMs)
      const again = await this.#quarantineAware(leader, { ...request, replica: 'leader' }, read)
      if (covers(again[1].sv, need.need)) return again
    }
    throw new SessionNotAvailableError(
      `replica ${first[0].replica} of partition ${p} in region ${this.region} holds less than it said (its server lost data), and no replica could serve the session's vector`,
      {
        need: vectorToObject(need.need),
        sv: vectorToObject(first[1].sv),
        region: this.region,
        partition: p,
        replica: first[0].replica,
      },
    )
  }

  /**
   * Runs a read at `replica`, and answers which replica served it. A key quarantined at a
   * follower also asks the partition leader for a repair (a Redis follower cannot repair itself:
   * its leader's repair reaches it) and is read at the leader instead, unless the call asked for
   * a follower: the leader has applied everything its followers have, so it covers the same
   * need. If the leader cannot serve it either, the follower's error stands.
   */
  async #quarantineAware<T>(
    replica: AbstractPartitionReplica,
    request: ReadRequest,
    read: (replica: AbstractPartitionReplica) => Promise<T>,
  ): Promise<[AbstractPartitionReplica, T]> {
    try {
      return [replica, await read(replica)]
    } catch (error) {
      const leader = this.#router.leader(request.partition)
      const quarantined = error instanceof CausewayError && error.code === 'VALUE_QUARANTINED'
      if (!quarantined || leader === replica || this.#router.fence(request.partition)) throw error
      leader.repair(request.key).catch(() => {})
      if (request.replica === 'follower') throw error
      try {
        return [leader, await read(leader)]
      } catch {
        throw error
      }
    }
  }

  // The leader's set before a sibling write; a quarantined one is repaired first (it would be
  // at the write anyway), so the write is checked against what it will be applied to.
  async #readForWrite(leader: AbstractPartitionReplica, key: string): Promise<SiblingRead> {
    try {
      return await leader.readSiblings(key)
    } catch (error) {
      if (!(error instanceof CausewayError) || error.code !== 'VALUE_QUARANTINED') throw error
      await leader.repair(key)
      return leader.readSiblings(key)
    }
  }

  #lag(
    p: number,
    i: number,
    leader: AbstractPartitionReplica,
    replica: AbstractPartitionReplica,
  ): FollowerLag {
    if (this.#options.lag) return this.#options.lag(p, i)
    const measured = this.#lags.get(`${p}:${i}`)
    if (measured) return measured
    const ahead = leader.sv()
    const sv = replica.sv()
    return {
      entries: ahead.reduce((sum, idx, d) => sum + Math.max(0, idx - (sv[d] ?? 0)), 0),
      ms: 0,
    }
  }

  // Entries each follower of partition `p` lacks, and the age of the oldest of them (read from
  // the leader's log).
  async #measureLag(p: number): Promise<void> {
    const leader = this.#router.leader(p)
    const followers = this.#router.followers(p)
    const ahead = leader.sv()
    const now = Date.now()
    await Promise.all(
      followers.map(async (follower) => {
        const sv = follower.sv()
        let entries = 0
        let oldest = Infinity
        for (let d = 0; d < ahead.length; d++) {
          const gap = (ahead[d] ?? 0) - (sv[d] ?? 0)
          if (gap <= 0) continue
          entries += gap
          if (!leader.available) continue
          const [first] = await leader.readLog(d, sv[d] ?? 0, 1).catch(() => [])
          if (first) oldest = Math.min(oldest, first.at)
        }
        const ms = Number.isFinite(oldest) ? Math.max(0, now - oldest) : 0
        this.#lags.set(`${p}:${this.#options.replicas[p]!.indexOf(follower)}`, { entries, ms })
      }),
    )
  }
}
