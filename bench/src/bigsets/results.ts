/** What the `bigsets` suite records (`bench/results/bigsets.json`). */
import type { ClusterConfig } from '../cluster-process.js'

/** Where a row was measured (see `suites/bigsets.ts`). */
export type Level = 'storage' | 'end to end'

/**
 * What was inserted into: the decomposed set, or a whole-value set read, modified and written
 * whole (`whole-value-sets.ts`): riak_dt's ORSWOT, or a plain array (not a CRDT).
 */
export type Store = 'decomposed' | 'orswot' | 'array'

/** One measured window of inserts. */
export interface InsertRow {
  level: Level
  store: Store
  /** Clients inserting at once. */
  concurrency: number
  /** Target size: the set holds about this many elements while measured. */
  size: number
  ops: number
  /** NaN (null in the JSON) when the store refused the value. */
  opsPerS: number
  meanMs: number
  p95Ms: number
  /**
   * Ours at the smallest size again, on a fresh set, in the same interleaved rounds as the largest
   * size: the growth target compares the two round by round, side by side in time (the sizes run
   * in order of growth, so the first window at the smallest size ran before anything warmed up).
   */
  again?: boolean
  /** The rate of each round, in order (see `suites/bigsets.ts`); `opsPerS` is their median. */
  roundRates?: number[]
  /**
   * End to end: ms from the window's last reply until every replica of both regions had applied
   * its writes, as a follower read in each region saw it (the read included); 0 at the storage
   * level. Not part of the rate: it shows no replication work was left out of the window.
   */
  settleMs?: number
  /**
   * Whole-value sets written by several clients at once: how many of the acknowledged inserts the
   * value still held after the window (the others were overwritten); `opsPerS` counts only these.
   */
  survived?: number
  /** Whole-value sets: bytes of JSON of the value written before the window. */
  valueBytes?: number
  /** Whole-value sets: the store refused the value (over its value limit), so nothing ran. */
  refused?: { bytes: number; limit: number }
}

/** One full scan (median of the repeats). */
export interface ScanRow {
  level: Level
  size: number
  via: 'service' | 'sdk' | 'stream'
  ms: number
  elementsPerS: number
}

/**
 * Point reads: `has` on the largest set; `get` of a random one of as many small keys (like for
 * like: each finds one entry among that many); `get-one`, the same small key every time.
 */
export interface PointRow {
  level: Level
  case: 'has' | 'get' | 'get-one'
  /** Elements of the set `has` reads; keys the `get` picks from (1 for `get-one`). */
  size: number
  ops: number
  meanMs: number
  /** Absent in results recorded before it was measured. */
  p50Ms?: number
  p95Ms: number
}

/** What the suite records. */
export interface BigsetsResults {
  cluster: ClusterConfig
  /** What the storage level ran on. */
  storage: 'memory' | 'disk'
  /** CPU cores of the machine (everything shares them). */
  cores?: number
  /** Whole-value windows stop starting inserts after this long (ms), over all their rounds. */
  wholeValueMaxMs?: number
  /** End to end, the whole-value sets ran on a second cluster like ours' (see the suite). */
  wholeValuesApart?: boolean
  /** Interleaved rounds each size's windows ran in; a row's rate is the median of its rounds. */
  rounds?: number
  inserts: InsertRow[]
  scans: ScanRow[]
  points: PointRow[]
}
