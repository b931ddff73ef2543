/**
 * The benchmark ablation "without HLC" (NuKV section 6, the cases M/E, E/M, M/M without HLC): a
 * {@link ClusterService} in front of one region's service whose writes ignore their HLC
 * dependency (`dt`): each waits at its partition leader, as a read would, until the leader has
 * applied the dependency vector the request carries (`causeway-after` on a write), and is then
 * stamped by the leader's clock alone. The wait is what the HLC saves; it is reported in the
 * result's `waitedMs` (the `causeway-waited-ms` reply header).
 *
 * Benchmarks and tests only: `causeway dev --without-hlc` and a Redis config's
 * `benchmark.withoutHlc` put it in front of each region's service (`dev-server.ts`,
 * `gateway-server.ts`); nothing in the cluster or storage layers knows about it. Reads, sets,
 * change feeds and status go to the wrapped service unchanged.
 */
import { HLC_ZERO, type ReadNeed, type Status } from '@causeway/core'
import type { SiblingContexts } from '../cluster/sibling-contexts.js'
import type {
  ClusterService,
  ClusterShape,
  ReadRequest,
  ReadResult,
  WriteRequest,
  WriteResult,
} from '../cluster/cluster-service.js'
import type { ChangeFeedService } from '../cluster/change-feed.js'
import type { SetService } from '../cluster/region-sets.js'

/** A region's service that can also wait for its partition leaders (`RegionService`). */
export interface LeaderWaits extends ClusterService {
  /** Resolves once the leader of `partition` has applied `need`, to the ms it waited. */
  awaitLeader(partition: number, need: ReadNeed | undefined, timeoutMs: number): Promise<number>
}

/** `service` with the "without HLC" write path (see the module comment). */
export function withoutHlc(service: LeaderWaits): ClusterService {
  return new WithoutHlc(service)
}

class WithoutHlc implements ClusterService {
  readonly #inner: LeaderWaits
  /** How long a write waits for its dependencies: a read's default deadline. */
  readonly #timeoutMs: number

  constructor(inner: LeaderWaits) {
    this.#inner = inner
    this.#timeoutMs = inner.shape().limits.defaultTimeoutMs
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
    return this.#inner.shape()
  }

  read(request: ReadRequest): Promise<ReadResult> {
    return this.#inner.read(request)
  }

  status(): Promise<Status> {
    return this.#inner.status()
  }

  async write(request: WriteRequest): Promise<WriteResult> {
    const waitedMs =
      request.level === 'eventual'
        ? 0
        : await this.#inner.awaitLeader(request.partition, request.need, this.#timeoutMs)
    const result = await this.#inner.write({ ...request, dt: HLC_ZERO })
    return { ...result, waitedMs }
  }
}
