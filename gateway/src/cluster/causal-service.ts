/**
 * The {@link ClusterService} of a region of a cluster with `shipping: 'causal'`: the region's
 * service, with causal reads and writes (levels `causal`) made causal across keys and regions.
 *
 * - A causal call carries the client's vector clock (`causeway-clock`). Before it is served, the
 *   region's `SiteTime` must cover the clock in every other region's entry (thesis section
 *   3.4.2.3): everything the client has seen of other regions, and what that depended on, is
 *   applied here. A client that stays in its region never waits for this (what it read here is
 *   applied here); one that switches region, or fails over, waits until the new region has caught
 *   up, up to its deadline (`SESSION_NOT_AVAILABLE`, `details.reason: 'site-time'`, as any wait).
 * - A causal read is served by a replica that has applied everything the partition's leader had
 *   when the read arrived (the leader itself over Redis, where this process's view of a leader may
 *   be a push behind), besides the session's own vector: an update the client has seen elsewhere
 *   in the region, even through another client, is then in what it reads.
 * - A causal write is stamped after the whole clock (its dependency time is the clock's newest
 *   entry, as well as the session's), and its vector timestamp (the clock, with its own HLC in this
 *   region's entry) is recorded for its label (`CausalRegion.recordDeps`).
 *
 * Entries of a clock far past every region clock this region knows are refused with
 * `CLOCK_SKEW_EXCEEDED`, by the rule writes' dependency times follow (`region-clocks.ts`).
 * Calls at other levels go to the region's service unchanged: a session read in a causal cluster
 * keeps its per-key guarantees and does not wait for `SiteTime`.
 */
import {
  CausewayError,
  type CausalStatus,
  type Hlc,
  type Limits,
  type ReadNeed,
  SessionNotAvailableError,
  type Status,
  clockTop,
  hlcMax,
  zeroClock,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { ChangeFeedService } from './change-feed.js'
import type {
  ClusterService,
  ClusterShape,
  ReadRequest,
  ReadResult,
  WriteRequest,
  WriteResult,
} from './cluster-service.js'
import type { SetService } from './region-sets.js'
import type { SiblingContexts } from './sibling-contexts.js'
import { RegionClocks } from './region-clocks.js'
import { DEFAULT_MAX_CLOCK_OFFSET_MS, DEFAULT_SKEW_WAIT_MS } from './replica-router.js'

/** What the causal service needs of the region's service (`RegionService` fits). */
export interface RegionServiceLike extends ClusterService {
  /** Resolves once the leader of `partition` has applied `need`, to the ms it waited. */
  awaitLeader(partition: number, need: ReadNeed | undefined, timeoutMs: number): Promise<number>
  /** Stops what the service runs in the background (transactions' version collection). */
  close(): Promise<void>
}

/** What the causal service needs of the region's causal machinery (`CausalRegion` fits). */
export interface CausalParts {
  readonly view: {
    waitCovers(clock: readonly Hlc[], deadline: number): Promise<boolean>
    current(): Hlc[]
  }
  recordDeps(p: number, idx: number, vts: readonly Hlc[]): void
  status(): Promise<CausalStatus>
}

/** Options of a {@link CausalService}. */
export interface CausalServiceOptions {
  /** The region's service. */
  service: RegionServiceLike
  causal: CausalParts
  /** The region's partition leaders, by partition. */
  leaders: readonly AbstractPartitionReplica[]
  /** The region's wall clock. @default Date.now */
  now?: () => number
  /** As the region service's. @default 2000 */
  skewWaitMs?: number
  /** As the region service's. @default an hour */
  maxClockOffsetMs?: number
}

/** A region's service in a causal cluster. See the module comment. */
export class CausalService implements RegionServiceLike {
  readonly #inner: RegionServiceLike
  readonly #causal: CausalParts
  readonly #leaders: readonly AbstractPartitionReplica[]
  readonly #clocks: RegionClocks
  readonly #options: CausalServiceOptions
  readonly #regions: number
  readonly #limits: Limits

  constructor(options: CausalServiceOptions) {
    this.#options = options
    this.#inner = options.service
    const shape = options.service.shape()
    this.#regions = shape.regionNames.length
    this.#limits = shape.limits
    this.#causal = options.causal
    this.#leaders = options.leaders
    this.#clocks = new RegionClocks({
      region: options.service.region,
      leaders: () => options.leaders,
      now: options.now ?? Date.now,
    })
  }

  get region(): number {
    return this.#inner.region
  }

  get contexts(): SiblingContexts | undefined {
    return this.#inner.contexts
  }

  get sets(): SetService | undefined {
    return this.#inner.sets
  }

  get changes(): ChangeFeedService | undefined {
    return this.#inner.changes
  }

  shape(): ClusterShape {
    return { ...this.#inner.shape(), shipping: 'causal' }
  }

  awaitLeader(partition: number, need: ReadNeed | undefined, timeoutMs: number): Promise<number> {
    return this.#inner.awaitLeader(partition, need, timeoutMs)
  }

  close(): Promise<void> {
    return this.#inner.close()
  }

  async read(request: ReadRequest): Promise<ReadResult> {
    if (request.level !== 'causal') return this.#inner.read(request)
    const started = performance.now()
    const deadline = Date.now() + request.timeoutMs
    if (request.clock !== undefined) {
      await this.#admit(request.clock)
      await this.#cover(request.clock, deadline, request.timeoutMs)
    }
    const leader = this.#leaders[request.partition]
    if (!leader)
      throw new CausewayError('INVALID_REQUEST', `partition ${request.partition} does not exist`)
    let replica = request.replica
    // This process's view of a leader another process writes may be a push behind: only the leader
    // surely has what it had (unless a follower is asked for, then after a fresh look).
    if (leader.supports.refresh) {
      if (replica === 'follower') await leader.refresh()
      else replica = 'leader'
    }
    const frontier = leader.sv()
    const need: ReadNeed = {
      ...(request.need?.epoch === undefined ? {} : { epoch: request.need.epoch }),
      need: frontier.map((idx, d) => Math.max(idx, request.need?.need[d] ?? 0)),
    }
    const spent = performance.now() - started
    const result = await this.#inner.read({
      ...request,
      need,
      replica,
      timeoutMs: Math.max(0, Math.floor(request.timeoutMs - spent)),
    })
    return { ...result, waitedMs: result.waitedMs + spent }
  }

  async write(request: WriteRequest): Promise<WriteResult> {
    if (request.level !== 'causal') return this.#inner.write(request)
    const clock = request.clock
    let dt = request.dt
    if (clock !== undefined) {
      const timeoutMs = this.#limits.defaultTimeoutMs
      dt = hlcMax(dt, clockTop(clock))
      // Refused by the write's own dependency check (region-clocks.ts) when too far ahead.
      await this.#cover(clock, Date.now() + timeoutMs, timeoutMs)
    }
    const result = await this.#inner.write({ ...request, dt })
    if (result.replayed !== true) {
      const vts = clock ? [...clock] : zeroClock(this.#regions)
      vts[this.region] = result.ts
      this.#causal.recordDeps(request.partition, result.idx, vts)
    }
    return result
  }

  async status(): Promise<Status> {
    const [status, causal] = await Promise.all([this.#inner.status(), this.#causal.status()])
    return { ...status, causal }
  }

  // A clock entry no region's clock could reach is refused, as a write's dependency time is.
  async #admit(clock: readonly Hlc[]): Promise<void> {
    const { maxSkewMs } = this.#limits
    const check = await this.#clocks.admit(
      clockTop(clock),
      maxSkewMs,
      this.#options.skewWaitMs ?? DEFAULT_SKEW_WAIT_MS,
      this.#options.maxClockOffsetMs ?? DEFAULT_MAX_CLOCK_OFFSET_MS,
    )
    if (check.ok) return
    throw new CausewayError(
      'CLOCK_SKEW_EXCEEDED',
      `the session's vector clock has a time ${Math.round(check.aheadMs)} ms ahead of region ${this.region}'s clock and of every region clock it knows of; at most ${maxSkewMs} ms is allowed`,
      { aheadMs: check.aheadMs, maxSkewMs, waitedMs: Math.round(check.waitedMs) },
    )
  }

  async #cover(clock: readonly Hlc[], deadline: number, timeoutMs: number): Promise<void> {
    if (await this.#causal.view.waitCovers(clock, deadline)) return
    const site = this.#causal.view.current()
    throw new SessionNotAvailableError(
      `region ${this.region} has not applied what the session's vector clock covers within ${timeoutMs} ms`,
      {
        reason: 'site-time',
        region: this.region,
        clock: Object.fromEntries(clock.map((t, d) => [d, t])),
        siteTime: Object.fromEntries(site.map((t, d) => [d, t])),
        timeoutMs,
      },
    )
  }
}
