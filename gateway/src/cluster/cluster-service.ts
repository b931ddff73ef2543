/**
 * What the HTTP layer calls: one region's view of the cluster. It knows nothing of HTTP; the
 * embedded cluster (LevelDB) and, later, the Redis deployment implement it.
 */
import type {
  CausalContext,
  Durability,
  Hlc,
  Limits,
  Namespaces,
  ReadLevel,
  ReadNeed,
  ReplicaChoice,
  Status,
  WriteLevel,
} from '@causeway/core'
import type { Version } from '../storage/partition-replica.js'
import type { ChangeFeedService } from './change-feed.js'
import type { SetService } from './region-sets.js'
import type { TransactionService } from './transactions/transaction-service.js'
import type { SiblingVersion } from '../storage/sibling-set.js'
import type { SiblingContexts } from './sibling-contexts.js'

/** Shape of the cluster, as this region sees it (the HTTP layer adds URLs to make a Topology). */
export interface ClusterShape {
  cluster: string
  region: number
  regionNames: string[]
  partitions: number
  replicas: number
  epochs: number[]
  limits: Limits
  shipping: 'fifo' | 'causal'
  /** Configured namespaces and their conflict mode; any other key is last-writer-wins. */
  namespaces: Namespaces
}

/** A read, already validated and routed to its partition. */
export interface ReadRequest {
  key: string
  partition: number
  /** What the replica must have applied; undefined for an eventual read. */
  need?: ReadNeed
  replica: ReplicaChoice
  /** How long the replica may wait for `need`, in ms. */
  timeoutMs: number
  level: ReadLevel
  /**
   * A `causal` read's vector clock (`causeway-clock`): the read waits until the region's
   * `SiteTime` covers it (clusters with `shipping: 'causal'`).
   */
  clock?: Hlc[]
}

/** A sibling as a read returns it: its version, value, and the serving replica's `sv[dc]`. */
export interface ReadSibling extends SiblingVersion {
  idx: number
}

/** What a read returns (NuKV GetReply plus where it was served). */
export interface ReadResult {
  /** The version read; in a siblings namespace, the newest sibling (tombstones included). */
  version: Version | undefined
  /** The serving replica's `sv[version.dc]`; undefined when nothing was found. */
  idx?: number
  epoch: number
  replica: number
  waitedMs: number
  /** Siblings namespaces: every sibling, oldest first by `(ts, dc)`, tombstones included. */
  siblings?: ReadSibling[]
  /** Siblings namespaces: the causal context of the siblings (empty for a key never written). */
  context?: CausalContext
  /**
   * Transactional namespaces: the tid of the region's transaction log that made the version (0:
   * none); the read was served at a snapshot of the log.
   */
  tid?: number
}

/** A write (put or delete), already validated. */
export interface WriteRequest {
  key: string
  partition: number
  /** JSON text of the value; undefined deletes (writes a tombstone). */
  value: string | undefined
  dt: Hlc
  durability: Durability
  level: WriteLevel
  /**
   * The causal context the writer read (`causeway-context`), for a key of a siblings namespace:
   * the write supersedes the siblings it covers. Undefined: a blind write (a new sibling). A
   * context for a last-writer-wins key is refused with `INVALID_CONTEXT`.
   */
  context?: CausalContext
  /**
   * The write's dependency vector (`causeway-after` on a write); only the "without HLC"
   * ablation reads it (see `ablation/without-hlc.ts`).
   */
  need?: ReadNeed
  /**
   * The write's operation id (`causeway-op-id`), request fingerprint and tenant: applied at most
   * once; a repeat answers the first result (or `OP_EXPIRED`, see `storage/op-records.ts`).
   */
  op?: WriteOp
  /**
   * A `causal` write's vector clock (`causeway-clock`): the write waits until the region's
   * `SiteTime` covers it and depends on all of it (clusters with `shipping: 'causal'`).
   */
  clock?: Hlc[]
}

/** An operation id and the fingerprint of the request that carries it. */
export interface WriteOp {
  id: string
  fingerprint: string
  /** Who sent it (the API key's principal); ids are remembered per tenant. @default '' */
  tenant?: string
}

/** What a write returns (NuKV PutReply). */
export interface WriteResult {
  ts: Hlc
  dc: number
  idx: number
  epoch: number
  /**
   * Siblings namespaces: the writer's context plus this write, when that is exactly what the
   * result's history holds (see `RegionService.write`); a write with it supersedes this one.
   */
  context?: CausalContext
  /**
   * The "without HLC" ablation only: how long the write waited at the leader for its dependency
   * vector, in ms (the cost NuKV's HLC saves). Undefined when the service does not wait.
   */
  waitedMs?: number
  /** The write's operation id had already been applied: this is its first result. */
  replayed?: boolean
}

/** One region of the cluster, as the gateway's routes use it. */
export interface ClusterService {
  readonly region: number
  shape(): ClusterShape
  /**
   * Serves a read from a replica whose `sv` covers `need`, waiting up to `timeoutMs`. Throws a
   * `CausewayError`: `SESSION_NOT_AVAILABLE` (with `details.need`, `details.sv`) at the
   * deadline, `EPOCH_MISMATCH` for a vector of an older epoch, `VECTOR_UNREACHABLE` when
   * `need` is beyond what the origin leader has ever written.
   */
  read(request: ReadRequest): Promise<ReadResult>
  /**
   * Writes at the partition leader of this region. Throws `CLOCK_SKEW_EXCEEDED` when `dt` is
   * further ahead of the clock than `limits.maxSkewMs`.
   */
  write(request: WriteRequest): Promise<WriteResult>
  status(): Promise<Status>
  /**
   * Signs the sibling contexts this region hands out and checks those clients send back
   * (`sibling-contexts.ts`); every gateway of a cluster must share its secret.
   * @default the process's signer (an embedded cluster's regions share it)
   */
  readonly contexts?: SiblingContexts
  /** The sets of this region (`/v1/sets`); absent in services without them. */
  readonly sets?: SetService
  /** The change feeds of this region (`/v1/watch`); absent in services without them. */
  readonly changes?: ChangeFeedService
  /**
   * The transactions of this region (`/v1/tx`); absent when the cluster has no transactional
   * namespace or its backend keeps no versions.
   */
  readonly transactions?: TransactionService
}
