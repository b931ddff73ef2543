/**
 * One replica of a region's fault-tolerant stabiliser (thesis Algorithm 4). Every replica takes
 * every partition's labels (a {@link PartitionFeed} per partition reads them from the partition
 * leader's log) into its own {@link Stabiliser}; the algorithm is deterministic, so all of them
 * order the same labels the same way. One of them leads (chosen outside: a lease in Redis, in
 * process in the embedded cluster): every `theta` ms it asks the partitions that have been silent
 * for `Delta` ms for a heartbeat (Algorithm 2), computes `StableTime`, ships the newly stable labels
 * to every other region ({@link LabelShipper}s) and publishes its progress: its stable time and
 * what every other region has applied. The others read that progress (`STABLE`, Algorithm 4 lines
 * 8–10) and drop only the labels every region has applied, not all those the leader shipped: a
 * shipment still in flight when the leader dies is shipped again by the next one, and receivers
 * drop what they have. (Nor do they order labels on the leader's word: one that has not read a
 * partition's log as far would order wrongly past it. A new leader orders its labels itself, once
 * its own heartbeats have come back.) A new leader asks each destination where it stands and
 * ships from there.
 *
 * Heartbeats are asked only while labels wait to be stable, and otherwise once per
 * `idleHeartbeatMs`: an idle region costs its partitions nothing, yet its stable time (and so the
 * other regions' `SiteTime` of it) keeps moving. Only the leader asks; the stable times of the
 * others come from its progress.
 */
import { HLC_ZERO, type Hlc, hlcMillis } from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import type { LabelLink } from './label-link.js'
import { LabelShipper, type LabelShipperStatus } from './label-shipper.js'
import { PartitionFeed } from './partition-feed.js'
import { Stabiliser } from './stabiliser.js'

/** What a stabiliser leader tells the other replicas of its region. */
export interface StabiliserProgress {
  /** Every label at or below this time is stable (and in the leader's stream). */
  stableTime: Hlc
  /** Per partition: the idx every other region has applied. */
  applied: number[]
}

/** Where the leader's progress goes, and the other replicas read it from. */
export interface ProgressChannel {
  publish(progress: StabiliserProgress): Promise<void>
  read(): Promise<StabiliserProgress | undefined>
}

/** Options of a {@link StabiliserReplica}. */
export interface StabiliserReplicaOptions {
  /** Names the replica in the status (the gateway's URL, or `r0.s1` in process). */
  name: string
  origin: number
  regions: number
  /** The region's partition leaders, by partition. */
  leaders: readonly AbstractPartitionReplica[]
  /** How often the leader ships stable labels, ms (Algorithm 3's theta). */
  thetaMs: number
  /** How long a partition may stay silent before it is asked for a heartbeat, ms (Delta). */
  deltaMs: number
  /**
   * How often an idle partition is asked for a heartbeat when no label waits, ms.
   * @default 1000
   */
  idleHeartbeatMs?: number
  /** The other regions. */
  destinations: readonly number[]
  /** A link to region `to`'s receiver, made when this replica starts leading. */
  link: (to: number) => LabelLink
  progress: ProgressChannel
  /**
   * Per partition, the idx every other region has applied when the replica starts (its feeds
   * start after it).
   */
  startFrom: () => Promise<readonly number[]>
  /** The vector timestamp a writer of this process recorded for a local update. */
  deps?: (p: number, idx: number) => readonly Hlc[] | undefined
  /** The region's `SiteTime`, from where it is kept. */
  siteTime: () => Promise<readonly Hlc[]>
  /** Called after the leader trimmed: updates up to `applied[p]` are applied everywhere. */
  onTrim?: (applied: readonly number[]) => void
  /**
   * How often a replica that does not lead reads the leader's progress, ms.
   * @default 20
   */
  progressMs?: number
  /** Most labels per envelope to another region. @default 4096 */
  batchSize?: number
  /** How far ahead of the clock a label may be, ms. @default an hour and a half */
  maxAheadMs?: number
  /** @default Date.now */
  now?: () => number
  /** Told about failures (all retried). */
  onError?: (error: unknown, source: string) => void
}

/** One stabiliser replica of a region. See the module comment. */
export class StabiliserReplica {
  readonly name: string
  readonly stabiliser: Stabiliser
  readonly #options: StabiliserReplicaOptions
  readonly #now: () => number
  #feeds: PartitionFeed[] = []
  #shippers: LabelShipper[] = []
  #timer: ReturnType<typeof setInterval> | undefined
  #progressTimer: ReturnType<typeof setInterval> | undefined
  #leading = false
  #leaderSince: number | undefined
  #running = false
  #stopped = false
  #started: Promise<void> | undefined
  readonly #heartbeating = new Set<number>()
  readonly #lastHeartbeat: number[]
  #readingProgress = false
  #published: string | undefined
  #lastPublishAt = 0

  constructor(options: StabiliserReplicaOptions) {
    this.#options = options
    this.name = options.name
    this.#now = options.now ?? Date.now
    this.stabiliser = new Stabiliser({
      origin: options.origin,
      regions: options.regions,
      partitions: options.leaders.length,
      now: this.#now,
      ...(options.maxAheadMs === undefined ? {} : { maxAheadMs: options.maxAheadMs }),
    })
    this.#lastHeartbeat = new Array<number>(options.leaders.length).fill(0)
  }

  /** True while it leads. */
  get leading(): boolean {
    return this.#leading
  }

  /** True once {@link stop} was called. */
  get stopped(): boolean {
    return this.#stopped
  }

  /** True between {@link start} and {@link stop}. */
  get running(): boolean {
    return this.#running && !this.#stopped
  }

  /** Starts its feeds after what every region has applied, and its timers. */
  start(): Promise<void> {
    this.#started ??= (async () => {
      const from = await this.#options.startFrom()
      if (this.#stopped) return
      this.#feeds = this.#options.leaders.map(
        (leader) =>
          new PartitionFeed({
            leader,
            stabiliser: this.stabiliser,
            siteTime: this.#options.siteTime,
            now: this.#now,
            ...(this.#options.deps ? { deps: this.#options.deps } : {}),
            onError: (error) =>
              this.#error(error, `reading the log of partition ${leader.partition}`),
          }),
      )
      this.#feeds.forEach((feed, p) => feed.start(from[p] ?? 0, HLC_ZERO))
      this.#running = true
      this.#timer = setInterval(() => this.#tick(), this.#options.thetaMs)
      this.#progressTimer = setInterval(
        () => void this.#followProgress(),
        this.#options.progressMs ?? 20,
      )
      if (this.#leading) this.#startShipping()
    })()
    return this.#started
  }

  /** Leads (ships) or stops leading. */
  setLeader(leading: boolean): void {
    if (leading === this.#leading) return
    this.#leading = leading
    this.#leaderSince = leading ? this.#now() : undefined
    if (!this.#running) return
    if (leading) this.#startShipping()
    else void this.#stopShipping()
  }

  /** Stops everything (a replica that stopped never leads again). */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#leading = false
    clearInterval(this.#timer)
    clearInterval(this.#progressTimer)
    for (const feed of this.#feeds) feed.stop()
    await this.#stopShipping()
  }

  /** The status of the stabiliser part of `GET /v1/status`. */
  status(): {
    replica: string
    leader: boolean
    leaderSince?: string
    stableTime: Hlc
    partitionTime: Hlc[]
    pending: number
    retained: number
    ordered: number
    links: LabelShipperStatus[]
  } {
    const counts = this.stabiliser.counts()
    return {
      replica: this.name,
      leader: this.#leading,
      ...(this.#leaderSince === undefined
        ? {}
        : { leaderSince: new Date(this.#leaderSince).toISOString() }),
      stableTime: this.stabiliser.stabilisedTo(),
      partitionTime: this.stabiliser.partitionTime(),
      ...counts,
      links: this.#shippers.map((s) => s.status()),
    }
  }

  #startShipping(): void {
    if (this.#shippers.length > 0 || this.#stopped) return
    this.#shippers = this.#options.destinations.map(
      (to) =>
        new LabelShipper({
          stabiliser: this.stabiliser,
          to,
          link: this.#options.link(to),
          announceMs: this.#options.thetaMs,
          now: this.#now,
          ...(this.#options.batchSize === undefined ? {} : { batchSize: this.#options.batchSize }),
          onError: (error) => this.#error(error, `shipping labels to region ${to}`),
        }),
    )
    for (const shipper of this.#shippers) shipper.start()
  }

  async #stopShipping(): Promise<void> {
    const shippers = this.#shippers
    this.#shippers = []
    await Promise.all(shippers.map((s) => s.stop()))
  }

  // Algorithm 4, PROCESS_STABLE at the leader (with Algorithm 2's heartbeats).
  #tick(): void {
    if (!this.#leading || this.#stopped) return
    this.#askHeartbeats()
    this.stabiliser.stabilise()
    for (const shipper of this.#shippers) shipper.pump()
    const applied = this.#appliedEverywhere()
    if (applied !== undefined) {
      if (this.stabiliser.trim(applied) > 0) this.#options.onTrim?.(applied)
      void this.#publish({ stableTime: this.stabiliser.stabilisedTo(), applied })
    }
  }

  // Partitions silent for Delta while labels wait to be stable (or for idleHeartbeatMs) are
  // asked for a heartbeat; one at a time per partition.
  #askHeartbeats(): void {
    const nowMs = this.#now()
    const waiting = this.stabiliser.counts().pending > 0
    const partitionTime = this.stabiliser.partitionTime()
    const idleMs = this.#options.idleHeartbeatMs ?? 1000
    this.#feeds.forEach((feed, p) => {
      if (this.#heartbeating.has(p)) return
      if (nowMs - hlcMillis(partitionTime[p]!) < this.#options.deltaMs) return
      if (!waiting && nowMs - this.#lastHeartbeat[p]! < idleMs) return
      this.#heartbeating.add(p)
      this.#lastHeartbeat[p] = nowMs
      feed
        .heartbeat()
        .catch((error: unknown) => this.#error(error, `a heartbeat of partition ${p}`))
        .finally(() => this.#heartbeating.delete(p))
    })
  }

  // Per partition, the idx every other region has applied (once each has said).
  #appliedEverywhere(): number[] | undefined {
    if (this.#shippers.length === 0) return undefined
    let min: number[] | undefined
    for (const shipper of this.#shippers) {
      const applied = shipper.applied()
      if (applied === undefined) return undefined
      min = min === undefined ? [...applied] : min.map((idx, p) => Math.min(idx, applied[p] ?? 0))
    }
    return min
  }

  async #publish(progress: StabiliserProgress): Promise<void> {
    const text = JSON.stringify(progress)
    // Unchanged progress is published again now and then (a new replica reads it to start).
    if (text === this.#published && this.#now() - this.#lastPublishAt < 1000) return
    this.#published = text
    this.#lastPublishAt = this.#now()
    try {
      await this.#options.progress.publish(progress)
    } catch (error) {
      this.#published = undefined
      this.#error(error, 'publishing the stabiliser progress')
    }
  }

  // Algorithm 4, STABLE at a replica that does not lead.
  async #followProgress(): Promise<void> {
    if (this.#leading || this.#stopped || this.#readingProgress) return
    this.#readingProgress = true
    try {
      const progress = await this.#options.progress.read()
      if (progress === undefined || this.#leading) return
      this.stabiliser.trim(progress.applied)
    } catch (error) {
      this.#error(error, 'reading the stabiliser progress')
    } finally {
      this.#readingProgress = false
    }
  }

  #error(error: unknown, source: string): void {
    if (!this.#stopped) this.#options.onError?.(error, source)
  }
}
