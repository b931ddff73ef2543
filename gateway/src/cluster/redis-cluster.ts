/**
 * One region of a Redis-backed cluster, as one gateway process serves it: a
 * {@link RedisPartitionReplica} per replica named in the config (followers are Redis replicas of
 * their leader, set up by the operator or by `causeway dev --backend redis`), the
 * {@link RedisFailover} that says which of them leads (the master Redis Sentinel names when the
 * config lists Sentinels, else index 0) and makes a change of leader safe with epochs, the
 * {@link RegionService} over them, the receiving side of shipping, and, with more than one
 * region, {@link LeasedShipping}. The process keeps no state of its own: any number of them may
 * serve a region. This is where the Redis backend is chosen; everything above the replicas uses
 * only the storage contract.
 *
 * Other processes write the same leaders, so this process knows how far its own region's leader
 * has written (`written`, for `VECTOR_UNREACHABLE`) only from its view of that leader's `sv`,
 * which the region service re-reads before refusing (the replicas declare `supports.refresh`).
 * Other regions' leaders are asked over HTTP, when a read needs more of them than this region
 * holds (`replication/region-written.ts`): a vector naming an index never written is refused at
 * once, as on the embedded cluster; a region that cannot be asked leaves such reads waiting.
 *
 * A replica whose server is down at start (or whose first connection fails) is opened again in
 * the background with backoff until it succeeds; meanwhile requests that need it fail fast with
 * `BACKEND_UNAVAILABLE` and everything else is served. Once open, a replica reconnects by itself.
 *
 * With `shipping.mode: 'causal'`, the process also hosts one replica of its region's stabiliser,
 * takes other regions' labels and data into the region's receiver store in Redis
 * (`storage/redis/causal-store.ts`), and competes for the region's causal lease: its holder leads
 * the stabiliser (ships the labels) and applies the other regions' updates.
 */
import { createHmac } from 'node:crypto'
import { hostname } from 'node:os'
import {
  CausewayError,
  type DivergenceStatus,
  type LogEntry,
  type ShipEnvelope,
  hasTransactions,
} from '@causeway/core'
import { SiblingContexts } from './sibling-contexts.js'
import { CausalRegion } from '../replication/causal/causal-region.js'
import { DelayedLabelLink, HttpLabelLink } from '../replication/causal/http-label-link.js'
import type { LabelLink } from '../replication/causal/label-link.js'
import { recoverFromRegions } from '../replication/region-log.js'
import type { ShippingFetch } from '../replication/keep-alive-fetch.js'
import type { ShippingReceiver } from '../replication/shipping-receiver.js'
import { OtherRegionsWritten } from '../replication/region-written.js'
import type { TxReceiver } from '../replication/tx-link.js'
import { HttpTxLink, receiveShipment } from '../replication/tx-links.js'
import { TxShipper } from '../replication/tx-shipper.js'
import { DelayedTxLink } from './delayed-shipping-link.js'
import { type Logger, processLogger } from '../log.js'
import { QuarantineRegistry } from '../storage/quarantine.js'
import { RedisCausalStore } from '../storage/redis/causal-store.js'
import { RedisPartitionReplica } from '../storage/redis/redis-partition-replica.js'
import { RedisTxLog } from '../storage/redis/redis-tx-log.js'
import { type ClusterConfig, sentinelMasterName } from '../config/cluster-config.js'
import { CausalService, type RegionServiceLike } from './causal-service.js'
import { durabilityProblems } from './durability-check.js'
import { LeasedShipping } from './leased-shipping.js'
import { type Leadership, RedisFailover } from './redis-failover.js'
import { RegionService } from './region-service.js'
import { RedisLease } from './shipping-lease.js'
import { TxApplier } from './transactions/tx-applier.js'
import { SentinelLeaders } from './sentinel-leaders.js'

/** Options of {@link RedisCluster.start}. */
export interface RedisClusterOptions {
  config: ClusterConfig
  /** The region this process serves (an id of `config.regions`). */
  region: number
  /**
   * Longest pause between attempts to open a replica whose server is down, in ms.
   * @default 2000
   */
  reopenMaxMs?: number
  /**
   * This process's shipping-lease token.
   * @default a random UUID
   */
  leaseToken?: string
  /**
   * How long an op-id client (`causeway-op-id`) may be idle at a partition leader or transaction
   * log before its records are dropped (their expiry in Redis); its mark stays, so a resend is
   * `OP_EXPIRED`, never applied again (`storage/op-records.ts`), ms. Every gateway of a cluster
   * should use the same.
   * @default 24 hours
   */
  opRetentionMs?: number
  /** The HTTP client of the shipping links (tests inject a `fetch`). @default `keepAliveFetch` */
  fetch?: ShippingFetch
  /**
   * Told about background events: a replica that could not be opened yet (and is retried), one
   * that opened late, shipping failures (retried), lease changes, a gateway of another region
   * that fails its health check (or passes it again), a follower that is not a Redis
   * replica, keys quarantined because their stored value does not decode (`quarantine.ts`; once
   * per key, at most ten a minute).
   * @default logs them as warnings to `log`
   */
  onEvent?: (message: string, error?: unknown) => void
  /**
   * Where background events are logged (pino, `log.ts`) when `onEvent` is not given.
   * @default the process's logger (pino at `warn` on stderr)
   */
  log?: Logger
}

/** One region of a Redis-backed cluster, served by this process. */
export class RedisCluster implements ShippingReceiver, TxReceiver {
  readonly config: ClusterConfig
  readonly region: number
  /** The region's service (with causal shipping, the causal service around it). */
  readonly service: RegionServiceLike
  /** With causal shipping: this process's part of the region's causal machinery. */
  readonly causal: CausalRegion | undefined
  /** `replicas[p][i]`. */
  readonly replicas: readonly (readonly RedisPartitionReplica[])[]
  readonly #shipping: LeasedShipping | undefined
  /** How far the other regions' leaders have written, asked when a read vector needs more. */
  readonly #elsewhere: OtherRegionsWritten | undefined
  /** The region's transaction log, when the cluster has transactional namespaces. */
  readonly txLog: RedisTxLog | undefined
  /** The lease to run the region's applier (one process at a time). */
  readonly #applierLease: RedisLease | undefined
  #applier: TxApplier | undefined
  /** With the applier: this region's transactions shipped to each other region. */
  #txShippers: TxShipper[] = []
  #applierStopping: Promise<void> | undefined
  readonly #fetch: ShippingFetch | undefined
  readonly #causalStore: RedisCausalStore | undefined
  readonly #causalLease: RedisLease | undefined
  readonly #failover: RedisFailover
  readonly #onEvent: (message: string, error?: unknown) => void
  readonly #reopenMaxMs: number
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()
  readonly #opening = new Set<Promise<void>>()
  #closing: Promise<void> | undefined
  /** Set as {@link close} starts (before `#closing` is). */
  #stopping = false

  private constructor(options: RedisClusterOptions) {
    const { config, region } = options
    const here = config.regions[region]
    if (!here) throw new RangeError(`region ${region} is not in the config`)
    this.config = config
    this.region = region
    this.#reopenMaxMs = options.reopenMaxMs ?? 2000
    this.#fetch = options.fetch
    const log = options.log ?? processLogger()
    this.#onEvent =
      options.onEvent ??
      ((message, error) => log.warn(error === undefined ? {} : { err: error }, message))
    const quarantine = new QuarantineRegistry({ log: (line) => this.#onEvent(line) })
    // Dev and tests only: a region whose wall clock disagrees with the others' (the HLCs then
    // read this process's clock plus the offset rather than the Redis server's TIME).
    const offsetMs = config.benchmark.clockOffsetsMs[region] ?? 0
    const now = offsetMs === 0 ? undefined : () => Date.now() + offsetMs
    this.replicas = here.replicas.map((urls, p) =>
      urls.map(
        (url, i) =>
          new RedisPartitionReplica({
            url,
            namespace: config.redis.namespace,
            region,
            partition: p,
            replica: i,
            regions: config.regions.length,
            commandTimeoutMs: config.redis.commandTimeoutMs,
            connectTimeoutMs: config.redis.connectTimeoutMs,
            reconnectMaxDelayMs: config.redis.reconnectMaxDelayMs,
            quarantine,
            // Writes only under a leader's claim, and only to indexes a majority knows reserved.
            supervised: true,
            ceilingReplicas: Math.floor(urls.length / 2),
            onClaimLost: () => void this.#failover.check(p),
            ...(now ? { now } : {}),
            ...(options.opRetentionMs === undefined
              ? {}
              : { opRetentionMs: options.opRetentionMs }),
          }),
      ),
    )
    const secret = config.auth.clusterSecret
    const sentinels =
      here.sentinels.length === 0
        ? undefined
        : new SentinelLeaders({
            sentinels: here.sentinels,
            name: (p) => sentinelMasterName(config.redis.namespace, region, p),
            partitions: config.partitions,
            onSwitch: (p) => void this.#failover.check(p),
            commandTimeoutMs: config.redis.connectTimeoutMs,
          })
    this.#failover = new RedisFailover({
      region,
      replicas: this.replicas,
      urls: here.replicas,
      ...(sentinels ? { sentinels } : {}),
      secret: secret ?? config.cluster,
      namespace: config.redis.namespace,
      checkIntervalMs: config.redis.failover.checkIntervalMs,
      recoveryTimeoutMs: config.redis.failover.recoveryTimeoutMs,
      connectTimeoutMs: config.redis.connectTimeoutMs,
      // Administration is small and must not hold a check up for long: a second at most.
      commandTimeoutMs: Math.min(1000, config.redis.commandTimeoutMs),
      recover: (p, after, deadline, apply) =>
        secret === undefined || config.regions.length === 1
          ? Promise.resolve({ recovered: 0, unanswered: [] })
          : recoverFromRegions({
              sources: config.regions.filter((r) => r.id !== region),
              regions: config.regions.length,
              partition: p,
              origin: region,
              after,
              secret,
              deadline,
              apply,
              ...(options.fetch ? { fetch: options.fetch } : {}),
            }),
      onLeader: (p, i) =>
        this.#shipping?.moveLeader(p, this.replicas[p]![i]!, here.replicas[p]![i]!),
      onEvent: (message, error) => this.#onEvent(message, error),
    })
    this.#shipping =
      config.regions.length > 1 && secret !== undefined
        ? new LeasedShipping({
            region,
            regions: config.regions,
            leaders: this.replicas.map((r) => r[0]!),
            leaderUrls: here.replicas.map((urls) => urls[0]!),
            // The same key on every replica of a partition: the lease moves with the leader.
            leaseKeys: this.replicas.map((r) => `${r[0]!.keys.prefix}lease:ship`),
            secret,
            shipping: config.shipping,
            wanDelayMs: config.benchmark.wanDelayMs,
            partitionWanDelaysMs: config.benchmark.partitionWanDelaysMs,
            ...(options.leaseToken === undefined ? {} : { token: options.leaseToken }),
            ...(options.fetch ? { fetch: options.fetch } : {}),
            onEvent: (event, p, error) => {
              if (event === 'error') this.#onEvent(`shipping partition ${p}: will retry`, error)
              else this.#onEvent(`${event} the shipping lease of partition ${p}`)
            },
            onGateway: (gateway, d, up) =>
              this.#onEvent(
                up
                  ? `gateway ${gateway} of region ${d} passes its health check again`
                  : `gateway ${gateway} of region ${d} failed its health check; shipping goes to another gateway of the region`,
              ),
          })
        : undefined
    this.#elsewhere =
      config.regions.length > 1 && secret !== undefined
        ? new OtherRegionsWritten({
            gateways: config.regions.map((r) => (r.id === region ? [] : r.gateways)),
            secret,
            timeoutMs: config.shipping.requestTimeoutMs,
            ...(options.fetch ? { fetch: options.fetch } : {}),
          })
        : undefined
    const elsewhere = this.#elsewhere
    const replicas = this.replicas
    const txUrls = here.transactions
    this.txLog =
      hasTransactions(config.namespaces) && txUrls !== undefined
        ? new RedisTxLog({
            url: txUrls[0]!,
            namespace: config.redis.namespace,
            region,
            regions: config.regions.length,
            replicas: txUrls.length - 1,
            durability: config.transactions.durability,
            commandTimeoutMs: config.redis.commandTimeoutMs,
            connectTimeoutMs: config.redis.connectTimeoutMs,
            ...(options.opRetentionMs === undefined
              ? {}
              : { opRetentionMs: options.opRetentionMs }),
          })
        : undefined
    const txLog = this.txLog
    this.#applierLease =
      txLog === undefined
        ? undefined
        : new RedisLease({
            url: txUrls![0]!,
            key: txLog.keys.lease,
            ttlMs: config.transactions.leaseMs,
            ...(options.leaseToken === undefined ? {} : { token: options.leaseToken }),
            onAcquired: () => this.#startApplier(),
            onLost: () => void this.#stopApplier(),
          })
    const service = new RegionService({
      cluster: config.cluster,
      region,
      regionNames: config.regions.map((r) => r.name),
      limits: config.limits,
      namespaces: config.namespaces,
      replicas,
      leaderOf: (p) => this.#failover.leaderOf(p),
      leaderFence: (p) => this.#fence(p),
      written: (d, p) => {
        const leader = replicas[p]?.[this.#failover.leaderOf(p)]
        // Only a leader that holds its claim knows how far the region wrote (one that came back
        // behind does not).
        return d === region && leader?.available && leader.leading ? leader.sv()[d] : undefined
      },
      // Other regions' leaders are asked (issue 23.6).
      ...(elsewhere === undefined
        ? {}
        : {
            writtenElsewhere: (d: number, p: number, need: number, since: number) =>
              elsewhere.lookUp(d, p, need, since),
          }),
      leadership: () => this.leadership(),
      divergence: () => this.#divergence(),
      shippers: async () => (await this.#shipping?.status()) ?? [],
      quarantine,
      ...(txLog === undefined
        ? {}
        : {
            transactions: {
              log: txLog,
              snapshots: {
                idleMs: config.transactions.snapshotIdleMs,
                maxAgeMs: config.transactions.snapshotMaxAgeMs,
              },
              // Every process publishes its open snapshots; the applier's collects.
              collects: () => this.#applierLease?.held ?? false,
              onError: (error: unknown) => this.#onEvent('collecting versions: will retry', error),
            },
          }),
      ...(now ? { now } : {}),
      skewWaitMs: config.clock.skewWaitMs,
      maxClockOffsetMs: config.clock.maxOffsetMs,
      // A causal cluster bounds dependency times tightly: see ReplicaRouterOptions.maxAheadMs.
      ...(config.shipping.mode === 'causal' ? { maxAheadMs: config.shipping.maxAheadMs } : {}),
      // Every gateway process of the cluster must accept the set contexts the others issued.
      ...(secret === undefined
        ? {}
        : {
            contextSecret: createHmac('sha256', secret).update('causeway set contexts').digest(),
            // Signed with the current secret, accepted with a previous one (rotation).
            siblingContexts: new SiblingContexts(
              [secret, ...config.auth.previousClusterSecrets].map((s) =>
                createHmac('sha256', s).update('causeway sibling contexts').digest(),
              ),
            ),
          }),
    })
    const causal =
      config.shipping.mode === 'causal' && config.regions.length > 1 && secret !== undefined
        ? this.#causalRegion(options, secret)
        : undefined
    this.causal = causal?.region
    this.#causalStore = causal?.store
    this.#causalLease = causal?.lease
    this.service =
      causal === undefined
        ? service
        : new CausalService({
            service,
            causal: causal.region,
            leaders: replicas.map((r) => r[0]!),
            ...(now ? { now } : {}),
            skewWaitMs: config.clock.skewWaitMs,
            maxClockOffsetMs: config.clock.maxOffsetMs,
          })
  }

  // The region's causal machinery in this process: its store in Redis, one stabiliser replica,
  // the label links to the other regions (sharing the shipping links' health checks), the lease.
  #causalRegion(
    options: RedisClusterOptions,
    secret: string,
  ): { region: CausalRegion; store: RedisCausalStore; lease: RedisLease } {
    const { config, region } = options
    const here = config.regions[region]!
    const leaders = this.replicas.map((r) => r[0]!)
    const store = new RedisCausalStore({
      namespace: config.redis.namespace,
      region,
      regions: config.regions.length,
      regionUrl: here.replicas[0]![0]!,
      leaderUrls: here.replicas.map((list) => list[0]!),
      leaders,
      commandTimeoutMs: config.redis.commandTimeoutMs,
      connectTimeoutMs: config.redis.connectTimeoutMs,
      reconnectMaxDelayMs: config.redis.reconnectMaxDelayMs,
      onSiteTime: () => void causal.view.refresh().catch(() => undefined),
    })
    const link = (to: number): LabelLink => {
      const http = new HttpLabelLink({
        gateways: this.#shipping?.health(to) ?? config.regions[to]!.gateways,
        origin: region,
        partitions: config.partitions,
        secret,
        timeoutMs: config.shipping.requestTimeoutMs,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      })
      const delayMs = config.benchmark.wanDelayMs
      return delayMs > 0 ? new DelayedLabelLink(http, delayMs) : http
    }
    const causal: CausalRegion = new CausalRegion({
      region,
      regions: config.regions.length,
      leaders,
      thetaMs: config.shipping.thetaMs,
      deltaMs: config.shipping.deltaMs,
      store,
      progress: store.progress,
      link,
      // Where a replica starts reading: what every other region has applied, as the leader said.
      startFrom: async () =>
        (await store.progress.read().catch(() => undefined))?.applied ??
        new Array<number>(config.partitions).fill(0),
      replicaNames: [`${hostname()}:${process.pid}`],
      maxAheadMs: config.clock.maxOffsetMs + config.limits.maxSkewMs,
      onError: (error, source) => this.#onEvent(`causal shipping: ${source}: will retry`, error),
    })
    const lease = new RedisLease({
      url: here.replicas[0]![0]!,
      key: store.leaseKey,
      ttlMs: config.shipping.leaseMs,
      ...(options.leaseToken === undefined ? {} : { token: options.leaseToken }),
      onAcquired: () => {
        this.#onEvent('acquired the causal lease of the region')
        causal.setLeader(0)
      },
      onLost: () => {
        if (!this.#stopping) this.#onEvent('lost the causal lease of the region')
        causal.setLeader(undefined)
      },
    })
    return { region: causal, store, lease }
  }

  /**
   * Opens every replica it can (the others keep being retried in the background) and starts
   * competing for the shipping leases. Never fails because a Redis server is down.
   */
  static async start(options: RedisClusterOptions): Promise<RedisCluster> {
    const cluster = new RedisCluster(options)
    await Promise.all([
      ...cluster.replicas.flat().map((replica) => cluster.#open(replica, 0)),
      cluster.#openTxLog(0),
    ])
    // The first look at every leader: a gateway that answers has its writes' leaders claimed.
    await cluster.#failover.start()
    cluster.#shipping?.start()
    if (cluster.causal) {
      await cluster.#causalStore!.start()
      await cluster.causal.start()
      cluster.#causalLease!.start()
    }
    return cluster
  }

  /** Whether this process runs the region's applier now. */
  appliesTransactions(): boolean {
    return this.#applier !== undefined
  }

  #startApplier(): void {
    const log = this.txLog
    if (log === undefined || this.#applier !== undefined || this.#closing) return
    const applier = new TxApplier({
      log,
      region: this.region,
      partitions: this.config.partitions,
      leader: (p) => this.#leader(p),
      commitCache: this.config.transactions.commitCache,
      onError: (error) => this.#onEvent('applying transactions: will retry', error),
    })
    this.#applier = applier
    this.#onEvent('took the transaction applier lease')
    const secret = this.config.auth.clusterSecret
    const shippers =
      secret === undefined
        ? []
        : this.config.regions
            .filter((r) => r.id !== this.region)
            .map((r) => {
              const http = new HttpTxLink({
                gateways: r.gateways,
                origin: this.region,
                secret,
                timeoutMs: this.config.shipping.requestTimeoutMs,
                ...(this.#fetch ? { fetch: this.#fetch } : {}),
              })
              const wan = this.config.benchmark.wanDelayMs
              return new TxShipper({
                log,
                to: r.id,
                link: wan > 0 ? new DelayedTxLink(http, wan) : http,
                retryMaxMs: this.config.shipping.retryMaxMs,
                onError: (error) =>
                  this.#onEvent(`shipping transactions to region ${r.name}: will retry`, error),
              })
            })
    this.#txShippers = shippers
    // After a previous applier of this process has stopped.
    void (this.#applierStopping ?? Promise.resolve()).then(() => {
      if (this.#applier !== applier) return
      applier.start()
      for (const shipper of shippers) shipper.start()
    })
  }

  #stopApplier(): Promise<void> {
    const applier = this.#applier
    this.#applier = undefined
    if (applier === undefined) return this.#applierStopping ?? Promise.resolve()
    this.#onEvent('gave up the transaction applier lease')
    const shippers = this.#txShippers.splice(0)
    this.#applierStopping = Promise.all([applier.stop(), ...shippers.map((s) => s.stop())]).then(
      () => undefined,
    )
    return this.#applierStopping
  }

  // Opens the transaction log (retried in the background while its server is down), then
  // competes for the applier's lease.
  async #openTxLog(attempt: number): Promise<void> {
    const log = this.txLog
    if (log === undefined || this.#closing) return
    try {
      await log.open()
    } catch (error) {
      if (attempt === 0)
        this.#onEvent('cannot open the transaction log yet; retrying in the background', error)
      const wait = Math.min(this.#reopenMaxMs, 50 * 2 ** Math.min(attempt, 10))
      const timer = setTimeout(() => {
        this.#timers.delete(timer)
        void this.#openTxLog(attempt + 1)
      }, wait)
      this.#timers.add(timer)
      return
    }
    if (this.#closing) return
    if (attempt > 0) this.#onEvent('opened the transaction log')
    this.#applierLease?.start()
  }

  // What this region's leaders noted of shipping from the other regions (`sv:diverged`).
  async #divergence(): Promise<DivergenceStatus[]> {
    const out: DivergenceStatus[] = []
    await Promise.all(
      this.replicas.map(async (_, p) => {
        const leader = this.#leader(p)
        if (!leader.available) return
        for (const [origin, note] of await leader.divergence().catch(() => new Map())) {
          const [state, ...rest] = String(note).split(' ')
          if (state === 'diverged' || state === 'extra')
            out.push({ partition: p, origin, state, note: rest.join(' ') })
        }
      }),
    )
    return out.sort((a, b) => a.partition - b.partition || a.origin - b.origin)
  }

  /**
   * The ways this region's servers cannot keep the durability the config promises
   * (`durability-check.ts`); empty when they can.
   */
  async durabilityProblems(): Promise<string[]> {
    const here = this.config.regions[this.region]!
    return durabilityProblems(
      {
        durability: this.config.redis.durability,
        replicas: here.replicas[0]!.length,
        sentinel: here.sentinels.length > 0,
      },
      await this.#failover.persistence(),
    )
  }

  /** Which replica leads each partition, in which epoch, and why not when it does not. */
  leadership(): Leadership[] {
    return this.#failover
      .leadership()
      .map((l) => ({ ...l, serves: this.#fence(l.partition) === undefined }))
  }

  /** The partitions whose shipping lease this process holds. */
  shippingLeases(): number[] {
    return this.#shipping?.held() ?? []
  }

  async checkpoint(partition: number, origin: number): Promise<number> {
    // Causal shipping: the data waits in the region's inbox for its label.
    if (this.causal) return this.causal.dataCheckpoint(this.#partition(partition), origin)
    const sv = await this.#leader(partition).refresh()
    return sv[origin] ?? 0
  }

  receive(partition: number, envelope: ShipEnvelope): Promise<number> {
    if (this.causal) return this.causal.stash(this.#partition(partition), envelope)
    const leader = this.#leader(partition)
    // Only a leader whose claim is made takes entries: another may be taking over.
    if (!leader.leading)
      return Promise.reject(
        new CausewayError(
          'BACKEND_UNAVAILABLE',
          `partition ${partition} of region ${this.region} has no leader now (a failover is under way)`,
        ),
      )
    return leader.receive(envelope)
  }

  async readLog(
    partition: number,
    origin: number,
    after: number,
    limit: number,
  ): Promise<LogEntry[]> {
    const replicas = this.replicas[partition]
    if (!replicas) throw new CausewayError('INVALID_REQUEST', `no partition ${partition}`)
    // The leader's copy, or, while it is away, the follower that holds the most.
    const leader = this.#leader(partition)
    const copy = leader.available
      ? leader
      : replicas
          .filter((r) => r.available)
          .sort((a, b) => (b.sv()[origin] ?? 0) - (a.sv()[origin] ?? 0))[0]
    if (!copy)
      throw new CausewayError('BACKEND_UNAVAILABLE', `no replica of partition ${partition} answers`)
    return copy.readLog(origin, after, limit)
  }

  async written(partition: number): Promise<{ written: number; epoch: number }> {
    const leader = this.#leader(partition)
    // Only a leader that holds its claim knows how far the region wrote.
    if (!leader.leading)
      throw new CausewayError(
        'BACKEND_UNAVAILABLE',
        `partition ${partition} of region ${this.region} has no leader holding its claim now`,
      )
    const sv = await leader.refresh()
    return { written: sv[this.region] ?? 0, epoch: leader.epoch() }
  }

  txCheckpoint(origin: number): Promise<number> {
    if (this.txLog === undefined)
      return Promise.reject(new CausewayError('NOT_FOUND', 'this region has no transaction log'))
    return this.txLog.foreignCheckpoint(origin)
  }

  receiveTransactions(_origin: number, shipment: unknown): Promise<number> {
    if (this.txLog === undefined)
      return Promise.reject(new CausewayError('NOT_FOUND', 'this region has no transaction log'))
    return receiveShipment(this.txLog, shipment, this.config.partitions)
  }

  /** Stops shipping (handing the leases back), then closes every replica. */
  close(): Promise<void> {
    this.#stopping = true
    this.#closing ??= (async () => {
      for (const timer of this.#timers) clearTimeout(timer)
      this.#timers.clear()
      await this.#causalLease?.close()
      await this.causal?.close()
      await this.#causalStore?.close()
      await this.#failover.close()
      await this.#shipping?.close()
      this.#elsewhere?.close()
      await this.#applierLease?.close()
      await this.#stopApplier()
      await this.service.close()
      await Promise.allSettled([...this.#opening])
      await Promise.all(this.replicas.flat().map((r) => r.close()))
      await this.txLog?.close()
    })()
    return this.#closing
  }

  /**
   * Why partition `p`'s leader may serve nothing (no read at any level, no write), or undefined
   * when it may: only a leader whose process holds its claim does. One that came back empty or
   * behind its followers without a failover agent to replace it (no Sentinel) would otherwise
   * answer reads from less than was acknowledged; reads go to its followers meanwhile.
   */
  #fence(p: number): string | undefined {
    const leader = this.#leader(p)
    if (leader.leading) return undefined
    const state = this.#failover.leadershipOf(p)
    return (
      state?.note ??
      `replica ${leader.replica}'s process does not hold its claim (${state?.state ?? 'unknown'}: a failover is checking it)`
    )
  }

  #leader(partition: number): RedisPartitionReplica {
    const leader = this.replicas[partition]?.[this.#failover.leaderOf(partition)]
    if (!leader) throw new CausewayError('INVALID_REQUEST', `no partition ${partition}`)
    return leader
  }

  #partition(partition: number): number {
    return this.#leader(partition).partition
  }

  // One attempt to open `replica`; on failure, another after a backoff, until it opens or the
  // cluster closes.
  async #open(replica: RedisPartitionReplica, attempt: number): Promise<void> {
    if (this.#closing) return
    const where = `replica ${replica.replica} of partition ${replica.partition} (${replica.backend})`
    const opening = replica.open()
    this.#opening.add(opening)
    try {
      await opening
    } catch (error) {
      if (attempt === 0)
        this.#onEvent(`cannot open ${where} yet; retrying in the background`, error)
      const wait = Math.min(this.#reopenMaxMs, 50 * 2 ** Math.min(attempt, 10))
      const timer = setTimeout(() => {
        this.#timers.delete(timer)
        void this.#open(replica, attempt + 1)
      }, wait)
      this.#timers.add(timer)
      return
    } finally {
      this.#opening.delete(opening)
    }
    if (this.#closing) return
    if (attempt > 0) {
      this.#onEvent(`opened ${where}`)
      void this.#failover.check(replica.partition)
    }
  }
}
