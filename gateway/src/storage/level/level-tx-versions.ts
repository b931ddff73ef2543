/**
 * The versions of transactional keys in a LevelDB replica (`level-layout.ts`, "Transactional
 * keys"): what a batch of `commit` entries stores, reads at a snapshot, and collection behind the
 * floor. The replica's commit calls it inside its one atomic batch, so versions, log and `sv`
 * always agree.
 *
 * A version is the tid that made it the key's winner, its `(ts, dc)` and the idx of the commit
 * entry (of this replica's own region) that holds its value: `y/<key>` the newest, `x/...` the ones
 * it superseded, each with a garbage mark `g/<tid>/...` saying from which snapshot on it is no
 * longer seen. A version is only made when the write beats the winner by `(ts, dc)` (a relayed
 * write of another region may lose), so the newest version at most `tid` is the winner at `tid`.
 *
 * Commit entries of other regions are only logged here (their writes come as a relay of this
 * region); until a relay has made one visible it is pending, and a transactional read for a
 * session that has seen it waits (`visibleAt`). For the snapshot such a read needs, the replica
 * keeps which tid each recent commit entry of its own region (and each relay) was made at.
 *
 * Another region's commit entry that is itself a relay is not waited for as that region's: this
 * region never relays a relay (its shipper sends only the transactions a region committed itself).
 * A relay of this region's own transaction (an echo) is visible here already, at the tid it has
 * here (`relay[1]`); a relay of a third region's is visible once this region has relayed that
 * region's commit entry (`rel[relay[0]] >= relay[2]`). Waiting for the relaying region's own
 * next transaction instead left such a read stuck until that region committed one (issue 22.7).
 */
import { CausewayError, type CommitEntry, commitWritesOf } from '@causeway/core'
import type { AsOfRead, TxVersion } from '../partition-replica.js'
import {
  type TxMeta,
  type TxStoredVersion,
  decodeEntry,
  decodeTxVersion,
  encodeTxVersion,
  logKey,
  txCommitKey,
  txCommitRange,
  txGarbageKey,
  txGarbageRange,
  txHistoryKey,
  txHistoryOfGarbage,
  txHistoryRange,
  txLatestKey,
  versionOrderKey,
} from './level-layout.js'
import type { StoreOp } from './level-set-kv.js'
import type { StringLevel } from './level-replica.js'
import type { LogTail } from './log-tail.js'

// Whether a stored log row is a commit entry: its header's body mark (level-layout.ts).
function isCommitRow(text: string): boolean {
  return (JSON.parse(text.slice(0, text.indexOf('\n'))) as unknown[])[3] === 4
}

// Rows a collection deletes per run; a full run is followed by another.
const COLLECT_LIMIT = 4096
// Recent commit entries whose tid `visibleAt` knows exactly; older ones answer a bound.
const KNOWN_COMMITS = 8192

/**
 * Which tid recent entries of one stream (this region's commit entries, by idx; or one other
 * region's relayed commits, by that region's idx) were made at, ascending: `tidAt(idx)` is the
 * highest tid among entries with an idx at most `idx`, or a bound above it once those entries
 * are forgotten.
 */
class TidIndex {
  #idx: number[] = []
  #tid: number[] = []
  #head = 0
  /** Entries up to this idx (forgotten) have tids at most `#floorTid`. */
  #floorTid = 0

  constructor(floorTid = 0) {
    this.#floorTid = floorTid
  }

  add(idx: number, tid: number): void {
    this.#idx.push(idx)
    this.#tid.push(tid)
    if (this.#idx.length - this.#head > KNOWN_COMMITS) this.#floorTid = this.#tid[this.#head++]!
    if (this.#head > 1024 && this.#head * 2 > this.#idx.length) {
      this.#idx = this.#idx.slice(this.#head)
      this.#tid = this.#tid.slice(this.#head)
      this.#head = 0
    }
  }

  tidAt(idx: number): number {
    let lo = this.#head
    let hi = this.#idx.length - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (this.#idx[mid]! <= idx) {
        found = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    return found < 0 ? this.#floorTid : this.#tid[found]!
  }
}

/**
 * Another region's commit entry logged here and not visible yet: visible once this region has
 * relayed the commit entry `at` of region `on` (for a plain commit entry of that region, itself).
 */
interface PendingCommit {
  idx: number
  on: number
  at: number
}

/** What a batch being committed changes, until it is stored. */
interface Staged {
  ctid: number
  floor: number
  rel: number[]
  /** Other regions' commit entries it logs. */
  logged: CommitEntry[]
  /** This region's commit entries it stores. */
  made: CommitEntry[]
}

/** What the versions need of their replica. */
export interface LevelTxHost {
  db: StringLevel
  region: number
  regions: number
  /** The newest committed entries of each origin (values of recent versions come from there). */
  tails: () => readonly LogTail[]
}

/** The transactional versions of one LevelDB replica. */
export class LevelTxVersions {
  readonly #host: LevelTxHost
  #ctid = 0
  #floor = 0
  #rel: number[]
  /** By origin, in idx order: its commit entries logged here that are not visible yet. */
  #pending: PendingCommit[][]
  /** The tids of this region's commit entries, by idx; of each other region's relayed ones. */
  #own = new TidIndex()
  #relayed: TidIndex[] = []
  /** By origin: its relays of this region's transactions (echoes), by its idx, at their tid here. */
  #echoes: TidIndex[] = []
  /** By origin: the lowest idx of its relays of a third region's transactions logged here. */
  #thirdFrom: number[] = []
  /** What the batch being committed changes, applied by {@link committed}. */
  #staged: Staged | undefined

  constructor(host: LevelTxHost) {
    this.#host = host
    this.#rel = new Array<number>(host.regions).fill(0)
    this.#pending = Array.from({ length: host.regions }, () => [])
    this.#echoes = Array.from({ length: host.regions }, () => new TidIndex())
    this.#thirdFrom = new Array<number>(host.regions).fill(Infinity)
  }

  /** Loads the persisted state, and the pending commit entries of other regions from the log. */
  async open(meta: TxMeta | undefined, sv: readonly number[]): Promise<void> {
    this.#ctid = meta?.ctid ?? 0
    this.#floor = meta?.floor ?? 0
    this.#rel = meta ? [...meta.rel] : new Array<number>(this.#host.regions).fill(0)
    this.#pending = Array.from({ length: this.#host.regions }, () => [])
    this.#staged = undefined
    // What came before this run is known only as a bound: tids at most the committed one.
    this.#own = new TidIndex(this.#ctid)
    this.#relayed = Array.from({ length: this.#host.regions }, () => new TidIndex(this.#ctid))
    this.#echoes = Array.from({ length: this.#host.regions }, () => new TidIndex(this.#ctid))
    // Relays of a third region's transactions below `rel` are not read again: any of them may be
    // covered (visible by now, at a tid at most `ctid`).
    this.#thirdFrom = new Array<number>(this.#host.regions).fill(
      this.#host.regions > 2 && this.#ctid > 0 ? 0 : Infinity,
    )
    for (let origin = 0; origin < this.#host.regions; origin++) {
      if (origin === this.#host.region || (sv[origin] ?? 0) <= (this.#rel[origin] ?? 0)) continue
      const rows = this.#host.db.iterator({
        gt: logKey(origin, this.#rel[origin] ?? 0),
        lte: logKey(origin, sv[origin]!),
      })
      for await (const [key, text] of rows)
        if (isCommitRow(text)) {
          const entry = decodeEntry(origin, Number(key.slice(6)), text)
          if (entry.kind === 'commit') this.#logged(entry)
        }
    }
  }

  // Notes another region's commit entry, logged here: pending until it is visible (see above).
  #logged(entry: CommitEntry): void {
    const { origin, idx, relay } = entry
    if (relay === undefined) {
      if (idx > (this.#rel[origin] ?? 0)) this.#pending[origin]!.push({ idx, on: origin, at: idx })
    } else if (relay[0] === this.#host.region) {
      this.#echoes[origin]!.add(idx, relay[1])
    } else {
      this.#thirdFrom[origin] = Math.min(this.#thirdFrom[origin]!, idx)
      if (relay[2] > (this.#rel[relay[0]] ?? 0))
        this.#pending[origin]!.push({ idx, on: relay[0], at: relay[2] })
    }
  }

  /** Highest tid committed here. */
  get committedTid(): number {
    return this.#ctid
  }

  /** The version floor. */
  get floor(): number {
    return this.#floor
  }

  /** What the replica persists in its meta (after a staged batch: what it will be). */
  meta(): TxMeta | undefined {
    const s = this.#staged
    const ctid = s?.ctid ?? this.#ctid
    const floor = s?.floor ?? this.#floor
    const rel = s?.rel ?? this.#rel
    if (ctid === 0 && floor === 0 && rel.every((i) => i === 0)) return undefined
    return { ctid, floor, rel: [...rel] }
  }

  /** See `AbstractPartitionReplica.visibleAt`. */
  visibleAt(need: readonly number[]): number | undefined {
    const { region } = this.#host
    let tid = (need[region] ?? 0) > 0 ? this.#own.tidAt(need[region]!) : 0
    for (let origin = 0; origin < this.#pending.length; origin++) {
      const idx = need[origin] ?? 0
      if (origin === region || idx === 0) continue
      const first = this.#pending[origin]![0]
      if (first !== undefined && first.idx <= idx) return undefined
      tid = Math.max(tid, this.#relayed[origin]!.tidAt(idx), this.#echoes[origin]!.tidAt(idx))
      // A relay of a third region's transaction it covers is visible (not pending): at a tid at
      // most the one committed here now.
      if (this.#thirdFrom[origin]! <= idx) tid = Math.max(tid, this.#ctid)
    }
    return tid
  }

  /**
   * The store operations of the `commit` entries of one batch, in their order: versions of this
   * region's commits (local and relays), the commit index, the relay positions; entries of other
   * regions are only noted as pending. Reads the keys' newest versions first. Staged until
   * {@link committed}.
   */
  async commitOps(entries: readonly CommitEntry[]): Promise<StoreOp[]> {
    const { region, regions } = this.#host
    const staged = (this.#staged ??= this.#stage())
    const own = entries.filter((e) => e.origin === region)
    staged.made.push(...own)
    for (const e of entries) if (e.origin !== region) staged.logged.push(e)
    if (own.length === 0) return []
    const keys = [...new Set(own.flatMap((e) => commitWritesOf(e).map(([key]) => key)))]
    const stored = await this.#host.db.getMany(keys.map(txLatestKey))
    const latest = new Map<string, TxStoredVersion | undefined>()
    keys.forEach((key, i) => {
      const text = stored[i]
      latest.set(key, text === undefined ? undefined : decodeTxVersion(text, regions))
    })
    const ops: StoreOp[] = []
    const changed = new Set<string>()
    for (const entry of own) {
      const dc = entry.relay?.[0] ?? region
      const order = versionOrderKey(entry.ts, dc)
      for (const [key, value] of commitWritesOf(entry)) {
        const current = latest.get(key)
        if (current !== undefined && versionOrderKey(current.ts, current.dc) >= order) continue
        const version: TxStoredVersion = {
          tid: entry.tid,
          ts: entry.ts,
          dc,
          deleted: value === undefined,
          idx: entry.idx,
        }
        if (value !== undefined) version.value = value
        if (current !== undefined) {
          // Superseded: a pointer to its entry (older versions are seldom read).
          const { value: _kept, ...pointer } = current
          ops.push({
            type: 'put',
            key: txHistoryKey(key, current.tid),
            value: encodeTxVersion(pointer),
          })
          ops.push({ type: 'put', key: txGarbageKey(entry.tid, key, current.tid), value: '' })
        }
        latest.set(key, version)
        changed.add(key)
      }
      ops.push({ type: 'put', key: txCommitKey(entry.tid), value: String(entry.idx) })
      if (entry.tid > staged.ctid) staged.ctid = entry.tid
      if (entry.relay !== undefined) {
        const [from, , idx] = entry.relay
        if (idx > staged.rel[from]!) staged.rel[from] = idx
      }
    }
    for (const key of changed)
      ops.push({ type: 'put', key: txLatestKey(key), value: encodeTxVersion(latest.get(key)!) })
    return ops
  }

  /**
   * The store operations of raising the floor to `floor`: the superseded versions (and commit
   * index rows) no snapshot from `floor` on can see, a bounded number per call. Staged.
   */
  async collectOps(floor: number): Promise<StoreOp[]> {
    const { db } = this.#host
    const staged = (this.#staged ??= this.#stage())
    if (floor <= staged.floor) return []
    staged.floor = floor
    const ops: StoreOp[] = []
    const marks = await db.keys({ ...txGarbageRange(floor), limit: COLLECT_LIMIT }).all()
    for (const mark of marks) {
      ops.push({ type: 'del', key: mark })
      ops.push({ type: 'del', key: txHistoryOfGarbage(mark) })
    }
    // The index of commits below the floor: a replay never goes back that far.
    const commits = await db.keys({ ...txCommitRange(floor - 1), limit: COLLECT_LIMIT }).all()
    for (const key of commits) ops.push({ type: 'del', key })
    return ops
  }

  #stage(): Staged {
    return { ctid: this.#ctid, floor: this.#floor, rel: [...this.#rel], logged: [], made: [] }
  }

  /** The batch that staged changes was stored: they hold from now on. */
  committed(): void {
    const s = this.#staged
    if (s === undefined) return
    this.#staged = undefined
    this.#ctid = s.ctid
    this.#floor = s.floor
    this.#rel = s.rel
    for (const entry of s.made) {
      this.#own.add(entry.idx, entry.tid)
      if (entry.relay) this.#relayed[entry.relay[0]]!.add(entry.relay[2], entry.tid)
    }
    for (const entry of s.logged) this.#logged(entry)
    for (let origin = 0; origin < this.#pending.length; origin++) {
      const pending = this.#pending[origin]!
      if (pending.some(({ on, at }) => at <= (this.#rel[on] ?? 0)))
        this.#pending[origin] = pending.filter(({ on, at }) => at > (this.#rel[on] ?? 0))
    }
  }

  /** The batch failed: nothing staged holds. */
  abandoned(): void {
    this.#staged = undefined
  }

  /** The idx of the commit entry of `tid` here, when it is committed and indexed. */
  async commitIdx(tid: number): Promise<number | undefined> {
    const text = await this.#host.db.get(txCommitKey(tid))
    return text === undefined ? undefined : Number(text)
  }

  /** See `AbstractPartitionReplica.readAsOf`; `sv` is read with the newest versions. */
  async read(
    tid: number,
    keys: readonly string[],
    values: boolean,
    metaKey: string,
  ): Promise<AsOfRead> {
    const { db, regions } = this.#host
    const rows = await db.getMany([metaKey, ...keys.map(txLatestKey)])
    const meta = rows[0]
    if (meta === undefined) throw new Error('the replica lost its meta record')
    const sv = (JSON.parse(meta) as { sv: number[] }).sv
    const found = await Promise.all(
      keys.map(async (key, i): Promise<TxStoredVersion | undefined> => {
        const text = rows[i + 1]
        const newest = text === undefined ? undefined : decodeTxVersion(text, regions)
        if (newest === undefined || newest.tid <= tid) return newest
        const [older] = await db
          .values({ ...txHistoryRange(key, tid), reverse: true, limit: 1 })
          .all()
        return older === undefined ? undefined : decodeTxVersion(older, regions)
      }),
    )
    // A collection that raised the floor meanwhile may have deleted what this read looked for.
    if (tid < this.#floor)
      throw new CausewayError(
        'SNAPSHOT_TOO_OLD',
        `snapshot ${tid} is older than this replica keeps versions for (from ${this.#floor})`,
        { snapshot: tid, floor: this.#floor },
      )
    const versions = values
      ? await this.#withValues(keys, found)
      : found.map((v) => v && toVersion(v, undefined))
    return { versions, sv }
  }

  // Each version with its value, read from its commit entry (the log tail, else the store).
  async #withValues(
    keys: readonly string[],
    found: readonly (TxStoredVersion | undefined)[],
  ): Promise<(TxVersion | undefined)[]> {
    const { region, db } = this.#host
    const tail = this.#host.tails()[region]
    const entries = new Map<number, CommitEntry | undefined>()
    const missing: number[] = []
    for (const v of found) {
      if (v === undefined || v.deleted || v.value !== undefined || entries.has(v.idx)) continue
      const [entry] = tail?.read(v.idx - 1, 1) ?? []
      if (entry !== undefined && entry.kind === 'commit') entries.set(v.idx, entry)
      else {
        entries.set(v.idx, undefined)
        missing.push(v.idx)
      }
    }
    if (missing.length > 0) {
      const texts = await db.getMany(missing.map((idx) => logKey(region, idx)))
      missing.forEach((idx, i) => {
        const text = texts[i]
        const entry = text === undefined ? undefined : decodeEntry(region, idx, text)
        if (entry?.kind === 'commit') entries.set(idx, entry)
      })
    }
    return found.map((v, i) => {
      if (v === undefined) return undefined
      if (v.deleted) return toVersion(v, undefined)
      if (v.value !== undefined) return toVersion(v, v.value)
      const entry = entries.get(v.idx)
      const write = entry && commitWritesOf(entry).find(([key]) => key === keys[i])
      if (write?.[1] === undefined)
        throw new CausewayError(
          'INTERNAL',
          `the version of ${JSON.stringify(keys[i])} at tid ${v.tid} names commit entry ${v.idx}, which does not write it`,
        )
      return toVersion(v, write[1])
    })
  }
}

function toVersion(v: TxStoredVersion, value: string | undefined): TxVersion {
  const version: TxVersion = { tid: v.tid, ts: v.ts, dc: v.dc, deleted: v.deleted }
  if (value !== undefined) version.value = value
  return version
}
