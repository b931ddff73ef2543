/**
 * The {@link RegionService} of one region whose replicas are Redis servers, as one of possibly
 * several stateless gateway processes of that region sees it. What differs from the embedded
 * cluster:
 *
 * - Other processes write to the same leaders, so this process's view of a leader's `sv` may be a
 *   push behind. A read that needs more of the local region than the view shows re-reads the
 *   leader's `sv` before deciding that the need is unreachable (`VECTOR_UNREACHABLE`), which is
 *   known only for the local region.
 * - `durability: 'majority'` is Redis `WAIT` for a majority of the partition's replicas.
 * - A replica whose server is down is skipped by reads (`available`), and status re-reads every
 *   replica's `sv` and measures lag from the leader's log.
 */
import { CausewayError, type ShipperStatus, type Status } from '@causeway/core'
import type { FollowerLag } from '../replication/follower-feed.js'
import type { RedisPartitionReplica } from '../storage/redis/redis-partition-replica.js'
import type { ReadRequest, ReadResult, WriteRequest, WriteResult } from './cluster-service.js'
import { RegionService, type RegionServiceOptions } from './region-service.js'

/** Options of a {@link RedisRegionService}. */
export interface RedisRegionServiceOptions extends Omit<
  RegionServiceOptions,
  'replicas' | 'written' | 'lag' | 'available' | 'shippers'
> {
  /** `replicas[p][i]`: this region's replicas of partition `p`; replica 0 is the leader. */
  replicas: readonly (readonly RedisPartitionReplica[])[]
  /**
   * The shippers this process runs (those of the partitions whose lease it holds).
   * @default none
   */
  shippers?: () => Promise<ShipperStatus[]>
  /**
   * How long a majority write waits for the followers' acknowledgement, in ms.
   * @default limits.defaultTimeoutMs
   */
  majorityTimeoutMs?: number
}

/** One region over Redis replicas. See the module comment. */
export class RedisRegionService extends RegionService {
  readonly #replicas: readonly (readonly RedisPartitionReplica[])[]
  readonly #majorityTimeoutMs: number
  /** Lag of each follower (`p:i`), measured by the last {@link status}. */
  readonly #lags: Map<string, FollowerLag>
  /** Partitions whose leader `sv` could not be re-read: their local reach is unknown. */
  readonly #unsure: Set<number>

  constructor(options: RedisRegionServiceOptions) {
    const { replicas, region } = options
    const lags = new Map<string, FollowerLag>()
    const unsure = new Set<number>()
    super({
      ...options,
      replicas,
      available: (p, i) => replicas[p]?.[i]?.available ?? false,
      written: (d, p) => {
        const leader = replicas[p]?.[0]
        if (d !== region || !leader?.available || unsure.has(p)) return undefined
        return leader.sv()[d]
      },
      lag: (p, i) => lags.get(`${p}:${i}`) ?? { entries: 0, ms: 0 },
      shippers: options.shippers ?? (async () => []),
    })
    this.#replicas = replicas
    this.#lags = lags
    this.#unsure = unsure
    this.#majorityTimeoutMs = options.majorityTimeoutMs ?? options.limits.defaultTimeoutMs
  }

  override async read(request: ReadRequest): Promise<ReadResult> {
    const leader = this.#replicas[request.partition]?.[0]
    const local = request.need?.need[this.region] ?? 0
    if (leader?.available && local > (leader.sv()[this.region] ?? 0)) {
      try {
        await leader.refresh()
        this.#unsure.delete(request.partition)
      } catch {
        this.#unsure.add(request.partition)
      }
    }
    return super.read(request)
  }

  override async write(request: WriteRequest): Promise<WriteResult> {
    if (request.durability !== 'majority') return super.write(request)
    const result = await super.write({ ...request, durability: 'leader' })
    const replicas = this.#replicas[request.partition]!
    const needed = Math.floor(replicas.length / 2) // followers, besides the leader
    if (needed === 0) return result
    let acked: number
    try {
      acked = await replicas[0]!.waitReplicas(needed, this.#majorityTimeoutMs)
    } catch {
      acked = 0
    }
    if (acked < needed) {
      throw new CausewayError(
        'BACKEND_UNAVAILABLE',
        `write ${this.region}:${result.idx} is durable at the leader but only ${acked + 1} of ${replicas.length} replicas confirmed it within ${this.#majorityTimeoutMs} ms`,
        {
          region: this.region,
          idx: result.idx,
          confirmed: acked + 1,
          replicas: replicas.length,
        },
      )
    }
    return result
  }

  override async status(): Promise<Status> {
    const all = this.#replicas.flat()
    await Promise.allSettled(all.filter((r) => r.available).map((r) => r.refresh()))
    await Promise.all(this.#replicas.map((partition, p) => this.#measureLag(p, partition)))
    return super.status()
  }

  // Entries each follower lacks, and the age of the oldest of them (read from the leader's log).
  async #measureLag(p: number, replicas: readonly RedisPartitionReplica[]): Promise<void> {
    const [leader, ...followers] = replicas
    if (!leader) return
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
        this.#lags.set(`${p}:${follower.replica}`, { entries, ms })
      }),
    )
  }
}
