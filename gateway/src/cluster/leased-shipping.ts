/**
 * Cross-region shipping for one region when it runs several gateway processes: for each
 * partition, the process holding that partition's lease (a {@link RedisLease} in the local
 * leader's Redis) runs the FIFO {@link Shipper}s from the local leader to every other region; the
 * others stand by and take the lease over within a few seconds when the holder dies. A shipper
 * always resumes from the destination's `sv` (its checkpoint) and the destination applies each
 * entry once, so a takeover neither loses nor duplicates anything. When a partition's leader
 * changes (a failover), its lease moves to the new leader's Redis and its shippers read the new
 * leader's log ({@link LeasedShipping.moveLeader}).
 *
 * The links to a region share one {@link GatewayHealth} of its gateways: each is health-checked
 * while this process ships to the region, and a link leaves a gateway that fails a check at once.
 */
import type { ShipperStatus } from '@causeway/core'
import { GatewayHealth } from '../replication/gateway-health.js'
import { HttpShippingLink } from '../replication/http-shipping-link.js'
import type { ShippingFetch } from '../replication/keep-alive-fetch.js'
import { Shipper } from '../replication/shipper.js'
import type { ShippingLink } from '../replication/shipping-link.js'
import type { AbstractPartitionReplica } from '../storage/abstract-partition-replica.js'
import type { RegionConfig, ShippingConfig } from '../config/cluster-config.js'
import { DelayedShippingLink } from './delayed-shipping-link.js'
import { RedisLease } from './shipping-lease.js'

/** Options of {@link LeasedShipping}. */
export interface LeasedShippingOptions {
  /** The local region. */
  region: number
  /** Every region of the cluster (their gateways are the destinations). */
  regions: readonly RegionConfig[]
  /** The local leader of each partition. */
  leaders: readonly AbstractPartitionReplica[]
  /** The Redis URL of each local leader (where its lease lives). */
  leaderUrls: readonly string[]
  /** The key of each partition's lease in its leader's Redis. */
  leaseKeys: readonly string[]
  secret: string
  shipping: ShippingConfig
  /**
   * This process's lease token.
   * @default a random UUID per lease
   */
  token?: string
  /** The HTTP client of the shipping links (tests inject a `fetch`). @default `keepAliveFetch` */
  fetch?: ShippingFetch
  /**
   * Emulated one-way WAN delay added to every shipping request and its answer, in ms (benchmarks
   * on one machine; see {@link DelayedShippingLink}).
   * @default 0
   */
  wanDelayMs?: number
  /**
   * Each partition's one-way delay, by partition, in place of `wanDelayMs` (benchmarks and tests:
   * partitions whose data reaches the other regions at different speeds).
   * @default `wanDelayMs` for every partition
   */
  partitionWanDelaysMs?: readonly number[]
  /** Told about failed shipping attempts (they are retried) and lease changes. */
  onEvent?: (event: 'acquired' | 'lost' | 'error', partition: number, error?: unknown) => void
  /**
   * Told when a gateway of another region fails its health check (`up` false: shipping leaves
   * it) or passes one again.
   * @default nothing
   */
  onGateway?: (gateway: string, region: number, up: boolean) => void
}

/** The leases and shippers of one gateway process. */
export class LeasedShipping {
  readonly #options: LeasedShippingOptions
  readonly #leases: RedisLease[]
  readonly #leaders: AbstractPartitionReplica[]
  #started = false
  /** The health of each other region's gateways, by region id. */
  readonly #health = new Map<number, GatewayHealth>()
  /** The running shippers of each partition whose lease this process holds. */
  readonly #shippers = new Map<number, Shipper[]>()
  readonly #stopping = new Set<Promise<void>>()
  #closed = false

  constructor(options: LeasedShippingOptions) {
    this.#options = options
    for (const destination of options.regions) {
      if (destination.id === options.region) continue
      this.#health.set(
        destination.id,
        new GatewayHealth({
          gateways: destination.gateways,
          intervalMs: options.shipping.healthIntervalMs,
          timeoutMs: options.shipping.healthTimeoutMs,
          ...(options.fetch ? { fetch: options.fetch } : {}),
          onChange: (gateway, up) => options.onGateway?.(gateway, destination.id, up),
        }),
      )
    }
    this.#leaders = [...options.leaders]
    this.#leases = options.leaders.map((_, p) => this.#lease(p, options.leaderUrls[p]!))
  }

  /** Starts competing for the leases. */
  start(): void {
    this.#started = true
    for (const lease of this.#leases) lease.start()
  }

  /**
   * Partition `p`'s leader is now `leader`, whose server is `url`: its shippers stop, and the
   * lease is competed for in that server (where the old leader's, replicated, may still hold it
   * for a while: a holder that is alive renews it there).
   */
  moveLeader(p: number, leader: AbstractPartitionReplica, url: string): void {
    if (this.#closed || this.#leaders[p] === leader) return
    this.#leaders[p] = leader
    const old = this.#leases[p]!
    // The same token: where the old leader's lease key was replicated with this process's token,
    // this process takes the lease again at once instead of waiting for it to expire.
    this.#leases[p] = this.#lease(p, url, old.token)
    this.#stopShipping(p)
    void old.close()
    if (this.#started) this.#leases[p]!.start()
  }

  #lease(p: number, url: string, token = this.#options.token): RedisLease {
    const lease: RedisLease = new RedisLease({
      url,
      key: this.#options.leaseKeys[p]!,
      ttlMs: this.#options.shipping.leaseMs,
      ...(token === undefined ? {} : { token }),
      onAcquired: () => {
        if (this.#leases[p] === lease) this.#startShipping(p)
      },
      onLost: () => {
        if (this.#leases[p] === lease) this.#stopShipping(p)
      },
    })
    return lease
  }

  /**
   * The health of region `region`'s gateways, shared by this process's links to it (the causal
   * label links use it too).
   */
  health(region: number): GatewayHealth | undefined {
    return this.#health.get(region)
  }

  /** The partitions whose lease this process holds. */
  held(): number[] {
    return this.#leases.flatMap((lease, p) => (lease.held ? [p] : []))
  }

  /** The status of the shippers this process runs. */
  status(): Promise<ShipperStatus[]> {
    return Promise.all([...this.#shippers.values()].flat().map((s) => s.status()))
  }

  /** Stops shipping and hands the leases back, so another process takes over at once. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all(this.#leases.map((lease) => lease.close()))
    await Promise.all([...this.#stopping])
  }

  #startShipping(p: number): void {
    const { region, regions, secret, shipping, onEvent } = this.#options
    const leaders = this.#leaders
    if (this.#closed || this.#shippers.has(p)) return
    onEvent?.('acquired', p)
    const shippers = regions
      .filter((r) => r.id !== region)
      .map(
        (destination) =>
          new Shipper({
            source: leaders[p]!,
            to: destination.id,
            link: this.#delayed(
              p,
              new HttpShippingLink({
                gateways: this.#health.get(destination.id)!,
                partition: p,
                origin: region,
                secret,
                timeoutMs: shipping.requestTimeoutMs,
                maxBatchBytes: shipping.maxBatchBytes,
                ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
              }),
            ),
            batchSize: shipping.batchSize,
            maxInFlight: shipping.maxInFlight,
            retryMaxMs: shipping.retryMaxMs,
            onError: (error) => onEvent?.('error', p, error),
          }),
      )
    this.#shippers.set(p, shippers)
    for (const shipper of shippers) shipper.start()
  }

  #delayed(p: number, link: ShippingLink): ShippingLink {
    const delayMs = this.#options.partitionWanDelaysMs?.[p] ?? this.#options.wanDelayMs ?? 0
    return delayMs > 0 ? new DelayedShippingLink(link, delayMs) : link
  }

  #stopShipping(p: number): void {
    const shippers = this.#shippers.get(p)
    if (!shippers) return
    this.#shippers.delete(p)
    if (!this.#closed) this.#options.onEvent?.('lost', p)
    const stopping = Promise.all(shippers.map((s) => s.stop())).then(() => undefined)
    this.#stopping.add(stopping)
    void stopping.finally(() => this.#stopping.delete(stopping))
  }
}
