/**
 * Causal shipping (Eunomia) for one region, as one process runs it: the replicas of the region's
 * stabiliser this process hosts (several in the embedded cluster, one per gateway process over
 * Redis), the receiver's applier (run by whichever process holds the region's leader replica), the
 * receiving side every gateway offers to the other regions (labels and data go into the region's
 * {@link ReceiverStore}), this process's view of `SiteTime`, and the vector timestamps its writers
 * recorded. Which replica leads is decided outside (a lease, or in process) and told to
 * {@link CausalRegion.setLeader}.
 */
import {
  type CausalStatus,
  type Hlc,
  type ShipEnvelope,
  checkLabelEnvelope,
  zeroClock,
} from '@causeway/core'
import type { AbstractPartitionReplica } from '../../storage/abstract-partition-replica.js'
import { CausalApplier } from './causal-applier.js'
import { CausalDeps } from './causal-deps.js'
import type { LabelCheckpoint, LabelLink, LabelReceiver } from './label-link.js'
import type { ReceiverStore } from './receiver-store.js'
import { SiteTimeView } from './site-time-view.js'
import { type ProgressChannel, StabiliserReplica } from './stabiliser-replica.js'

/** The defaults of the causal knobs. */
export const DEFAULT_THETA_MS = 5
export const DEFAULT_DELTA_MS = 10

/** Options of a {@link CausalRegion}. */
export interface CausalRegionOptions {
  region: number
  regions: number
  /** The region's partition leaders, by partition. */
  leaders: readonly AbstractPartitionReplica[]
  /** How often the stabiliser leader ships stable labels, ms. */
  thetaMs: number
  /** How long a partition may stay silent before it is asked for a heartbeat, ms. */
  deltaMs: number
  /** @default 1000 */
  idleHeartbeatMs?: number
  store: ReceiverStore
  progress: ProgressChannel
  /** A label link to region `to`'s receiver. */
  link: (to: number) => LabelLink
  /** Per partition, the idx every other region has applied (where replicas start reading). */
  startFrom: () => Promise<readonly number[]>
  /** The names of the stabiliser replicas this process hosts (at least one). */
  replicaNames: readonly string[]
  /** How far ahead of the clock a label may be, ms. */
  maxAheadMs?: number
  /** How often a replica that does not lead reads the leader's progress, ms. @default 20 */
  progressMs?: number
  /** @default Date.now */
  now?: () => number
  /** Told about background failures (all retried). */
  onError?: (error: unknown, source: string) => void
}

/** Causal shipping of one region in this process. See the module comment. */
export class CausalRegion implements LabelReceiver {
  readonly region: number
  readonly regions: number
  readonly partitions: number
  readonly store: ReceiverStore
  readonly view: SiteTimeView
  readonly deps: CausalDeps
  readonly replicas: readonly StabiliserReplica[]
  readonly applier: CausalApplier
  readonly #options: CausalRegionOptions
  #leader: number | undefined
  #closed = false

  constructor(options: CausalRegionOptions) {
    if (options.replicaNames.length === 0) throw new RangeError('a region needs a replica')
    this.#options = options
    this.region = options.region
    this.regions = options.regions
    this.partitions = options.leaders.length
    this.store = options.store
    this.deps = new CausalDeps(this.partitions)
    this.view = new SiteTimeView({
      region: options.region,
      regions: options.regions,
      read: () => options.store.site.read(),
    })
    const destinations = Array.from({ length: options.regions }, (_, d) => d).filter(
      (d) => d !== options.region,
    )
    this.replicas = options.replicaNames.map(
      (name) =>
        new StabiliserReplica({
          name,
          origin: options.region,
          regions: options.regions,
          leaders: options.leaders,
          thetaMs: options.thetaMs,
          deltaMs: options.deltaMs,
          destinations,
          link: options.link,
          progress: options.progress,
          startFrom: options.startFrom,
          deps: (p, idx) => this.deps.get(p, idx),
          siteTime: () => options.store.site.read(),
          onTrim: (applied) => this.deps.prune(applied),
          ...pick(options, ['idleHeartbeatMs', 'maxAheadMs', 'now', 'progressMs']),
          ...(options.onError ? { onError: options.onError } : {}),
        }),
    )
    this.applier = new CausalApplier({
      region: options.region,
      regions: options.regions,
      leaders: options.leaders,
      store: options.store,
      onSiteTime: (origin, ts) => {
        const site = zeroClock(options.regions)
        site[origin] = ts
        this.view.advance(site)
      },
      ...(options.onError ? { onError: options.onError } : {}),
    })
  }

  /** Starts every replica hosted here (none leads until {@link setLeader}). */
  async start(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.start()))
    await this.view.refresh().catch(() => undefined)
  }

  /**
   * Makes replica `index` of this process the region's leader (it ships, and this process applies
   * other regions' updates), or none of them (`undefined`: another process leads).
   */
  setLeader(index: number | undefined): void {
    if (this.#closed) return
    const replica = index === undefined ? undefined : this.replicas[index]
    if (index !== undefined && (!replica || replica.stopped))
      throw new RangeError(`no running stabiliser replica ${index} here`)
    this.#leader = index
    this.replicas.forEach((r, i) => r.setLeader(i === index))
    if (index === undefined) void this.applier.stop()
    else this.applier.start()
  }

  /** The index of the replica of this process that leads, if one does. */
  get leader(): number | undefined {
    return this.#leader
  }

  /**
   * Stops replica `index` (a failure, for tests: it never leads again). When it led, the next
   * running replica of this process takes over.
   */
  async stopReplica(index: number): Promise<void> {
    const replica = this.replicas[index]
    if (!replica) throw new RangeError(`no stabiliser replica ${index}`)
    await replica.stop()
    if (this.#leader === index) {
      const next = this.replicas.findIndex((r) => !r.stopped)
      this.setLeader(next === -1 ? undefined : next)
    }
  }

  /** Records the vector timestamp a writer of this process gave local update `idx` of `p`. */
  recordDeps(p: number, idx: number, vts: readonly Hlc[]): void {
    if (this.regions > 2) this.deps.record(p, idx, vts)
  }

  // ---- the receiving side (LabelReceiver, and the data shippers' destination)

  labelCheckpoint(origin: number): Promise<LabelCheckpoint> {
    return this.store.labels.labelCheckpoint(origin)
  }

  async receiveLabels(json: unknown): Promise<LabelCheckpoint> {
    const envelope = checkLabelEnvelope(json, this.region, {
      regions: this.regions,
      partitions: this.partitions,
      nowMs: (this.#options.now ?? Date.now)(),
      ...(this.#options.maxAheadMs === undefined ? {} : { maxAheadMs: this.#options.maxAheadMs }),
    })
    const checkpoint = await this.store.labels.append(envelope)
    this.applier.kick()
    return checkpoint
  }

  /** The data shippers' checkpoint for `origin`'s entries of partition `p`. */
  dataCheckpoint(p: number, origin: number): Promise<number> {
    return this.store.inbox.dataCheckpoint(origin, p)
  }

  /** Takes a shipping envelope of another region's entries into the inbox. */
  async stash(p: number, envelope: ShipEnvelope): Promise<number> {
    const checkpoint = await this.store.inbox.stash(p, envelope)
    this.applier.kick()
    return checkpoint
  }

  /** The causal section of `GET /v1/status`. */
  async status(): Promise<CausalStatus> {
    const reporting =
      (this.#leader === undefined ? undefined : this.replicas[this.#leader]) ??
      this.replicas.find((r) => !r.stopped) ??
      this.replicas[0]!
    const { links, ...stabiliser } = reporting.status()
    const origins = await Promise.all(
      Array.from({ length: this.regions }, (_, d) => d)
        .filter((d) => d !== this.region)
        .map(async (origin) => {
          const blocked = this.applier.blocked(origin)
          return {
            origin,
            queued: await this.store.labels.queued(origin).catch(() => 0),
            ...(blocked === undefined ? {} : { blocked }),
          }
        }),
    )
    return {
      thetaMs: this.#options.thetaMs,
      deltaMs: this.#options.deltaMs,
      stabiliser,
      links,
      receiver: { siteTime: this.view.current(), origins },
    }
  }

  /** Stops every replica and the applier. */
  async close(): Promise<void> {
    this.#closed = true
    this.view.close()
    await Promise.all([...this.replicas.map((r) => r.stop()), this.applier.stop()])
  }
}

function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<T> {
  const out: Partial<T> = {}
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key]
  return out
}
