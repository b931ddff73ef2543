/**
 * The set side of a partition replica: Bigsets (decomposed delta-CRDT sets, `@causeway/core`'s
 * `bigset/`) stored next to the keys of the partition and replicated through its log.
 *
 * The contract is `AbstractSetReplica` (`abstract-set-replica.ts`); this module holds its types.
 *
 * A set write is a log entry of its own kind, `set-op`: `key` is the set name and `setDelta` the
 * delta the leader's planner produced (`deltaToJSON`). It takes an origin idx and advances `sv` like any
 * write, so shipping, follower feeds and session vectors treat it like a key write; applying it
 * elsewhere runs Algorithm 2 (`planApplyDelta`), which is idempotent and commutes with every
 * other delta. Every write of a set runs "read the clocks, plan, write the batch" with no other
 * write to the same set in between (the LevelDB replica's commit queue; a compare-and-set on the
 * set's stamp in the Redis scripts).
 *
 * Each set also keeps a stamp: per origin region, the highest idx of a set entry applied to it,
 * and the highest HLC among them. A read of the set reflects exactly those entries, so its reply
 * reports the stamp and a session records it as it records a key read's `(dc, idx)`.
 */
import {
  HLC_ZERO,
  type Dot,
  type DotClock,
  type Hlc,
  type ReplicaEntries,
  type ScanOptions,
  type SetEntry,
} from '@causeway/core'

/** One element of a set write. */
export interface SetElementOp {
  readonly element: string
  /**
   * The element's dots the client observed (a verified context from `has` or `scan`). Absent:
   * the leader's own observation, i.e. the element's dots live at the leader when it applies the
   * write (Riak's behaviour for an operation without a context).
   */
  readonly ctx?: readonly Dot[]
}

/** A write to one set: adds (each gets a new dot) or removes (of observed dots). */
export interface SetWrite {
  readonly op: 'add' | 'remove'
  readonly elements: readonly SetElementOp[]
}

/** What a read of a set reflects (see the module comment). */
export interface SetStamp {
  /** Per origin region, the highest idx of a set entry of this set applied here. */
  readonly seen: readonly number[]
  /** The highest HLC of those entries; `HLC_ZERO` for a set never written. */
  readonly ts: Hlc
}

/** `has`: the element's live dots (its context; empty when absent) and the stamp. */
export interface SetMembership {
  readonly dots: Dot[]
  readonly stamp: SetStamp
}

/** `size`: the exact number of elements and the stamp. */
export interface SetSize {
  readonly size: number
  readonly stamp: SetStamp
}

/**
 * A streamed scan: iterate it for the entries in element order (it reads the store as it goes),
 * then ask for the stamp, which covers every entry the iteration returned.
 */
export interface SetScan extends AsyncIterable<SetEntry> {
  stamp(): Promise<SetStamp>
}

/** Where a scan starts and how far it goes. */
export type SetScanOptions = Pick<ScanOptions, 'from' | 'after' | 'limit'>

/** One replica's ordered stream of a set for a merge of replicas (`mergeReplicaStreams`). */
export interface SetReplicaStream extends ReplicaEntries {
  stamp(): Promise<SetStamp>
}

/** Most regions a cluster may have; actors of one epoch are `0..MAX_REGIONS - 1` apart. */
const ACTORS_PER_EPOCH = 256

/**
 * The actor under which region `region`'s leader mints dots in `epoch`. An actor must never mint
 * a dot twice; a new epoch means the log may have lost acknowledged writes (and the dots they
 * minted), so each epoch mints under a fresh actor. Epoch 1 uses the region id itself.
 */
export function setActor(region: number, epoch: number): number {
  return (epoch - 1) * ACTORS_PER_EPOCH + region
}

/** The stamp of a set no entry has touched yet. */
export function emptyStamp(regions: number): SetStamp {
  return { seen: new Array<number>(regions).fill(0), ts: HLC_ZERO }
}

/** The stamp after applying an entry of `origin` with `idx` and `ts`. */
export function advanceStamp(stamp: SetStamp, origin: number, idx: number, ts: Hlc): SetStamp {
  const seen = [...stamp.seen]
  if (idx > (seen[origin] ?? 0)) seen[origin] = idx
  return { seen, ts: ts > stamp.ts ? ts : stamp.ts }
}

/** A set-clock, re-exported for backends that report it. */
export type { DotClock }
