/**
 * A whole cluster in one process: regions × partitions × replicas, each replica its own LevelDB
 * (`classic-level` under `dataDir`, or `memory-level`), a follower feed per follower (with the
 * injected replica lag) and a FIFO shipper per partition and ordered region pair (with the
 * injected one-way WAN delay). Replica 0 of each (region, partition) leads.
 *
 * With `shipping: 'causal'` (Eunomia), each region also runs its stabiliser (`causal.replicas`
 * replicas in this process; the first running one leads) and its receiver: the shippers deliver
 * each region's data to the other regions' inboxes instead of their leaders, the stabiliser
 * leaders ship the labels, and each region's applier makes the updates visible in causal order.
 */
import { join } from 'node:path'
import {
  CausewayError,
  DEFAULT_LIMITS,
  type Limits,
  type Namespaces,
  type ShippingMode,
  checkNamespaces,
  hasTransactions,
  isShippingMode,
} from '@causeway/core'
import { type Logger, processLogger } from '../log.js'
import {
  CausalRegion,
  DEFAULT_DELTA_MS,
  DEFAULT_THETA_MS,
} from '../replication/causal/causal-region.js'
import { InProcessLabelLink } from '../replication/causal/in-process-label-link.js'
import { MemoryReceiverStore } from '../replication/causal/memory-receiver-store.js'
import type { StabiliserProgress } from '../replication/causal/stabiliser-replica.js'
import { FollowerFeed } from '../replication/follower-feed.js'
import { InProcessLink } from '../replication/in-process-link.js'
import { Shipper } from '../replication/shipper.js'
import { InProcessTxLink } from '../replication/tx-links.js'
import { TxShipper } from '../replication/tx-shipper.js'
import { LevelPartitionReplica, type StringLevel } from '../storage/level/level-replica.js'
import { LevelTxLog } from '../storage/level/level-tx-log.js'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import { QuarantineRegistry } from '../storage/quarantine.js'
import { CausalService, type RegionServiceLike } from './causal-service.js'
import { type ClusterLayout, newManifest, openManifest } from './cluster-manifest.js'
import { RegionService } from './region-service.js'
import { DEFAULT_MAX_CAUSAL_AHEAD_MS } from './replica-router.js'
import type { OpenSnapshotsOptions } from './transactions/open-snapshots.js'
import { TxApplier } from './transactions/tx-applier.js'

/** Options of {@link EmbeddedCluster.start}. */
export interface EmbeddedClusterOptions {
  /** Number of regions (at most 255). */
  regions: number
  /** Number of partitions, the same in every region. */
  partitions: number
  /** Replicas per partition in each region (the first leads). */
  replicas: number
  /**
   * Directory holding the cluster (`cluster.json` and one LevelDB per replica), created if
   * missing. Undefined keeps everything in memory, with a fresh cluster id on every start.
   * @default undefined
   */
  dataDir?: string
  /**
   * How long after its leader a follower applies an entry, in ms.
   * @default 0
   */
  replicaLagMs?: number
  /**
   * One-way delay between regions, in ms (an acknowledgement takes as long again).
   * @default 0
   */
  wanDelayMs?: number
  /**
   * Names of the regions, by id.
   * @default ['r0', 'r1', ...]
   */
  regionNames?: string[]
  /**
   * Limits that differ from the defaults.
   * @default DEFAULT_LIMITS
   */
  limits?: Partial<Limits>
  /**
   * Skew of each region's wall clock, in ms (for tests: a region whose clock runs ahead or behind).
   * @default 0 for every region
   */
  clockOffsetsMs?: number[]
  /**
   * How long a write whose dependency time is more than `limits.maxSkewMs` ahead of every region
   * clock its region knows waits for a later one before `CLOCK_SKEW_EXCEEDED`, in ms
   * (`ReplicaRouterOptions.skewWaitMs`).
   * @default 2000
   */
  skewWaitMs?: number
  /**
   * How far another region's wall clock may run ahead, in ms: a dependency more than
   * `limits.maxSkewMs` past the region's clock plus this is refused without waiting
   * (`ReplicaRouterOptions.maxClockOffsetMs`).
   * @default 3600000 (an hour)
   */
  maxClockOffsetMs?: number
  /**
   * Most entries per shipped batch.
   * @default 256
   */
  shipBatchSize?: number
  /**
   * How writes travel between regions: `fifo`, each partition's log in order (per-key session
   * guarantees), or `causal` (Eunomia: causal across keys; levels `causal`). Published in the
   * topology. An unknown mode is refused with `INVALID_OPTION`.
   * @default 'fifo'
   */
  shipping?: ShippingMode
  /** Causal shipping's knobs (with `shipping: 'causal'`). */
  causal?: CausalOptions
  /**
   * Tests and benchmarks: the one-way WAN delay of each partition's data, by partition id, in
   * place of `wanDelayMs` (labels keep `wanDelayMs`): partitions whose writes reach the other
   * regions at different speeds, as per-partition links of a real WAN may.
   * @default `wanDelayMs` for every partition
   */
  partitionWanDelaysMs?: number[]
  /**
   * `fsync` every committed batch before acknowledging it.
   * @default true
   */
  sync?: boolean
  /**
   * Namespaces and their conflict mode, e.g. `{ cart: { conflicts: 'siblings' } }`: keys of a
   * `siblings` namespace (`cart:42`) keep concurrent writes as siblings with a causal context;
   * every other key is last-writer-wins. Published in the topology.
   * @default {} (every key last-writer-wins)
   */
  namespaces?: Namespaces
  /**
   * How long an op-id client (`causeway-op-id`) may be idle at a partition leader or transaction
   * log before its records are dropped; its mark stays, so a resend is `OP_EXPIRED`, never
   * applied again (`storage/op-records.ts`), ms.
   * @default 24 hours
   */
  opRetentionMs?: number
  /**
   * Where background events are logged (pino, `log.ts`): what `onError` and `onQuarantine` report
   * when not given.
   * @default the process's logger (pino at `warn` on stderr)
   */
  log?: Logger
  /**
   * Told about background failures: a replica that failed, a shipping or replication step that
   * will be retried.
   * @default logs them as errors to `log`
   */
  onError?: (error: unknown, source: string) => void
  /**
   * Told, once per key and at most ten times a minute, about keys quarantined because their
   * stored value does not decode, and entries whose sibling set does not (`quarantine.ts`).
   * @default logs them as warnings to `log`
   */
  onQuarantine?: (line: string) => void
  /**
   * For tests and tools: the store of replica `replica` of `partition` in `region`, instead of
   * a new one under `dataDir` (or in memory). The replica opens and closes it, so a store can be
   * handed to a cluster started again.
   * @default a new store per replica
   */
  store?: (region: number, partition: number, replica: number) => StringLevel
  /**
   * For tests and tools: the store of region `region`'s transaction log, as {@link store}.
   * @default a new store per region (under `dataDir`, or in memory)
   */
  txLogStore?: (region: number) => StringLevel
  /**
   * Transactions the applier's commit cache indexes (`transactions/commit-cache.ts`); `false`
   * decides every transaction from the partitions' versions (the benchmark's "without cache").
   * @default 10000
   */
  commitCache?: number | false
  /**
   * How long snapshots stay open for transactions (`transactions/open-snapshots.ts`).
   * @default 30 s after the last read, 5 min at most
   */
  snapshots?: OpenSnapshotsOptions
  /**
   * How often each region collects versions behind its oldest open snapshot, in ms.
   * @default 1000
   */
  collectEveryMs?: number
}

/** The knobs of causal shipping. */
export interface CausalOptions {
  /**
   * How often each region's stabiliser leader ships its stable labels, ms (Eunomia's theta).
   * @default 5
   */
  thetaMs?: number
  /**
   * How long a partition may write nothing before it is asked for a heartbeat, ms (Delta).
   * @default 10
   */
  deltaMs?: number
  /**
   * Replicas of each region's stabiliser (Algorithm 4); the first running one leads.
   * @default 1
   */
  replicas?: number
  /**
   * How far ahead of the latest region clock known a write's dependency time may be, ms (0 to
   * 3600000); further ahead, it waits up to `skewWaitMs`, then `CLOCK_SKEW_EXCEEDED`.
   * A partition stamped ahead holds back the visibility of its later writes in other regions by
   * as much (`ReplicaRouterOptions.maxAheadMs`), so it is far tighter than `maxSkewMs`.
   * @default 250
   */
  maxAheadMs?: number
}

const MAX_REGIONS = 255

/** A multi-region cluster hosted in this process. */
export class EmbeddedCluster {
  /** The cluster id; sessions are bound to it. Kept in `dataDir/cluster.json`. */
  readonly id: string
  readonly regions: number
  readonly partitions: number
  readonly replicas: number
  readonly regionNames: readonly string[]
  readonly limits: Readonly<Limits>
  /** Where the cluster lives, or undefined in memory. */
  readonly dataDir: string | undefined
  /** The configured namespaces (checked, with a null prototype). */
  readonly namespaces: Namespaces
  /** How writes travel between regions. */
  readonly shipping: ShippingMode

  /** `#members[d][p][i]`. */
  readonly #members: AbstractPartitionReplica[][][]
  /** `#feeds[d][p][i]`: the feed of each follower (none for the leader, i = 0). */
  readonly #feeds: (FollowerFeed | undefined)[][][]
  readonly #shippers: Shipper[]
  readonly #services: RegionServiceLike[]
  /** With causal shipping: each region's causal machinery. */
  readonly #causal: CausalRegion[]
  /** `#txLogs[d]`: region `d`'s transaction log, when the cluster has transactional namespaces. */
  readonly #txLogs: LevelTxLog[]
  readonly #appliers: TxApplier[]
  /** One per ordered pair of regions: each region's applied transactions, as units. */
  readonly #txShippers: TxShipper[] = []
  #closing: Promise<void> | undefined

  private constructor(
    options: Required<Pick<EmbeddedClusterOptions, 'regions' | 'partitions' | 'replicas'>> & {
      id: string
      dataDir: string | undefined
      regionNames: string[]
      limits: Limits
      clocks: (() => number)[]
      skewWaitMs: number | undefined
      maxClockOffsetMs: number | undefined
      /** Causal shipping's bound on dependency times (`CausalOptions.maxAheadMs`). */
      maxAheadMs: number | undefined
      namespaces: Namespaces
      members: AbstractPartitionReplica[][][]
      feeds: (FollowerFeed | undefined)[][][]
      shippers: Shipper[]
      quarantines: QuarantineRegistry[]
      txLogs: LevelTxLog[]
      wanDelayMs: number
      commitCache: number | false | undefined
      snapshots: OpenSnapshotsOptions | undefined
      collectEveryMs: number | undefined
      onError: (error: unknown, source: string) => void
      causal: CausalRegion[]
    },
  ) {
    this.id = options.id
    this.regions = options.regions
    this.partitions = options.partitions
    this.replicas = options.replicas
    this.regionNames = options.regionNames
    this.limits = Object.freeze({ ...options.limits })
    this.dataDir = options.dataDir
    this.namespaces = options.namespaces
    this.#members = options.members
    this.#feeds = options.feeds
    this.#shippers = options.shippers
    this.#txLogs = options.txLogs
    this.#causal = options.causal
    this.shipping = options.causal.length > 0 ? 'causal' : 'fifo'
    const services = this.regionNames.map(
      (_, d) =>
        new RegionService({
          cluster: this.id,
          region: d,
          regionNames: this.regionNames,
          limits: this.limits,
          replicas: this.#members[d]!,
          written: (origin, p) => this.#leader(origin, p).sv()[origin],
          lag: (p, i) => this.#feeds[d]![p]![i]?.lag() ?? { entries: 0, ms: 0 },
          shippers: () =>
            Promise.all(this.#shippers.filter((s) => s.from === d).map((s) => s.status())),
          now: options.clocks[d]!,
          ...(options.skewWaitMs === undefined ? {} : { skewWaitMs: options.skewWaitMs }),
          ...(options.maxClockOffsetMs === undefined
            ? {}
            : { maxClockOffsetMs: options.maxClockOffsetMs }),
          ...(options.maxAheadMs === undefined ? {} : { maxAheadMs: options.maxAheadMs }),
          // Followers here are feeds with injected lag: a majority may wait as long as a call may.
          majorityTimeoutMs: this.limits.maxTimeoutMs,
          namespaces: options.namespaces,
          quarantine: options.quarantines[d]!,
          ...(options.txLogs[d] === undefined
            ? {}
            : {
                transactions: {
                  log: options.txLogs[d],
                  ...(options.snapshots ? { snapshots: options.snapshots } : {}),
                  ...(options.collectEveryMs === undefined
                    ? {}
                    : { collectEveryMs: options.collectEveryMs }),
                  onError: (error: unknown) =>
                    options.onError(error, `collecting versions in region ${d}`),
                },
              }),
        }),
    )
    this.#services = services.map((service, d) => {
      const causal = this.#causal[d]
      if (causal === undefined) return service
      return new CausalService({
        service,
        causal,
        leaders: this.#members[d]!.map((partition) => partition[0]!),
        now: options.clocks[d]!,
        ...(options.skewWaitMs === undefined ? {} : { skewWaitMs: options.skewWaitMs }),
        ...(options.maxClockOffsetMs === undefined
          ? {}
          : { maxClockOffsetMs: options.maxClockOffsetMs }),
      })
    })
    this.#appliers = options.txLogs.map(
      (log, d) =>
        new TxApplier({
          log,
          region: d,
          partitions: this.partitions,
          leader: (p) => this.#leader(d, p),
          ...(options.commitCache === undefined ? {} : { commitCache: options.commitCache }),
          onError: (error) => options.onError(error, `applying transactions in region ${d}`),
        }),
    )
    for (const applier of this.#appliers) applier.start()
    for (const [from, log] of options.txLogs.entries())
      for (const [to, destination] of options.txLogs.entries()) {
        if (from === to) continue
        const shipper = new TxShipper({
          log,
          to,
          link: new InProcessTxLink({
            origin: from,
            destination,
            partitions: this.partitions,
            delayMs: options.wanDelayMs,
          }),
          onError: (error) =>
            options.onError(error, `shipping transactions from region ${from} to ${to}`),
        })
        this.#txShippers.push(shipper)
        shipper.start()
      }
  }

  /** Opens (or creates) every replica, then starts the follower feeds and the shippers. */
  static async start(options: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
    const layout = checkLayout(options)
    const { regions, partitions, replicas } = layout
    const shipping = options.shipping ?? 'fifo'
    if (!isShippingMode(shipping))
      throw new CausewayError(
        'INVALID_OPTION',
        `unknown shipping mode ${JSON.stringify(shipping)}: use 'fifo' or 'causal'`,
        { option: 'shipping', got: String(shipping) },
      )
    const causalOptions = checkCausal(options.causal, shipping)
    const partitionDelays = checkPartitionDelays(options.partitionWanDelaysMs, partitions)
    const regionNames = options.regionNames ?? Array.from({ length: regions }, (_, d) => `r${d}`)
    checkRegionNames(regionNames, regions)
    const namespaces = checkNamespaces(options.namespaces)
    // As in a config file (cluster-config.ts): transactions are not built for causal shipping.
    if (shipping === 'causal' && hasTransactions(namespaces))
      throw new CausewayError(
        'INVALID_OPTION',
        "transactional namespaces do not work with shipping: 'causal' yet; use fifo shipping",
        { option: 'shipping' },
      )
    const offsets = options.clockOffsetsMs ?? []
    if (offsets.length > regions || offsets.some((o) => !Number.isFinite(o))) {
      throw new RangeError(`clockOffsetsMs needs at most one finite offset per region (${regions})`)
    }
    const clocks = regionNames.map((_, d) => {
      const offset = offsets[d] ?? 0
      return offset === 0 ? Date.now : () => Date.now() + offset
    })
    const log = options.log ?? processLogger()
    const onError =
      options.onError ?? ((error, source) => log.error({ err: error, source }, `${source} failed`))
    const onQuarantine = options.onQuarantine ?? ((line: string) => log.warn(line))
    const dataDir = options.dataDir
    const quarantines = regionNames.map(() => new QuarantineRegistry({ log: onQuarantine }))
    const manifest =
      dataDir === undefined ? newManifest(layout) : await openManifest(dataDir, layout)

    const members = grid(regions, partitions, (d, p) =>
      Array.from(
        { length: replicas },
        (_, i) =>
          new LevelPartitionReplica({
            region: d,
            partition: p,
            replica: i,
            regions,
            location: dataDir && join(dataDir, `region-${d}`, `partition-${p}`, `replica-${i}`),
            ...(options.store ? { db: options.store(d, p, i) } : {}),
            now: clocks[d]!,
            sync: options.sync ?? true,
            ...(options.opRetentionMs === undefined
              ? {}
              : { opRetentionMs: options.opRetentionMs }),
            onFailure: (error) => onError(error, `replica ${i} of partition ${p} in region ${d}`),
            quarantine: quarantines[d]!,
          }),
      ),
    )
    const txLogs = hasTransactions(namespaces)
      ? regionNames.map(
          (_, d) =>
            new LevelTxLog({
              region: d,
              regions,
              location: dataDir && join(dataDir, `region-${d}`, 'transactions'),
              ...(options.txLogStore ? { db: options.txLogStore(d) } : {}),
              now: clocks[d]!,
              sync: options.sync ?? true,
              ...(options.opRetentionMs === undefined
                ? {}
                : { opRetentionMs: options.opRetentionMs }),
              onFailure: (error) => onError(error, `the transaction log of region ${d}`),
            }),
        )
      : []
    const all = members.flat(2)
    const opened = await Promise.allSettled([
      ...all.map((r) => r.open()),
      ...txLogs.map((l) => l.open()),
    ])
    const failed = opened.find((o) => o.status === 'rejected')
    if (failed) {
      await Promise.all([...all.map((r) => r.close()), ...txLogs.map((l) => l.close())])
      throw failed.reason
    }

    const feeds = grid(regions, partitions, (d, p) => {
      const [leader, ...followers] = members[d]![p]!
      return [undefined, ...followers].map((follower) =>
        follower === undefined
          ? undefined
          : new FollowerFeed({
              leader: leader!,
              follower,
              lagMs: options.replicaLagMs ?? 0,
              onError: (error) =>
                onError(
                  error,
                  `replication to replica ${follower.replica} of partition ${p} in region ${d}`,
                ),
            }),
      )
    })
    const leaders = (d: number) => members[d]!.map((partition) => partition[0]!)
    const causal: CausalRegion[] =
      shipping === 'causal' && regions > 1
        ? causalRegions({
            regions,
            partitions,
            leaders,
            wanDelayMs: options.wanDelayMs ?? 0,
            clocks,
            options: causalOptions,
            onError,
          })
        : []
    const shippers: Shipper[] = []
    for (let p = 0; p < partitions; p++) {
      for (let from = 0; from < regions; from++) {
        for (let to = 0; to < regions; to++) {
          if (from === to) continue
          // Causal shipping delivers the data to the destination's inbox, where it waits for its
          // label; its checkpoint is what the inbox holds or the leader has applied.
          const inbox = causal[to]
          const store = inbox?.store as MemoryReceiverStore | undefined
          const destination =
            inbox === undefined || store === undefined
              ? members[to]![p]![0]!
              : {
                  sv: () => {
                    const sv = new Array<number>(regions).fill(0)
                    sv[from] = store.dataCheckpointNow(from, p)
                    return sv
                  },
                  receive: (envelope: Parameters<CausalRegion['stash']>[1]) =>
                    inbox.stash(p, envelope),
                }
          shippers.push(
            new Shipper({
              source: members[from]![p]![0]!,
              to,
              link: new InProcessLink({
                origin: from,
                destination,
                delayMs: partitionDelays?.[p] ?? options.wanDelayMs ?? 0,
              }),
              batchSize: options.shipBatchSize ?? 256,
              now: clocks[from]!,
              onError: (error) =>
                onError(error, `shipping partition ${p} from region ${from} to ${to}`),
            }),
          )
        }
      }
    }
    for (const feed of feeds.flat(2)) feed?.start()
    for (const shipper of shippers) shipper.start()
    await Promise.all(causal.map((region) => region.start()))
    for (const region of causal) region.setLeader(0)

    return new EmbeddedCluster({
      ...layout,
      id: manifest.id,
      dataDir,
      regionNames,
      limits: { ...DEFAULT_LIMITS, ...options.limits },
      clocks,
      skewWaitMs: options.skewWaitMs,
      maxClockOffsetMs: options.maxClockOffsetMs,
      maxAheadMs: shipping === 'causal' ? causalOptions.maxAheadMs : undefined,
      namespaces,
      members,
      feeds,
      shippers,
      quarantines,
      txLogs,
      wanDelayMs: options.wanDelayMs ?? 0,
      commitCache: options.commitCache,
      snapshots: options.snapshots,
      collectEveryMs: options.collectEveryMs,
      onError,
      causal,
    })
  }

  /**
   * The {@link ClusterService} of region `region` (with causal shipping, the causal service around
   * the region's).
   */
  service(region: number): RegionServiceLike {
    const service = this.#services[region]
    if (!service)
      throw new RangeError(`region ${region} does not exist (the cluster has ${this.regions})`)
    return service
  }

  /** Replica `index` of `partition` in `region` (0 is the leader); for tests and tools. */
  replica(region: number, partition: number, index: number): AbstractPartitionReplica {
    const replica = this.#members[region]?.[partition]?.[index]
    if (!replica)
      throw new RangeError(`no replica ${index} of partition ${partition} in region ${region}`)
    return replica
  }

  /** Region `region`'s transaction applier, when the cluster has transactions; for tests and tools. */
  applier(region: number): TxApplier | undefined {
    return this.#appliers[region]
  }

  /** Region `region`'s transaction log, when the cluster has transactions; for tests and tools. */
  txLog(region: number): LevelTxLog | undefined {
    return this.#txLogs[region]
  }

  /** The shippers of every partition and region pair; for tests and tools. */
  shippers(): readonly Shipper[] {
    return this.#shippers
  }

  /** With causal shipping, region `region`'s causal machinery (for tests and tools). */
  causal(region: number): CausalRegion {
    const causal = this.#causal[region]
    if (!causal) throw new RangeError(`region ${region} has no causal shipping`)
    return causal
  }

  /**
   * Stops shipping and replication, then closes every replica once what it accepted is durable.
   * Entries still travelling between regions are shipped again on the next start.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all(this.#txShippers.map((s) => s.stop()))
      await Promise.all(this.#appliers.map((a) => a.stop()))
      await Promise.all(this.#causal.map((c) => c.close()))
      await Promise.all(this.#services.map((s) => s.close()))
      await Promise.all(this.#shippers.map((s) => s.stop()))
      await Promise.all(this.#feeds.flat(2).map((f) => f?.stop()))
      await Promise.all(this.#members.flat(2).map((r) => r.close()))
      await Promise.all(this.#txLogs.map((l) => l.close()))
    })()
    return this.#closing
  }

  #leader(region: number, partition: number): AbstractPartitionReplica {
    return this.#members[region]![partition]![0]!
  }
}

function checkLayout(options: EmbeddedClusterOptions): ClusterLayout {
  const { regions, partitions, replicas } = options
  const count = (v: number, max: number) => Number.isInteger(v) && v >= 1 && v <= max
  if (!count(regions, MAX_REGIONS))
    throw new RangeError(`regions must be an integer in 1..${MAX_REGIONS}`)
  if (!count(partitions, 65_536)) throw new RangeError('partitions must be an integer in 1..65536')
  if (!count(replicas, 99)) throw new RangeError('replicas must be an integer in 1..99')
  for (const [name, value] of [
    ['replicaLagMs', options.replicaLagMs],
    ['wanDelayMs', options.wanDelayMs],
  ] as const) {
    if (value !== undefined && !(value >= 0 && Number.isFinite(value))) {
      throw new RangeError(`${name} must be a non-negative number of ms`)
    }
  }
  return { regions, partitions, replicas }
}

function checkCausal(
  causal: CausalOptions | undefined,
  shipping: ShippingMode,
): Required<CausalOptions> {
  const out = {
    thetaMs: causal?.thetaMs ?? DEFAULT_THETA_MS,
    deltaMs: causal?.deltaMs ?? DEFAULT_DELTA_MS,
    replicas: causal?.replicas ?? 1,
    maxAheadMs: causal?.maxAheadMs ?? DEFAULT_MAX_CAUSAL_AHEAD_MS,
  }
  if (causal !== undefined && shipping !== 'causal')
    throw new CausewayError('INVALID_OPTION', "causal options need shipping: 'causal'", {
      option: 'causal',
    })
  for (const [name, value, max] of [
    ['causal.thetaMs', out.thetaMs, 60_000],
    ['causal.deltaMs', out.deltaMs, 60_000],
    ['causal.replicas', out.replicas, 16],
    ['causal.maxAheadMs', out.maxAheadMs, 3_600_000],
  ] as const)
    if (!Number.isInteger(value) || value < (name === 'causal.maxAheadMs' ? 0 : 1) || value > max)
      throw new CausewayError('INVALID_OPTION', `${name} must be an integer in 1..${max}`, {
        option: name,
      })
  return out
}

function checkPartitionDelays(
  delays: readonly number[] | undefined,
  partitions: number,
): readonly number[] | undefined {
  if (delays === undefined) return undefined
  if (delays.length > partitions || delays.some((d) => !(d >= 0 && Number.isFinite(d))))
    throw new RangeError(
      `partitionWanDelaysMs needs at most one non-negative delay per partition (${partitions})`,
    )
  return delays
}

/** The causal machinery of every region of an embedded cluster. */
function causalRegions(setup: {
  regions: number
  partitions: number
  leaders: (d: number) => AbstractPartitionReplica[]
  wanDelayMs: number
  clocks: (() => number)[]
  options: Required<CausalOptions>
  onError: (error: unknown, source: string) => void
}): CausalRegion[] {
  const { regions, partitions, leaders, options } = setup
  const out: CausalRegion[] = []
  for (let d = 0; d < regions; d++) {
    let progress: StabiliserProgress | undefined
    out.push(
      new CausalRegion({
        region: d,
        regions,
        leaders: leaders(d),
        thetaMs: options.thetaMs,
        deltaMs: options.deltaMs,
        store: new MemoryReceiverStore({ region: d, regions, leaders: leaders(d) }),
        progress: {
          publish: async (value) => {
            progress = value
          },
          read: async () => progress,
        },
        link: (to) => new InProcessLabelLink(d, out[to]!, setup.wanDelayMs),
        // Where the other regions stand with this region's updates: their leaders are here.
        startFrom: async () =>
          Array.from({ length: partitions }, (_, p) =>
            Math.min(
              ...Array.from({ length: regions }, (_, e) => e)
                .filter((e) => e !== d)
                .map((e) => leaders(e)[p]!.sv()[d] ?? 0),
            ),
          ),
        replicaNames: Array.from({ length: options.replicas }, (_, i) => `r${d}.s${i}`),
        now: setup.clocks[d]!,
        onError: (error, source) =>
          setup.onError(error, `causal shipping of region ${d}: ${source}`),
      }),
    )
  }
  return out
}

function checkRegionNames(names: readonly string[], regions: number): void {
  if (names.length !== regions)
    throw new RangeError(`regionNames needs one name per region (${regions})`)
  if (names.some((n) => typeof n !== 'string' || n === ''))
    throw new RangeError('region names must be non-empty')
  if (new Set(names).size !== names.length) throw new RangeError('region names must be unique')
  // A name that reads as a region id would make `region: '1'` ambiguous.
  if (names.some((n) => /^[0-9]+$/.test(n)))
    throw new RangeError('region names must not be numbers')
}

function grid<T>(regions: number, partitions: number, make: (d: number, p: number) => T): T[][] {
  return Array.from({ length: regions }, (_, d) =>
    Array.from({ length: partitions }, (_, p) => make(d, p)),
  )
}
