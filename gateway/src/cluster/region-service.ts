/**
 * The {@link ClusterService} of one region: NuKV Algorithm 2 on top of partition replicas.
 * Reads pick a replica and wait (without polling) until its `sv` covers what the session needs;
 * writes go to the partition leader, stamped with an HLC past the session's dependency time.
 */
import {
  type CausalContext,
  CausewayError,
  HLC_ZERO,
  type Namespaces,
  type Limits,
  type ReplicaChoice,
  type ReplicaStatus,
  SessionNotAvailableError,
  type ShipperStatus,
  type Status,
  checkNamespaces,
  conflictModeOf,
  covers,
  hlcMillis,
  isHlc,
  vectorToObject,
} from '@causeway/core'
import type { FollowerLag } from '../replication/follower-feed.js'
import type { LogEntry, PartitionReplica } from '../storage/partition-replica.js'
import {
  MAX_SIBLINGS,
  contextOf,
  decodeSiblingSet,
  listSiblings,
  maxSiblingSetChars,
  siblingsAfter,
} from '../storage/sibling-set.js'
import { RegionSets, type SetService } from './region-sets.js'
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
  /** `replicas[p][i]`: this region's replicas of partition `p`; replica 0 is the leader. */
  replicas: readonly (readonly PartitionReplica[])[]
  /**
   * The highest idx region `d`'s leader of partition `p` has written, when this region can know
   * it. A read needing more can never be served, so it fails at once with `VECTOR_UNREACHABLE`.
   * @default unknown (such reads wait out their deadline)
   */
  written?: (d: number, p: number) => number | undefined
  /**
   * How far follower `i` of partition `p` is behind its leader.
   * @default the gap between their `sv`s, with an unknown (0) age
   */
  lag?: (p: number, i: number) => FollowerLag
  /**
   * Whether replica `i` of partition `p` can serve now (its backend is reachable). Reads go to
   * available replicas only, and fail at once with `BACKEND_UNAVAILABLE` when none is.
   * @default always
   */
  available?: (p: number, i: number) => boolean
  /**
   * The status of this region's shippers.
   * @default none
   */
  shippers?: () => ShipperStatus[]
  /**
   * The region's wall clock in ms, the one its leaders' HLCs read; writes whose dependency is too
   * far ahead of it are refused.
   * @default Date.now
   */
  now?: () => number
  /**
   * Chooses among equally good replicas.
   * @default Math.random
   */
  random?: () => number
  /**
   * Ablation for benchmarks (NuKV section 6, cases "without HLC"): ignore a write's `dt` when
   * stamping it (the leader's own clock only) and instead make the write wait, like a read,
   * until the leader has applied the dependency vector the request carries (`need`).
   * @default false
   */
  withoutHlc?: boolean
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
}

/** One region of a cluster, served from its partition replicas. */
export class RegionService implements ClusterService {
  readonly region: number
  /** The sets of this region (`/v1/sets`). */
  readonly sets: SetService
  readonly #options: RegionServiceOptions
  readonly #now: () => number
  readonly #random: () => number
  readonly #namespaces: Namespaces

  constructor(options: RegionServiceOptions) {
    if (options.replicas.length === 0 || options.replicas.some((r) => r.length === 0)) {
      throw new RangeError('every partition needs at least one replica')
    }
    this.region = options.region
    this.sets = new RegionSets(options)
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#random = options.random ?? Math.random
    this.#namespaces = checkNamespaces(options.namespaces)
  }

  shape(): ClusterShape {
    const { cluster, regionNames, limits, replicas } = this.#options
    return {
      cluster,
      region: this.region,
      regionNames: [...regionNames],
      partitions: replicas.length,
      replicas: replicas[0]!.length,
      epochs: replicas.map((_, p) => this.#leader(p).epoch()),
      limits: { ...limits },
      shipping: 'fifo',
      namespaces: { ...this.#namespaces },
    }
  }

  async read(request: ReadRequest): Promise<ReadResult> {
    const { partition } = request
    const replicas = this.#partition(partition)
    const epoch = this.#leader(partition).epoch()
    const need = request.need?.need
    if (request.need?.epoch !== undefined && request.need.epoch !== epoch) {
      throw new CausewayError(
        'EPOCH_MISMATCH',
        `the session's vector is from epoch ${request.need.epoch} of partition ${partition}, which is now at epoch ${epoch}`,
        { partition, epoch: request.need.epoch, current: epoch },
      )
    }
    if (need) this.#checkReachable(partition, need)

    const replica = this.#choose(
      partition,
      this.#serving(partition, replicas),
      request.replica,
      need,
    )
    const started = performance.now()
    const deadline = Date.now() + request.timeoutMs
    if (need && !(await replica.waitFor(need, deadline))) {
      // Before the deadline, a wait only ends unserved when the replica closed or failed.
      if (Date.now() < deadline) {
        throw new CausewayError(
          'SHUTTING_DOWN',
          `replica ${replica.replica} of partition ${partition} stopped while the read waited`,
        )
      }
      throw new SessionNotAvailableError(
        `replica ${replica.replica} of partition ${partition} in region ${this.region} did not reach the ` +
          `session's vector within ${request.timeoutMs} ms`,
        {
          need: vectorToObject(need),
          sv: vectorToObject(replica.sv()),
          region: this.region,
          partition,
          replica: replica.replica,
          // The SDK skips its retry on the leader when the leader is what just timed out.
          role: replica.replica === 0 ? 'leader' : 'follower',
          timeoutMs: request.timeoutMs,
        },
      )
    }
    const waitedMs = performance.now() - started
    if (conflictModeOf(request.key, this.#namespaces) === 'siblings') {
      const { siblings, sv } = await replica.readSiblings(request.key)
      const listed = listSiblings(siblings).map((s) => ({ ...s, idx: sv[s.dc]! }))
      // The newest sibling stands for the read in the one-version fields.
      const newest = listed.at(-1)
      const result: ReadResult = {
        version: newest && { ts: newest.ts, dc: newest.dc },
        epoch: replica.epoch(),
        replica: replica.replica,
        waitedMs,
        siblings: listed,
        context: contextOf(siblings),
      }
      if (newest) result.idx = newest.idx
      return result
    }
    const { version, sv } = await replica.read(request.key)
    const result: ReadResult = {
      version,
      epoch: replica.epoch(),
      replica: replica.replica,
      waitedMs,
    }
    if (version) result.idx = sv[version.dc]!
    return result
  }

  async write(request: WriteRequest): Promise<WriteResult> {
    const { partition, dt } = request
    const replicas = this.#partition(partition)
    if (!isHlc(dt)) throw new CausewayError('INVALID_HLC', `invalid dependency time ${String(dt)}`)
    const aheadMs = hlcMillis(dt) - this.#now()
    const { maxSkewMs } = this.#options.limits
    if (aheadMs > maxSkewMs) {
      throw new CausewayError(
        'CLOCK_SKEW_EXCEEDED',
        `the write depends on a time ${Math.round(aheadMs)} ms ahead of region ${this.region}'s clock; at most ${maxSkewMs} ms is allowed`,
        { dt, aheadMs, maxSkewMs },
      )
    }
    const siblings = conflictModeOf(request.key, this.#namespaces) === 'siblings'
    if (!siblings && request.context !== undefined) {
      throw new CausewayError(
        'INVALID_CONTEXT',
        `${JSON.stringify(request.key)} is in a last-writer-wins namespace; a causal context applies only to siblings namespaces`,
      )
    }
    const leader = this.#leader(partition)
    if (this.#options.withoutHlc) await this.#awaitDependencies(leader, request)
    const writeDt = this.#options.withoutHlc ? HLC_ZERO : dt
    if (siblings) await this.#checkSiblingRoom(leader, request)
    const entry = siblings
      ? await leader.writeSibling(request.key, request.value, writeDt, request.context ?? [])
      : await leader.write(request.key, request.value, writeDt)
    if (request.durability === 'majority') await this.#majority(replicas, entry.idx)
    const result: WriteResult = {
      ts: entry.ts,
      dc: this.region,
      idx: entry.idx,
      epoch: leader.epoch(),
    }
    if (siblings) {
      const context = this.#contextAfter(entry, request.context ?? [])
      if (context) result.context = context
    }
    return result
  }

  /**
   * Refuses a sibling write that would leave its key with more than {@link MAX_SIBLINGS} siblings
   * or a set longer than {@link maxSiblingSetChars} (every log entry carries the whole set). The
   * check reads the leader's set just before the write, so concurrent writes can each pass it and
   * overshoot by a few values; shipping leaves room for that.
   */
  async #checkSiblingRoom(leader: PartitionReplica, request: WriteRequest): Promise<void> {
    const { siblings } = await leader.readSiblings(request.key)
    const after = siblingsAfter(siblings, request.context ?? [], request.value, this.region)
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
  #contextAfter(entry: LogEntry, context: CausalContext): CausalContext | undefined {
    const set = decodeSiblingSet(entry.siblings!)
    const dot = set.entries.find(([actor]) => actor === this.region)![1]
    const seen = context.find(([actor]) => actor === this.region)?.[1] ?? 0
    if (seen !== dot - 1) return undefined
    return [
      ...context.filter(([actor]) => actor !== this.region),
      [this.region, dot] as const,
    ].sort((a, b) => a[0] - b[0])
  }

  async status(): Promise<Status> {
    const replicas: ReplicaStatus[] = []
    this.#options.replicas.forEach((partition, p) => {
      const leader = this.#leader(p)
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
    return {
      cluster: this.#options.cluster,
      region: this.region,
      replicas,
      shippers: this.#options.shippers?.() ?? [],
    }
  }

  // The "without HLC" ablation: a write waits until its leader has applied what it depends on.
  async #awaitDependencies(leader: PartitionReplica, request: WriteRequest): Promise<void> {
    const need = request.need
    if (!need || request.level === 'eventual') return
    if (need.epoch !== undefined && need.epoch !== leader.epoch()) {
      throw new CausewayError(
        'EPOCH_MISMATCH',
        `the session's vector is from epoch ${need.epoch} of partition ${request.partition}, which is now at epoch ${leader.epoch()}`,
        { partition: request.partition, epoch: need.epoch, current: leader.epoch() },
      )
    }
    this.#checkReachable(request.partition, need.need)
    const timeoutMs = this.#options.limits.defaultTimeoutMs
    if (!(await leader.waitFor(need.need, Date.now() + timeoutMs))) {
      throw new SessionNotAvailableError(
        `the leader of partition ${request.partition} in region ${this.region} did not reach the write's dependencies within ${timeoutMs} ms`,
        {
          need: vectorToObject(need.need),
          sv: vectorToObject(leader.sv()),
          region: this.region,
          partition: request.partition,
          replica: leader.replica,
          timeoutMs,
        },
      )
    }
  }

  // Where failover will plug in: today replica 0 of each partition leads.
  #leader(p: number): PartitionReplica {
    return this.#partition(p)[0]!
  }

  #partition(p: number): readonly PartitionReplica[] {
    const replicas = this.#options.replicas[p]
    if (!replicas) throw new CausewayError('INVALID_REQUEST', `partition ${p} does not exist`)
    return replicas
  }

  #checkReachable(partition: number, need: readonly number[]): void {
    const regions = this.#options.regionNames.length
    if (need.length !== regions) {
      throw new CausewayError(
        'INVALID_VECTOR',
        `a read vector has one entry per region (${regions}), not ${need.length}`,
      )
    }
    need.forEach((idx, d) => {
      const written = this.#options.written?.(d, partition)
      if (written !== undefined && idx > written) {
        throw new CausewayError(
          'VECTOR_UNREACHABLE',
          `the read needs entry ${idx} of region ${d} in partition ${partition}, but that region has written only ${written}`,
          { partition, region: d, need: idx, written },
        )
      }
    })
  }

  // The replicas that can serve now (all of them unless `available` says otherwise).
  #serving(partition: number, replicas: readonly PartitionReplica[]): readonly PartitionReplica[] {
    const available = this.#options.available
    if (!available) return replicas
    const serving = replicas.filter((_, i) => available(partition, i))
    if (serving.length === 0) throw this.#unavailable(partition, replicas)
    return serving
  }

  #unavailable(partition: number, replicas: readonly PartitionReplica[]): CausewayError {
    return new CausewayError(
      'BACKEND_UNAVAILABLE',
      `no replica of partition ${partition} in region ${this.region} that the read may use is reachable`,
      { region: this.region, partition, backends: replicas.map((r) => r.backend) },
    )
  }

  #choose(
    partition: number,
    serving: readonly PartitionReplica[],
    choice: ReplicaChoice,
    need: readonly number[] | undefined,
  ): PartitionReplica {
    const leader = this.#leader(partition)
    const leaderServes = serving.includes(leader)
    if (choice === 'leader') {
      if (!leaderServes) throw this.#unavailable(partition, [leader])
      return leader
    }
    const fallback = leaderServes ? leader : serving[0]!
    if (choice === 'follower') return this.#pick(serving.filter((r) => r !== leader)) ?? fallback
    const ready = need ? serving.filter((r) => covers(r.sv(), need)) : serving
    return this.#pick(ready) ?? fallback
  }

  #pick(replicas: readonly PartitionReplica[]): PartitionReplica | undefined {
    return replicas[Math.floor(this.#random() * replicas.length)]
  }

  // Resolves once a majority of the partition's replicas (the leader among them) applied `idx`.
  async #majority(replicas: readonly PartitionReplica[], idx: number): Promise<void> {
    const needed = Math.floor(replicas.length / 2) // followers, besides the leader
    if (needed === 0) return
    const need = new Array<number>(this.#options.regionNames.length).fill(0)
    need[this.region] = idx
    const deadline = Date.now() + this.#options.limits.maxTimeoutMs
    const followers = replicas.slice(1)
    const confirmed = await new Promise<number>((resolve) => {
      let yes = 0
      let answered = 0
      for (const follower of followers) {
        void follower.waitFor(need, deadline).then((applied) => {
          answered++
          if (applied) yes++
          if (yes >= needed || answered === followers.length) resolve(yes)
        })
      }
    })
    if (confirmed < needed) {
      throw new CausewayError(
        'BACKEND_UNAVAILABLE',
        `write ${this.region}:${idx} is durable at the leader but only ${confirmed + 1} of ${replicas.length} replicas confirmed it`,
        { region: this.region, idx, confirmed: confirmed + 1, replicas: replicas.length },
      )
    }
  }

  #lag(p: number, i: number, leader: PartitionReplica, replica: PartitionReplica): FollowerLag {
    if (this.#options.lag) return this.#options.lag(p, i)
    const ahead = leader.sv()
    const sv = replica.sv()
    return {
      entries: ahead.reduce((sum, idx, d) => sum + Math.max(0, idx - (sv[d] ?? 0)), 0),
      ms: 0,
    }
  }
}
