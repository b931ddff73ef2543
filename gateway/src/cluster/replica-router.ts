/**
 * Where a request of one region goes among the replicas of a partition, and what it waits for:
 * NuKV Algorithm 2's routing, shared by `RegionService` (keys), `RegionSets` (sets) and
 * `RegionChanges` (change feeds): a read picks an available replica, preferring one whose `sv`
 * already covers the session's vector, and waits (on `sv` events, with a deadline) until it does;
 * a write goes to the leader, with a dependency time no further ahead than `maxSkewMs` of the
 * latest clock the region knows (its own, or another region's as shipped entries report it:
 * `region-clocks.ts`), and a `majority` write waits for its leader's followers. It uses only the storage contract
 * (`AbstractPartitionReplica`), whatever the backend.
 */
import {
  CausewayError,
  EpochMismatchError,
  type EpochHistory,
  type LostPosition,
  SessionNotAvailableError,
  covers,
  currentEpoch,
  epochAt,
  lastKeptBefore,
  positionState,
  isHlc,
  vectorToObject,
  type Hlc,
  type Limits,
  type ReadNeed,
  type ReplicaChoice,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import { RegionClocks } from './region-clocks.js'

/** The default {@link ReplicaRouterOptions.skewWaitMs}. */
export const DEFAULT_SKEW_WAIT_MS = 2000

/**
 * The default {@link ReplicaRouterOptions.maxAheadMs} of a cluster with causal shipping: a write's
 * dependency time at most this far ahead of the latest region clock known. See the option.
 */
export const DEFAULT_MAX_CAUSAL_AHEAD_MS = 250

/** The default {@link ReplicaRouterOptions.maxClockOffsetMs}: an hour. */
export const DEFAULT_MAX_CLOCK_OFFSET_MS = 3_600_000

/** How far a region's leader of a partition has written, and in which epoch. */
export interface RegionWritten {
  written: number
  epoch: number
}

/** What a {@link ReplicaRouter} routes over (a subset of `RegionServiceOptions`). */
export interface ReplicaRouterOptions {
  region: number
  regionNames: readonly string[]
  limits: Limits
  /** `replicas[p][i]`: this region's replicas of partition `p`; replica 0 leads unless `leaderOf` says otherwise. */
  replicas: readonly (readonly AbstractPartitionReplica[])[]
  /**
   * Which replica of partition `p` leads now, by index in `replicas[p]` (a deployment whose
   * leaders fail over says; the Redis deployment's follows Sentinel).
   * @default 0 (the first replica always leads)
   */
  leaderOf?: (p: number) => number
  /**
   * Why the leader of partition `p` may serve nothing now, or undefined when it may: a Redis
   * leader whose process does not hold its claim (it came back empty or behind, or a failover is
   * checking it) must not answer reads either, as what it holds may be less than was acknowledged.
   * Reads then go to the followers; writes and reads that must be served by the leader are
   * `BACKEND_UNAVAILABLE` with this reason.
   * @default never fenced
   */
  leaderFence?: (p: number) => string | undefined
  /** The highest idx region `d`'s leader of partition `p` has written, when known. */
  written?: (d: number, p: number) => number | undefined
  /**
   * Asks another region `d` how far its leader of partition `p` has written, and in which epoch,
   * as of a moment after `since` (`Date.now()`), or at least `need`; undefined when it cannot
   * tell. For a deployment
   * where `written` knows only this region (Redis): a read needing more of `d` than `d` has written
   * is `VECTOR_UNREACHABLE` at once instead of waiting out its deadline (issue 23.6).
   * @default never asked
   */
  writtenElsewhere?: (
    d: number,
    p: number,
    need: number,
    since: number,
  ) => Promise<RegionWritten | undefined>
  /**
   * How long a `majority` write waits for the followers' confirmation, in ms.
   * @default limits.defaultTimeoutMs
   */
  majorityTimeoutMs?: number
  /** The region's wall clock in ms. @default Date.now */
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
   * How far ahead of the latest region clock known a write's dependency time (`causeway-dt`, and
   * in a causal write the newest entry of `causeway-clock`) may be, in ms; one further ahead
   * waits up to `skewWaitMs` for the clocks to catch up, then is refused (`CLOCK_SKEW_EXCEEDED`).
   *
   * A leader stamps a write above its dependency time, and its HLC stays there for every later
   * write of the partition. With causal shipping that matters to everyone: a label leaves its
   * region only once every partition's time has passed it (`StableTime`), so a partition stamped
   * 25 s ahead holds back the cross-region visibility of all its later writes, whoever makes
   * them, for 25 s. A causal cluster therefore bounds it tightly (`causal.maxAheadMs`, 250 ms by
   * default); a FIFO cluster ships each partition as it is written and keeps `limits.maxSkewMs`.
   * @default limits.maxSkewMs
   */
  maxAheadMs?: number
  /** Chooses among equally good replicas. @default Math.random */
  random?: () => number
}

/** A replica chosen for a read, once it covers the read's vector. */
export interface ServingReplica {
  replica: AbstractPartitionReplica
  waitedMs: number
}

/** Routes one region's requests to its partition replicas. */
export class ReplicaRouter {
  readonly region: number
  readonly #options: ReplicaRouterOptions
  readonly #now: () => number
  readonly #random: () => number
  readonly #clocks: RegionClocks

  constructor(options: ReplicaRouterOptions) {
    this.region = options.region
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#random = options.random ?? Math.random
    this.#clocks = new RegionClocks({
      region: options.region,
      // The current leaders: after a promotion, replica 0 may be the demoted (or dead) server.
      leaders: () => options.replicas.map((_, p) => this.leader(p)),
      now: this.#now,
    })
  }

  /** The number of regions. */
  get regions(): number {
    return this.#options.regionNames.length
  }

  /** The leader of partition `p`. */
  leader(p: number): AbstractPartitionReplica {
    const replicas = this.#partition(p)
    return replicas[this.#options.leaderOf?.(p) ?? 0] ?? replicas[0]!
  }

  /** Why the leader of partition `p` may serve nothing now (see `leaderFence`), if it may not. */
  fence(p: number): string | undefined {
    return this.#options.leaderFence?.(p)
  }

  /**
   * The leader of partition `p` for a write or a read only it may serve; `BACKEND_UNAVAILABLE`,
   * naming the partition and why, while it is fenced.
   */
  activeLeader(p: number): AbstractPartitionReplica {
    const leader = this.leader(p)
    const why = this.fence(p)
    if (why !== undefined) throw this.#fenced(p, leader, why)
    return leader
  }

  /** Every replica of partition `p` that may serve a read now (throws when none may). */
  serving(p: number): readonly AbstractPartitionReplica[] {
    const replicas = this.#partition(p)
    const why = this.fence(p)
    const leader = why === undefined ? undefined : this.leader(p)
    if (leader === undefined && replicas.every((r) => r.available)) return replicas
    const serving = replicas.filter((r) => r.available && r !== leader)
    if (serving.length === 0)
      throw leader === undefined ? this.#unavailable(p, replicas) : this.#fenced(p, leader, why!)
    return serving
  }

  /**
   * Checks a read vector against the partition's epoch and what its origins have written:
   * `EPOCH_MISMATCH`, `INVALID_VECTOR`, `VECTOR_UNREACHABLE`. Where other processes write the
   * leader's store (`supports.refresh`), this process's view may be a push behind: the leader's
   * `sv` is re-read before a need of this region is called unreachable, and a need is never
   * called unreachable when it cannot be re-read.
   */
  async checkNeed(p: number, need: ReadNeed | undefined): Promise<void> {
    if (need === undefined) return
    await this.checkPositions(p, need)
    const regions = this.regions
    if (need.need.length !== regions) {
      throw new CausewayError(
        'INVALID_VECTOR',
        `a read vector has one entry per region (${regions}), not ${need.need.length}`,
      )
    }
    for (const [d, idx] of need.need.entries()) {
      let written = this.#options.written?.(d, p)
      if (written === undefined || idx <= written) continue
      const leader = this.leader(p)
      if (d === this.region && leader.supports.refresh) {
        // A view a push behind is no reason to refuse: look again once.
        const looked = await leader.refresh().then(
          () => true,
          () => false,
        )
        if (!looked) continue // unknown: the read waits instead
        written = this.#options.written?.(d, p)
        if (written === undefined || idx <= written) continue
      }
      throw new CausewayError(
        'VECTOR_UNREACHABLE',
        `the read needs entry ${idx} of region ${d} in partition ${p}, but that region has written only ${written}`,
        { partition: p, region: d, need: idx, written },
      )
    }
  }

  /**
   * Refuses a vector that depends on a position the partition's history no longer holds
   * (`EPOCH_MISMATCH`, naming each lost position), judged by the leader's epoch histories: the
   * check writes need too, since a session's later write must not be applied after an earlier
   * one that a failover lost. A position of an epoch this region has not heard of is waited for
   * like any entry not applied yet, but one of this region's own that its leader does not know
   * (after looking again, where other processes write it) is `VECTOR_UNREACHABLE`.
   */
  async checkPositions(p: number, need: ReadNeed): Promise<void> {
    const leader = this.leader(p)
    let lost = this.#lostAt(leader, need)
    let unknown = this.#unknownOwn(leader, need)
    if ((lost.length > 0 || unknown !== undefined) && leader.supports.refresh) {
      // A view a push behind may not know a newer epoch yet: look again once.
      if (
        await leader.refresh().then(
          () => true,
          () => false,
        )
      ) {
        lost = this.#lostAt(leader, need)
        unknown = this.#unknownOwn(leader, need)
      }
    }
    if (lost.length > 0) throw this.#mismatch(p, lost, leader)
    if (unknown !== undefined) {
      const epoch = currentEpoch(leader.epochHistory(this.region))
      throw new CausewayError(
        'VECTOR_UNREACHABLE',
        `the read needs entry ${need.need[this.region]} of region ${this.region} in epoch ${unknown}, but that region's partition ${p} is at epoch ${epoch}`,
        { partition: p, region: this.region, epoch: unknown, current: epoch },
      )
    }
  }

  /** Picks a replica for a read and waits until it covers `need` (or throws at the deadline). */
  async serve(
    p: number,
    need: ReadNeed | undefined,
    choice: ReplicaChoice,
    timeoutMs: number,
  ): Promise<ServingReplica> {
    await this.checkNeed(p, need)
    const replica = this.#choose(p, this.serving(p), choice, need?.need)
    const waitedMs = await this.wait(p, replica, need, timeoutMs)
    // A failover while the read waited may have ended the epoch of a position it needs: its
    // index is then covered by the jump past the lost range, not by the write.
    if (need !== undefined) {
      const lost = this.#lostAt(replica, need)
      if (lost.length > 0) throw this.#mismatch(p, lost, replica)
    }
    return { replica, waitedMs }
  }

  // The positions of `need` that `replica`'s histories say were lost.
  #lostAt(replica: AbstractPartitionReplica, need: ReadNeed): LostPosition[] {
    const lost: LostPosition[] = []
    need.need.forEach((idx, d) => {
      if (idx <= 0) return
      const epoch = need.epochs?.[d] ?? 0
      const history = replica.epochHistory(d)
      if (positionState(history, epoch, idx) !== 'lost') return
      const kept = lastKeptBefore(history, idx + 1)
      lost.push({
        region: d,
        epoch,
        idx,
        kept,
        keptEpoch: kept > 0 ? (epochAt(history, kept) ?? 0) : 0,
      })
    })
    return lost
  }

  // The epoch of this region's own position in `need` when the leader does not know it.
  #unknownOwn(leader: AbstractPartitionReplica, need: ReadNeed): number | undefined {
    const d = this.region
    const idx = need.need[d] ?? 0
    const epoch = need.epochs?.[d] ?? 0
    if (idx <= 0 || epoch === 0) return undefined
    return positionState(leader.epochHistory(d), epoch, idx) === 'unknown' ? epoch : undefined
  }

  #mismatch(
    p: number,
    lost: readonly LostPosition[],
    replica: AbstractPartitionReplica,
  ): EpochMismatchError {
    const names = this.#options.regionNames
    const what = lost.map((l) => {
      const history = replica.epochHistory(l.region)
      return `entry ${l.idx} of region ${names[l.region] ?? l.region}${l.epoch ? ` (epoch ${l.epoch})` : ''} was lost when that region's leader changed: ${describeHistory(history)}`
    })
    return new EpochMismatchError(
      `the session depends on writes partition ${p} no longer has: ${what.join('; ')}. ` +
        'Re-base the session on what was kept (session.rebase, or the client option onEpochMismatch: "rebase") to go on without them',
      { partition: p, lost, current: currentEpoch(replica.epochHistory(this.region)) },
    )
  }

  /** Waits until `replica` covers `need`; resolves to the ms waited. */
  async wait(
    p: number,
    replica: AbstractPartitionReplica,
    need: ReadNeed | undefined,
    timeoutMs: number,
  ): Promise<number> {
    const started = performance.now()
    if (need === undefined) return 0
    const deadline = Date.now() + timeoutMs
    const waiting = replica.waitFor(need.need, deadline)
    const refusal = this.#unreachableElsewhere(p, replica, need)
    const covered =
      refusal === undefined
        ? await waiting
        : await Promise.race([
            waiting,
            refusal.then((error) => {
              if (error) throw error
              return waiting
            }),
          ])
    if (!covered) {
      if (Date.now() < deadline) {
        throw new CausewayError(
          'SHUTTING_DOWN',
          `replica ${replica.replica} of partition ${p} stopped while the request waited`,
        )
      }
      throw new SessionNotAvailableError(
        `replica ${replica.replica} of partition ${p} in region ${this.region} did not reach the ` +
          `session's vector within ${timeoutMs} ms`,
        {
          need: vectorToObject(need.need),
          sv: vectorToObject(replica.sv()),
          region: this.region,
          partition: p,
          replica: replica.replica,
          role: replica.replica === 0 ? 'leader' : 'follower',
          timeoutMs,
        },
      )
    }
    return performance.now() - started
  }

  /**
   * Where `written` cannot tell, asks each other region whose part of `need` the replica lacks how
   * far it has written (`writtenElsewhere`): resolves to `VECTOR_UNREACHABLE` when one has written
   * less than the vector needs, in the epoch the vector names (or, naming none, in the first), else
   * to undefined (the read waits as it would).
   * Undefined at once when nothing is to be asked.
   */
  #unreachableElsewhere(
    p: number,
    replica: AbstractPartitionReplica,
    need: ReadNeed,
  ): Promise<CausewayError | undefined> | undefined {
    const ask = this.#options.writtenElsewhere
    if (ask === undefined) return undefined
    const sv = replica.sv()
    const since = Date.now()
    const asked: Promise<CausewayError | undefined>[] = []
    need.need.forEach((idx, d) => {
      if (d === this.region || idx <= (sv[d] ?? 0)) return
      if (this.#options.written?.(d, p) !== undefined) return
      asked.push(
        ask(d, p, idx, since).then(
          (there) => {
            if (there === undefined || idx <= there.written) return undefined
            // Only in the epoch the vector names: a position of an older one may have been lost
            // (the epoch checks judge it); without one, only where no failover ever lost any. An
            // epoch above the one the region was in after the read arrived was never issued:
            // no session can hold a position of it (Schemathesis: `1:5@807207` waited, then 503).
            const epoch = need.epochs?.[d] ?? 0
            if (epoch === 0 ? there.epoch !== 1 : epoch < there.epoch) return undefined
            return new CausewayError(
              'VECTOR_UNREACHABLE',
              `the read needs entry ${idx} of region ${d} in partition ${p}, but that region has written only ${there.written}`,
              { partition: p, region: d, need: idx, written: there.written },
            )
          },
          () => undefined,
        ),
      )
    })
    if (asked.length === 0) return undefined
    return Promise.all(asked).then((answers) => answers.find((a) => a !== undefined))
  }

  /**
   * Waits until the leader of `p` has applied `need`, checked like a read's vector; resolves to
   * the ms waited (0 without a vector).
   */
  async awaitLeader(p: number, need: ReadNeed | undefined, timeoutMs: number): Promise<number> {
    if (need === undefined) return 0
    await this.checkNeed(p, need)
    return this.wait(p, this.activeLeader(p), need, timeoutMs)
  }

  /**
   * Refuses a write dependency more than `maxSkewMs` ahead of the latest clock this region knows
   * (`CLOCK_SKEW_EXCEEDED`), after waiting up to `skewWaitMs` for a later one: this region's wall
   * clock, or another region's as its shipped entries report it (`region-clocks.ts`). A session
   * that comes from a region whose clock runs ahead is served; a client that makes up a time
   * further ahead than every region's clock is not (at once, when no region's clock could be that
   * far ahead: `maxClockOffsetMs`).
   */
  async checkDependency(dt: Hlc): Promise<void> {
    if (!isHlc(dt)) throw new CausewayError('INVALID_HLC', `invalid dependency time ${String(dt)}`)
    const maxSkewMs = this.#options.maxAheadMs ?? this.#options.limits.maxSkewMs
    const waitMs = this.#options.skewWaitMs ?? DEFAULT_SKEW_WAIT_MS
    const maxOffsetMs = this.#options.maxClockOffsetMs ?? DEFAULT_MAX_CLOCK_OFFSET_MS
    const check = await this.#clocks.admit(dt, maxSkewMs, waitMs, maxOffsetMs)
    if (check.ok) return
    const aheadMs = Math.round(check.aheadMs)
    const causal = this.#options.maxAheadMs !== undefined
    throw new CausewayError(
      'CLOCK_SKEW_EXCEEDED',
      `the write depends on a time ${aheadMs} ms ahead of region ${this.region}'s clock and of every region clock it knows of ` +
        `(waited ${Math.round(check.waitedMs)} ms for a later one); at most ${maxSkewMs} ms is allowed` +
        (causal ? ' in a causal cluster (causal.maxAheadMs)' : ''),
      {
        dt,
        aheadMs: check.aheadMs,
        maxSkewMs,
        ...(causal ? { maxAheadMs: maxSkewMs } : {}),
        waitedMs: Math.round(check.waitedMs),
      },
    )
  }

  /**
   * Resolves once a majority of the partition's replicas (the leader among them) applied the
   * leader's local write `idx` (`durability: 'majority'`): the one path for every backend, which
   * confirms it its own way (`AbstractPartitionReplica.awaitReplicated`).
   */
  async majority(p: number, idx: number): Promise<void> {
    const leader = this.leader(p)
    const followers = this.#partition(p).filter((r) => r !== leader)
    const replicas = followers.length + 1
    const needed = Math.floor(replicas / 2)
    if (needed === 0) return
    const timeoutMs = this.#options.majorityTimeoutMs ?? this.#options.limits.defaultTimeoutMs
    const confirmed = await leader!
      .awaitReplicated(idx, followers, needed, timeoutMs)
      .catch(() => 0) // a backend that cannot tell confirms none
    if (confirmed < needed) {
      throw new CausewayError(
        'BACKEND_UNAVAILABLE',
        `write ${this.region}:${idx} is durable at the leader but only ${confirmed + 1} of ${replicas} replicas confirmed it within ${timeoutMs} ms`,
        { region: this.region, idx, confirmed: confirmed + 1, replicas },
      )
    }
  }

  /**
   * The commit index of this region's log of partition `p`, as in Raft: the highest index a
   * majority of its replicas hold, by each replica's `sv` (the embedded followers' apply
   * positions; on Redis the `sv` each server publishes as it applies, a follower's once its
   * replication stream brought the entries). A fenced leader and a replica that does not answer
   * count as holding nothing.
   */
  commitIndex(p: number): number {
    const replicas = this.#partition(p)
    const fenced = this.fence(p) === undefined ? undefined : this.leader(p)
    const held = replicas
      .filter((r) => r.available && r !== fenced)
      .map((r) => r.sv()[this.region] ?? 0)
      .sort((a, b) => b - a)
    return held[Math.floor(replicas.length / 2)] ?? 0
  }

  /**
   * Resolves, to the ms waited, once the commit index of partition `p` ({@link commitIndex})
   * reaches `idx`: what a read of a `durability: 'majority'` namespace waits for before it answers
   * a version of this region's log at or below `idx`. `BACKEND_UNAVAILABLE` after `timeoutMs`.
   */
  async committed(p: number, idx: number, timeoutMs: number): Promise<number> {
    if (idx <= 0 || this.commitIndex(p) >= idx) return 0
    const started = performance.now()
    const replicas = this.#partition(p)
    const reached = await new Promise<boolean>((resolve) => {
      const unsubscribe: (() => void)[] = []
      let settled = false
      const done = (ok: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        for (const u of unsubscribe) u()
        resolve(ok)
      }
      const timer = setTimeout(() => done(this.commitIndex(p) >= idx), timeoutMs)
      for (const r of replicas)
        unsubscribe.push(
          r.onAdvance(() => {
            if (this.commitIndex(p) >= idx) done(true)
          }),
        )
      // An advance between the first look and the subscriptions.
      if (this.commitIndex(p) >= idx) done(true)
    })
    if (reached) return performance.now() - started
    const majority = Math.floor(replicas.length / 2) + 1
    const holding = replicas.filter((r) => r.available && (r.sv()[this.region] ?? 0) >= idx).length
    throw new CausewayError(
      'BACKEND_UNAVAILABLE',
      `the newest version read of partition ${p} is at or below entry ${idx} of region ${this.region}'s log, which ${holding} of ${replicas.length} replicas hold after ${timeoutMs} ms; ` +
        `this namespace's reads answer only what a majority (${majority}) holds`,
      {
        region: this.region,
        partition: p,
        idx,
        holding,
        replicas: replicas.length,
        reason: 'not-committed',
      },
    )
  }

  /** The followers of partition `p` (every replica but its leader). */
  followers(p: number): readonly AbstractPartitionReplica[] {
    const leader = this.leader(p)
    return this.#partition(p).filter((r) => r !== leader)
  }

  #partition(p: number): readonly AbstractPartitionReplica[] {
    const replicas = this.#options.replicas[p]
    if (!replicas) throw new CausewayError('INVALID_REQUEST', `partition ${p} does not exist`)
    return replicas
  }

  #unavailable(p: number, replicas: readonly AbstractPartitionReplica[]): CausewayError {
    return new CausewayError(
      'BACKEND_UNAVAILABLE',
      `no replica of partition ${p} in region ${this.region} that the request may use is reachable`,
      { region: this.region, partition: p, backends: replicas.map((r) => r.backend) },
    )
  }

  #fenced(p: number, leader: AbstractPartitionReplica, why: string): CausewayError {
    return new CausewayError(
      'BACKEND_UNAVAILABLE',
      `partition ${p} of region ${this.region} has no leader that may serve now: ${why}`,
      {
        region: this.region,
        partition: p,
        replica: leader.replica,
        reason: 'leader-fenced',
        why,
      },
    )
  }

  #choose(
    p: number,
    serving: readonly AbstractPartitionReplica[],
    choice: ReplicaChoice,
    need: readonly number[] | undefined,
  ): AbstractPartitionReplica {
    const leader = this.leader(p)
    const leaderServes = serving.includes(leader)
    if (choice === 'leader') {
      const why = this.fence(p)
      if (why !== undefined) throw this.#fenced(p, leader, why)
      if (!leaderServes) throw this.#unavailable(p, [leader])
      return leader
    }
    if (this.fence(p) !== undefined) {
      // No leader feeds the followers while it is fenced: what each holds now is what it will
      // hold, so a read goes to one that holds the most (among those that cover its need).
      const ready = need ? serving.filter((r) => covers(r.sv(), need)) : []
      return this.#pick(mostAdvanced(ready.length > 0 ? ready : serving))!
    }
    const fallback = leaderServes ? leader : serving[0]!
    if (choice === 'follower') return this.#pick(serving.filter((r) => r !== leader)) ?? fallback
    const ready = need ? serving.filter((r) => covers(r.sv(), need)) : serving
    return this.#pick(ready) ?? fallback
  }

  #pick(replicas: readonly AbstractPartitionReplica[]): AbstractPartitionReplica | undefined {
    return replicas[Math.floor(this.#random() * replicas.length)]
  }
}

// The replicas whose `sv` holds the most entries (all of them when they hold as much).
function mostAdvanced(
  replicas: readonly AbstractPartitionReplica[],
): readonly AbstractPartitionReplica[] {
  const held = replicas.map((r) => r.sv().reduce((sum, idx) => sum + idx, 0))
  const most = Math.max(...held)
  return replicas.filter((_, i) => held[i] === most)
}

// `epoch 1 kept 1..58; epoch 2 from 1001`: a history for people.
function describeHistory(history: EpochHistory): string {
  return history
    .map((s, i) => {
      const next = history[i + 1]
      if (next === undefined) return `epoch ${s.epoch} from ${s.first}`
      const last = s.last ?? next.first - 1
      return last < s.first
        ? `epoch ${s.epoch} kept none`
        : `epoch ${s.epoch} kept ${s.first}..${last}`
    })
    .join('; ')
}

/**
 * What a reply tells a session of origin `dc`'s position at `replica`, which has applied `dc`'s
 * log up to `idx` (its `sv[dc]`): the highest index up to `idx` that `dc`'s history keeps, and the
 * epoch `dc` issued it in. A new epoch starts `sv[dc]` just below its first index, above a range
 * that was lost or never used; a session must not take an index of that range as a position.
 */
export function keptPosition(
  replica: AbstractPartitionReplica,
  dc: number,
  idx: number,
): { idx: number; epoch: number } {
  const history = replica.epochHistory(dc)
  const kept = lastKeptBefore(history, idx + 1)
  return { idx: kept, epoch: kept > 0 ? (epochAt(history, kept) ?? 1) : replica.epoch() }
}

/** `sv` as positions a session may hold: each entry at the highest index its history keeps. */
export function keptVector(replica: AbstractPartitionReplica, sv: readonly number[]): number[] {
  return sv.map((idx, dc) => keptPosition(replica, dc, idx).idx)
}

/**
 * The epoch of the position a reply reports for origin `dc` at `idx` ({@link keptPosition}); the
 * replica's own epoch when there is none (a key never written).
 */
export function positionEpoch(
  replica: AbstractPartitionReplica,
  dc: number | undefined,
  idx: number | undefined,
): number {
  if (dc === undefined || idx === undefined || idx <= 0) return replica.epoch()
  return keptPosition(replica, dc, idx).epoch
}
