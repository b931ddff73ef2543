/**
 * The client-held session of NuKV: the `hrm`/`hwm` region×partition matrices (sparse: only the
 * partitions the session touched), the dependency times `dtR`/`dtW`, and the epoch of each
 * position when the gateway told it (`epoch-history.ts`); in a cluster with causal shipping, also
 * its vector clock (`vc`, one HLC per region: `causal-clock.ts`). It is plain data so it can move
 * between tabs, processes and devices:
 * `JSON.stringify(session)` saves it, {@link Session.fromJSON} validates and restores it, and
 * {@link Session.merge} joins two (elementwise max).
 */
import {
  type ReadLevel,
  type WriteLevel,
  readNeedsReads,
  readNeedsWrites,
  writeFollowsReads,
  writeFollowsWrites,
} from './consistency.js'
import { MAX_SAFE_COUNTER, withoutNegativeZero } from './counter-bounds.js'
import {
  type VectorClock,
  clockMaxInto,
  clockTop,
  isVectorClock,
  isZeroClock,
  zeroClock,
} from './causal-clock.js'
import { CausewayError, type LostPosition } from './errors.js'
import { HLC_ZERO, type Hlc, hlcMax, isHlc } from './hlc.js'
import type { ReadNeed } from './vector.js'

/**
 * Version of the serialised session format. Version 2 keeps the epoch of each position (per
 * partition and origin region); version 1 (one epoch per partition) still restores, its positions
 * with epochs unknown.
 */
export const SESSION_FORMAT_VERSION = 2

/** The serialised form of a session. */
export interface SessionJSON {
  /** Format version ({@link SESSION_FORMAT_VERSION}). */
  v: number
  /** Id of the cluster the session belongs to. */
  cluster: string
  /** Number of regions of that cluster. */
  regions: number
  /** Number of partitions of that cluster. */
  partitions: number
  /** Highest HLC the session has read. */
  dtR: Hlc
  /** Highest HLC the session has written. */
  dtW: Hlc
  /**
   * Touched partitions: `hrm[:,p]` as `r` and `hwm[:,p]` as `w` (length `regions`), and the epoch
   * of each of their positions as `re` and `we` (0: not known).
   */
  p: Record<string, { r: number[]; w: number[]; re: number[]; we: number[] }>
  /**
   * Highest tid of each region's transaction log this session has read or written (length
   * `regions`); absent while the session has used no transaction or transactional key.
   */
  t?: number[]
  /**
   * Causal shipping: the vector clock, one HLC per region (the newest version of each region the
   * session has seen). Absent while it has seen nothing.
   */
  vc?: Hlc[]
}

/** The shape of the cluster a session is bound to. */
export interface SessionScope {
  cluster: string
  regions: number
  partitions: number
}

/** What a read reply tells the session (NuKV GetReply). */
export interface ReadObservation {
  /** Origin region of the returned version; absent when the key has never been written. */
  dc?: number
  /** The serving replica's `sv[dc]`. */
  idx?: number
  /** HLC of the returned version. */
  ts?: Hlc
  /** The epoch in which region `dc` issued `idx`, when the reply says (0 or absent: unknown). */
  epoch?: number
}

/** What a write reply tells the session (NuKV PutReply). */
export interface WriteObservation {
  dc: number
  idx: number
  ts: Hlc
  /** The epoch the leader issued `idx` in. */
  epoch: number
}

/** The positions of one partition a session depends on (a copy). */
export interface SessionRow {
  /** The highest epoch among the row's positions (1 when none is known). */
  epoch: number
  hrm: readonly number[]
  hwm: readonly number[]
  /** The epoch of each `hrm` position (0: not known). */
  hrmEpochs: readonly number[]
  /** The epoch of each `hwm` position (0: not known). */
  hwmEpochs: readonly number[]
}

interface Row {
  r: number[]
  w: number[]
  re: number[]
  we: number[]
}

const MAX_REGIONS = 255
const MAX_PARTITIONS = 65_536

/** A client session: what it has read and written, per partition and origin region. */
export class Session {
  readonly cluster: string
  readonly regions: number
  readonly partitions: number
  /** Highest HLC this session has read. */
  dtR: Hlc = HLC_ZERO
  /** Highest HLC this session has written. */
  dtW: Hlc = HLC_ZERO
  readonly #rows = new Map<number, Row>()
  /** `#tids[d]`: highest tid of region `d`'s transaction log read or written. */
  readonly #tids: number[]
  #vc: Hlc[]

  constructor(scope: SessionScope) {
    this.cluster = scope.cluster
    this.regions = scope.regions
    this.partitions = scope.partitions
    this.#tids = new Array<number>(scope.regions).fill(0)
    this.#vc = zeroClock(scope.regions)
  }

  /**
   * Restores a session from its JSON (an object or a string), validating every field. A malformed
   * session throws `INVALID_SESSION`; one from another cluster (when `expect` is given) throws
   * `FOREIGN_SESSION`. Nothing of a rejected session is used.
   */
  static fromJSON(json: unknown, expect?: SessionScope): Session {
    let data = json
    if (typeof data === 'string') {
      try {
        data = JSON.parse(data)
      } catch {
        throw new CausewayError('INVALID_SESSION', 'session is not valid JSON')
      }
    }
    const s = parseSessionJSON(data)
    if (
      expect &&
      (s.cluster !== expect.cluster ||
        s.regions !== expect.regions ||
        s.partitions !== expect.partitions)
    ) {
      throw new CausewayError(
        'FOREIGN_SESSION',
        `session belongs to cluster ${JSON.stringify(s.cluster)} (${s.regions} regions × ${s.partitions} partitions), not ${JSON.stringify(expect.cluster)} (${expect.regions} × ${expect.partitions})`,
      )
    }
    return s
  }

  /** The serialised form; `JSON.stringify(session)` calls this. */
  toJSON(): SessionJSON {
    const p: SessionJSON['p'] = {}
    for (const [part, row] of this.#rows)
      p[part] = { r: [...row.r], w: [...row.w], re: [...row.re], we: [...row.we] }
    const json: SessionJSON = {
      v: SESSION_FORMAT_VERSION,
      cluster: this.cluster,
      regions: this.regions,
      partitions: this.partitions,
      dtR: this.dtR,
      dtW: this.dtW,
      p,
    }
    if (this.#tids.some((tid) => tid > 0)) json.t = [...this.#tids]
    if (!isZeroClock(this.#vc)) json.vc = [...this.#vc]
    return json
  }

  /** The vector clock (causal shipping): the newest version of each region seen. A copy. */
  clock(): Hlc[] {
    return [...this.#vc]
  }

  /**
   * Records a version of region `dc` stamped `ts` in the vector clock (a causal cluster's SDK does
   * for every version a reply shows).
   */
  observeClock(dc: number, ts: Hlc): void {
    if (dc >= 0 && dc < this.regions && ts > this.#vc[dc]!) this.#vc[dc] = ts
  }

  /** An independent copy. */
  clone(): Session {
    const s = new Session(this)
    s.merge(this)
    return s
  }

  /** Partitions this session has touched. */
  touched(): number[] {
    return [...this.#rows.keys()]
  }

  /** `hrm[:,p]`, `hwm[:,p]` and their epochs, or undefined when `p` is untouched. */
  row(p: number): SessionRow | undefined {
    const row = this.#rows.get(p)
    if (!row) return undefined
    return {
      epoch: Math.max(1, ...row.re, ...row.we),
      hrm: [...row.r],
      hwm: [...row.w],
      hrmEpochs: [...row.re],
      hwmEpochs: [...row.we],
    }
  }

  /**
   * Joins another session of the same cluster into this one: elementwise max of the matrices
   * (a position with a higher index wins, with its epoch) and of the dependency times.
   */
  merge(other: Session | SessionJSON): this {
    const o = other instanceof Session ? other : Session.fromJSON(other)
    if (
      o.cluster !== this.cluster ||
      o.regions !== this.regions ||
      o.partitions !== this.partitions
    ) {
      throw new CausewayError('FOREIGN_SESSION', 'cannot merge sessions of different clusters')
    }
    this.dtR = hlcMax(this.dtR, o.dtR)
    this.dtW = hlcMax(this.dtW, o.dtW)
    o.#tids.forEach((tid, d) => this.observeTid(d, tid))
    clockMaxInto(this.#vc, o.#vc)
    for (const [p, theirs] of o.#rows) {
      const mine = this.#rowFor(p)
      for (let d = 0; d < this.regions; d++) {
        mergePosition(mine.r, mine.re, d, theirs.r[d] ?? 0, theirs.re[d] ?? 0)
        mergePosition(mine.w, mine.we, d, theirs.w[d] ?? 0, theirs.we[d] ?? 0)
      }
    }
    return this
  }

  /**
   * What a read of partition `p` at `level` needs (NuKV Alg. 1 lines 3–13: the elementwise max of
   * the rows the level picks, with each position's epoch), or undefined when it needs nothing.
   */
  readNeed(p: number, level: ReadLevel): ReadNeed | undefined {
    const row = this.#rows.get(p)
    if (!row || level === 'eventual') return undefined
    return needOf(row, this.regions, readNeedsReads(level), readNeedsWrites(level))
  }

  /**
   * The positions a write at `level` depends on in partition `p` (its writes for monotonic
   * writes, its reads for writes-follow-reads): sent with the write so a leader refuses it with
   * `EPOCH_MISMATCH` when a failover lost one of them. Undefined when it depends on none.
   */
  writeNeed(p: number, level: WriteLevel): ReadNeed | undefined {
    const row = this.#rows.get(p)
    if (!row || level === 'eventual') return undefined
    return needOf(row, this.regions, writeFollowsReads(level), writeFollowsWrites(level))
  }

  /**
   * The dependency time a write at `level` sends (NuKV Alg. 1 lines 21–28); a `causal` write's
   * is past its whole vector clock too, so it is stamped after everything the session saw.
   */
  writeDependency(level: WriteLevel): Hlc {
    let dt = HLC_ZERO
    if (writeFollowsWrites(level)) dt = hlcMax(dt, this.dtW)
    if (writeFollowsReads(level)) dt = hlcMax(dt, this.dtR)
    if (level === 'causal') dt = hlcMax(dt, clockTop(this.#vc))
    return dt
  }

  /** @internal Used by {@link Session.fromJSON} after validation. */
  restoreClock(vc: VectorClock): void {
    this.#vc = [...vc]
  }

  /** Records a read reply: `hrm[dc][p] = max(.., idx)`, `dtR = max(dtR, ts)`. */
  observeRead(p: number, reply: ReadObservation): void {
    if (reply.dc !== undefined && reply.idx !== undefined && reply.idx > 0) {
      const row = this.#rowFor(p)
      mergePosition(row.r, row.re, reply.dc, reply.idx, reply.epoch ?? 0)
    } else this.#rowFor(p)
    if (reply.ts !== undefined && reply.ts > this.dtR) this.dtR = reply.ts
  }

  /** Records a write reply: `hwm[dc][p] = max(.., idx)`, `dtW = max(dtW, ts)`. */
  observeWrite(p: number, reply: WriteObservation): void {
    const row = this.#rowFor(p)
    mergePosition(row.w, row.we, reply.dc, reply.idx, reply.epoch)
    if (reply.ts > this.dtW) this.dtW = reply.ts
  }

  /**
   * The highest tid of region `region`'s transaction log this session has read or written: a
   * transaction it starts there reads at a snapshot at least this recent (0: none).
   */
  tid(region: number): number {
    return this.#tids[region] ?? 0
  }

  /** Records that the session read or wrote at `tid` of region `region`'s transaction log. */
  observeTid(region: number, tid: number): void {
    if (region >= 0 && region < this.regions && tid > (this.#tids[region] ?? 0))
      this.#tids[region] = tid
  }

  /** Forgets partition `p`: the session then depends on nothing there. */
  forget(p: number): void {
    this.#rows.delete(p)
  }

  /**
   * Re-bases partition `p` on what a failover kept: each position the session held that is
   * among `lost` (an `EpochMismatchError`'s `lost`) is lowered to the last index its region's
   * history kept (`kept`, with its epoch). Positions not named stay. The session then no longer
   * depends on the lost writes: reads may not show them (they are gone), but everything kept
   * stays guaranteed. Returns whether anything changed.
   */
  rebase(p: number, lost: readonly LostPosition[]): boolean {
    const row = this.#rows.get(p)
    if (!row) return false
    let changed = false
    for (const l of lost) {
      if (!Number.isInteger(l.region) || l.region < 0 || l.region >= this.regions) continue
      for (const [idx, epochs] of [
        [row.r, row.re],
        [row.w, row.we],
      ] as const) {
        const held = idx[l.region]!
        // Every index between what was kept and the lost position was lost with it.
        if (held <= l.kept || held > l.idx) continue
        idx[l.region] = l.kept
        epochs[l.region] = l.kept > 0 ? l.keptEpoch : 0
        changed = true
      }
    }
    return changed
  }

  /** @internal Used by {@link Session.fromJSON} after validation. */
  restoreRow(
    p: number,
    hrm: readonly number[],
    hwm: readonly number[],
    hrmEpochs: readonly number[],
    hwmEpochs: readonly number[],
  ): void {
    this.#rows.set(p, { r: [...hrm], w: [...hwm], re: [...hrmEpochs], we: [...hwmEpochs] })
  }

  #rowFor(p: number): Row {
    let row = this.#rows.get(p)
    if (!row) {
      const zeros = () => new Array<number>(this.regions).fill(0)
      row = { r: zeros(), w: zeros(), re: zeros(), we: zeros() }
      this.#rows.set(p, row)
    }
    return row
  }
}

// Keeps the later of position (idx[d], epochs[d]) and (theirIdx, theirEpoch): the higher index,
// or on the same index the known (higher) epoch.
function mergePosition(
  idx: number[],
  epochs: number[],
  d: number,
  theirIdx: number,
  theirEpoch: number,
): void {
  const mine = idx[d] ?? 0
  if (theirIdx > mine) {
    idx[d] = theirIdx
    epochs[d] = theirEpoch
  } else if (theirIdx === mine && theirIdx > 0 && theirEpoch > (epochs[d] ?? 0)) {
    epochs[d] = theirEpoch
  }
}

function needOf(row: Row, regions: number, reads: boolean, writes: boolean): ReadNeed {
  const need = new Array<number>(regions).fill(0)
  const epochs = new Array<number>(regions).fill(0)
  if (reads) for (let d = 0; d < regions; d++) mergePosition(need, epochs, d, row.r[d]!, row.re[d]!)
  if (writes)
    for (let d = 0; d < regions; d++) mergePosition(need, epochs, d, row.w[d]!, row.we[d]!)
  return epochs.some((e) => e > 0) ? { need, epochs } : { need }
}

function bad(why: string): CausewayError {
  return new CausewayError('INVALID_SESSION', `invalid session: ${why}`)
}

function isCount(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
}

function parseSessionJSON(data: unknown): Session {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw bad('not an object')
  const j = data as Record<string, unknown>
  if (j.v !== 1 && j.v !== SESSION_FORMAT_VERSION)
    throw bad(`unsupported format version ${JSON.stringify(j.v)}`)
  if (typeof j.cluster !== 'string' || j.cluster.length === 0 || j.cluster.length > 128)
    throw bad('cluster must be a non-empty string')
  if (!isCount(j.regions, 1, MAX_REGIONS))
    throw bad(`regions must be an integer in 1..${MAX_REGIONS}`)
  if (!isCount(j.partitions, 1, MAX_PARTITIONS))
    throw bad(`partitions must be an integer in 1..${MAX_PARTITIONS}`)
  if (!isHlc(j.dtR) || !isHlc(j.dtW)) throw bad('dtR and dtW must be 16 lowercase hex digits')
  if (typeof j.p !== 'object' || j.p === null || Array.isArray(j.p))
    throw bad('p must be an object')
  const regions = j.regions
  const s = new Session({ cluster: j.cluster, regions, partitions: j.partitions })
  s.dtR = j.dtR
  s.dtW = j.dtW
  if (j.vc !== undefined) {
    if (!isVectorClock(j.vc, regions)) throw bad(`vc must be an array of ${regions} HLCs`)
    s.restoreClock(j.vc)
  }
  const vector = (v: unknown, what: string): number[] => {
    if (!Array.isArray(v) || v.length !== regions)
      throw bad(`${what} must be an array of ${regions} indexes`)
    for (const x of v) if (!isCount(x, 0, MAX_SAFE_COUNTER)) throw bad(`${what} holds a non-index`)
    // A `-0` index is 0, as JSON writes it back (`counter-bounds.ts`).
    return (v as number[]).map(withoutNegativeZero)
  }
  for (const [key, row] of Object.entries(j.p as Record<string, unknown>)) {
    if (!/^(0|[1-9][0-9]*)$/.test(key) || Number(key) >= j.partitions)
      throw bad(`partition ${JSON.stringify(key)} does not exist`)
    if (typeof row !== 'object' || row === null) throw bad(`partition ${key} is not an object`)
    const r = row as Record<string, unknown>
    const hrm = vector(r.r, `p.${key}.r`)
    const hwm = vector(r.w, `p.${key}.w`)
    if (j.v === 1) {
      // One epoch for the whole row: it says nothing of any one position, so none is known.
      if (!isCount(r.e, 1, MAX_SAFE_COUNTER)) throw bad(`partition ${key} has no valid epoch`)
      const unknown = new Array<number>(regions).fill(0)
      s.restoreRow(Number(key), hrm, hwm, unknown, unknown)
      continue
    }
    const epochsOf = (v: unknown, of: number[], what: string): number[] => {
      const e = vector(v, what)
      if (e.some((x, d) => x > 0 && of[d] === 0)) throw bad(`${what} names an epoch for index 0`)
      return e
    }
    s.restoreRow(
      Number(key),
      hrm,
      hwm,
      epochsOf(r.re, hrm, `p.${key}.re`),
      epochsOf(r.we, hwm, `p.${key}.we`),
    )
  }
  if (j.t !== undefined) vector(j.t, 't').forEach((tid, d) => s.observeTid(d, tid))
  return s
}
