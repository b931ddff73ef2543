/**
 * A small in-memory ClusterService for the HTTP tests: one region, one version per key, one
 * stable vector per partition. It records every call so tests can check that a refused request
 * wrote nothing.
 */
import {
  DEFAULT_LIMITS,
  HybridClock,
  SessionNotAvailableError,
  covers,
  vectorToObject,
  type Limits,
  type Status,
} from '@causeway/core'
import type {
  ClusterService,
  ClusterShape,
  ReadRequest,
  ReadResult,
  WriteRequest,
  WriteResult,
} from '../../src/cluster/cluster-service.js'
import type { Version } from '../../src/storage/partition-replica.js'

export interface FakeOptions {
  region?: number
  regions?: number
  partitions?: number
  limits?: Partial<Limits>
  shipping?: 'fifo' | 'causal'
}

export class FakeClusterService implements ClusterService {
  readonly region: number
  readonly reads: ReadRequest[] = []
  readonly writes: WriteRequest[] = []
  /** When set, the next read or write throws it. */
  failWith: unknown
  readonly #shape: ClusterShape
  readonly #versions = new Map<string, Version>()
  readonly #sv: number[][]
  readonly #clock = new HybridClock()

  constructor(options: FakeOptions = {}) {
    this.region = options.region ?? 0
    const regions = options.regions ?? 2
    const partitions = options.partitions ?? 4
    this.#shape = {
      cluster: 'fake-cluster',
      region: this.region,
      regionNames: Array.from({ length: regions }, (_, d) => `r${d}`),
      partitions,
      replicas: 3,
      epochs: new Array<number>(partitions).fill(1),
      limits: { ...DEFAULT_LIMITS, ...options.limits },
      shipping: options.shipping ?? 'fifo',
      namespaces: {},
    }
    this.#sv = Array.from({ length: partitions }, () => new Array<number>(regions).fill(0))
  }

  /** Forgets every call and every version. */
  reset(): void {
    this.reads.length = 0
    this.writes.length = 0
    this.#versions.clear()
  }

  /** Every key that holds a version (tombstones included). */
  keys(): string[] {
    return [...this.#versions.keys()]
  }

  shape(): ClusterShape {
    return this.#shape
  }

  async read(request: ReadRequest): Promise<ReadResult> {
    this.reads.push(request)
    this.#maybeFail()
    const sv = this.#sv[request.partition]!
    if (request.need !== undefined && !covers(sv, request.need.need)) {
      throw new SessionNotAvailableError('replica did not catch up', {
        need: vectorToObject(request.need.need),
        sv: vectorToObject(sv),
      })
    }
    const version = this.#versions.get(request.key)
    const result: ReadResult = { version, epoch: 1, replica: 0, waitedMs: 0 }
    if (version !== undefined) result.idx = sv[version.dc]
    return result
  }

  async write(request: WriteRequest): Promise<WriteResult> {
    this.writes.push(request)
    this.#maybeFail()
    const ts = this.#clock.update(request.dt)
    const sv = this.#sv[request.partition]!
    const idx = (sv[this.region] ?? 0) + 1
    sv[this.region] = idx
    const version: Version = { ts, dc: this.region }
    if (request.value !== undefined) version.value = request.value
    this.#versions.set(request.key, version)
    return { ts, dc: this.region, idx, epoch: 1 }
  }

  async status(): Promise<Status> {
    return {
      cluster: this.#shape.cluster,
      region: this.region,
      replicas: this.#sv.flatMap((sv, partition) =>
        [0, 1, 2].map((replica) => ({
          region: this.region,
          partition,
          replica,
          role: replica === 0 ? ('leader' as const) : ('follower' as const),
          backend: 'fake',
          epoch: 1,
          sv: [...sv],
          lag: { entries: replica, ms: replica * 10 },
        })),
      ),
      shippers: this.#sv.flatMap((sv, partition) =>
        this.#shape.regionNames
          .map((_, to) => to)
          .filter((to) => to !== this.region)
          .map((to) => ({
            partition,
            from: this.region,
            to,
            shipped: 0,
            backlog: sv[this.region] ?? 0,
            lagMs: (sv[this.region] ?? 0) * 10,
          })),
      ),
    }
  }

  #maybeFail(): void {
    if (this.failWith === undefined) return
    const error = this.failWith
    this.failWith = undefined
    throw error
  }
}
