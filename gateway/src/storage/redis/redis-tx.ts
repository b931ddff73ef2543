/**
 * The transactional versions of a Redis partition replica (`tx-scripts.ts` for the layout): the
 * leader's commits, reads at a snapshot, collection, `visibleAt`, and shipped or replicated
 * `commit` entries (which go through a script of their own, so the ingest script of the other
 * entry kinds stays as it is). The replica keeps a view of `ctid` and the floor from the scripts'
 * replies; other processes may move them, and the scripts check against the stored ones.
 */
import {
  CausewayError,
  type CommitEntry,
  type CommitRelay,
  type Hlc,
  type LogEntry,
  commitEntry,
  commitWritesOf,
  encodeCommitWrites,
  isHlc,
} from '@causeway/core'
import type { Redis } from 'ioredis'
import type { AsOfRead, TxCommit, TxVersion } from '../partition-replica.js'
import { encodeKeyPart } from './key-layout.js'
import { stringsOf, svOf } from './replica-scripts.js'
import {
  COLLECT_SCRIPT,
  COMMIT_SCRIPT,
  INGEST_COMMITS_SCRIPT,
  READ_AS_OF_SCRIPT,
  VISIBLE_SCRIPT,
} from './tx-scripts.js'

/** Every script of transactions, for loading. */
export const TX_SCRIPTS = [
  COMMIT_SCRIPT,
  READ_AS_OF_SCRIPT,
  COLLECT_SCRIPT,
  VISIBLE_SCRIPT,
  INGEST_COMMITS_SCRIPT,
]

const US = '\u001f'
// Keys trimmed per collection script call.
const COLLECT_PAGE = 512

/** What the versions need of their replica. */
export interface RedisTxHost {
  readonly region: number
  readonly regions: number
  readonly prefix: string
  readonly metaKey: string
  readonly svKey: string
  logKey(origin: number): string
  /** The HLC's physical clock as the scripts take it: ms, or '' for the server's `TIME`. */
  now(): string
  writer(): Redis
  reader(): Redis
  run<T>(client: Redis, operation: string, call: (client: Redis) => Promise<T>): Promise<T>
  advance(sv: number[]): void
  /** Entries of the log (for a replay's commit entries). */
  readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]>
}

/** The transactional versions of one Redis replica. */
export class RedisTxVersions {
  readonly #host: RedisTxHost
  readonly #txKey: string
  readonly #commitsKey: string
  readonly #garbageKey: string
  #ctid = 0
  #floor = 0

  constructor(host: RedisTxHost) {
    this.#host = host
    this.#txKey = host.prefix + 'tx'
    this.#commitsKey = host.prefix + 'c'
    this.#garbageKey = host.prefix + 'g'
  }

  get committedTid(): number {
    return this.#ctid
  }

  get floor(): number {
    return this.#floor
  }

  /** The version set of a key. */
  versionsKey(key: string): string {
    return this.#host.prefix + 'x:' + encodeKeyPart(key)
  }

  /** Loads the view of `ctid` and the floor. */
  async load(reader: Redis): Promise<void> {
    const [ctid, floor] = await this.#host.run(reader, 'open', (r) =>
      r.hmget(this.#txKey, 'ctid', 'floor'),
    )
    this.#ctid = Number(ctid ?? 0)
    this.#floor = Number(floor ?? 0)
  }

  /** The leader's commits; `token`: the claim they go under ('' unsupervised: none checked). */
  async commit(commits: readonly TxCommit[], token: string): Promise<CommitEntry[]> {
    const { region, regions } = this.#host
    const keys = [
      this.#host.metaKey,
      this.#host.svKey,
      this.#host.logKey(region),
      this.#txKey,
      this.#commitsKey,
      this.#garbageKey,
    ]
    const args = [String(region), String(regions), this.#host.now(), String(commits.length)]
    const texts = commits.map((c) => encodeCommitWrites(c.writes))
    commits.forEach((c, i) => {
      for (const [key] of c.writes) keys.push(this.versionsKey(key))
      args.push(
        String(c.tid),
        c.ts,
        c.relay === undefined ? '' : c.relay.join(':'),
        texts[i]!,
        c.writes.map(([key]) => encodeKeyPart(key)).join(US),
        String(c.writes.length),
      )
    })
    args.push(token)
    const writer = this.#host.writer()
    const reply = stringsOf(
      await this.#host.run(writer, 'commit', (r) => COMMIT_SCRIPT.run(r, keys, args)),
      commits.length * 2 + regions,
    )
    this.#host.advance(svOf(reply, commits.length * 2, regions))
    const out: CommitEntry[] = []
    for (const [i, c] of commits.entries()) {
      const idx = Number(reply[i * 2])
      const at = Number(reply[i * 2 + 1])
      if (c.tid > this.#ctid) this.#ctid = c.tid
      if (at === 0) {
        // Committed before: its entry as the log has it.
        const [entry] = await this.#host.readLog(region, idx - 1, 1)
        if (entry?.kind !== 'commit' || entry.tid !== c.tid)
          throw new CausewayError('INTERNAL', `commit entry ${idx} is not that of tid ${c.tid}`)
        out.push(entry)
        continue
      }
      const head = { origin: region, idx, key: c.writes[0]![0], ts: c.ts, at }
      out.push(commitEntry(head, c.tid, texts[i]!, c.relay))
    }
    return out
  }

  async readAsOf(tid: number, keys: readonly string[], values: boolean): Promise<AsOfRead> {
    const { regions } = this.#host
    const reader = this.#host.reader()
    const reply = stringsOf(
      await this.#host.run(reader, 'read', (r) =>
        READ_AS_OF_SCRIPT.run(
          r,
          [this.#txKey, this.#host.svKey, ...keys.map((k) => this.versionsKey(k))],
          [String(regions), String(tid)],
        ),
      ),
      2 + regions + keys.length,
    )
    const floor = Number(reply[0])
    if (floor > this.#floor) this.#floor = floor
    const ctid = Number(reply[1])
    if (ctid > this.#ctid) this.#ctid = ctid
    const sv = svOf(reply, 2, regions)
    this.#host.advance(sv)
    if (tid < floor)
      throw new CausewayError(
        'SNAPSHOT_TOO_OLD',
        `snapshot ${tid} is older than this replica keeps versions for (from ${floor})`,
        { snapshot: tid, floor },
      )
    const versions = keys.map((_, i) => decodeMember(reply[2 + regions + i]!, regions, values))
    return { versions, sv }
  }

  async collect(floor: number): Promise<void> {
    const writer = this.#host.writer()
    for (;;) {
      const reply = stringsOf(
        await this.#host.run(writer, 'collect', (r) =>
          COLLECT_SCRIPT.run(
            r,
            [this.#txKey, this.#garbageKey, this.#commitsKey],
            [String(floor), this.#host.prefix + 'x:', String(COLLECT_PAGE)],
          ),
        ),
        2,
      )
      this.#floor = Math.max(this.#floor, Number(reply[0]))
      if (reply[1] !== '1') return
    }
  }

  async visibleAt(need: readonly number[]): Promise<number | undefined> {
    const { region, regions } = this.#host
    const keys = [this.#txKey, this.#host.logKey(region)]
    for (let d = 0; d < regions; d++)
      if (d !== region) keys.push(this.#host.logKey(d), `${this.#txKey}:rl:${d}`)
    const reader = this.#host.reader()
    const reply = stringsOf(
      await this.#host.run(reader, 'visible', (r) =>
        VISIBLE_SCRIPT.run(r, keys, [
          String(regions),
          String(region),
          ...need.map((n) => String(n)),
        ]),
      ),
      1 + regions,
    )
    const ctid = Number(reply[0])
    if (ctid > this.#ctid) this.#ctid = ctid
    let tid = reply[1] === '?' ? ctid : Number(reply[1] || 0)
    for (const answer of reply.slice(2)) {
      if (answer === 'wait') return undefined
      if (answer !== '') tid = Math.max(tid, Number(answer))
    }
    return tid
  }

  /**
   * Shipped (`batch`) or replicated (`per-origin`) entries, some of them commit entries: runs of
   * the others go through `others` (the replica's own ingest), commit entries through their script,
   * each origin's in order. Resolves to the last `sv`.
   */
  async ingest(
    entries: readonly LogEntry[],
    mode: 'batch' | 'per-origin',
    others: (run: readonly LogEntry[]) => Promise<number[]>,
    sv: number[],
  ): Promise<number[]> {
    const stopped = new Set<number>()
    let i = 0
    while (i < entries.length) {
      const run: LogEntry[] = []
      const commits: CommitEntry[] = []
      while (i < entries.length && entries[i]!.kind !== 'commit') {
        const e = entries[i++]!
        if (!stopped.has(e.origin)) run.push(e)
      }
      if (run.length > 0) {
        sv = await others(run)
        for (const e of run) if (e.idx > (sv[e.origin] ?? 0)) stopped.add(e.origin)
        if (mode === 'batch' && stopped.size > 0) break
      }
      // A run of commit entries of one origin.
      while (i < entries.length && entries[i]!.kind === 'commit') {
        const e = entries[i] as CommitEntry
        if (commits.length > 0 && e.origin !== commits[0]!.origin) break
        i++
        if (!stopped.has(e.origin)) commits.push(e)
      }
      if (commits.length === 0) continue
      sv = await this.#ingestCommits(commits)
      for (const e of commits) if (e.idx > (sv[e.origin] ?? 0)) stopped.add(e.origin)
      if (mode === 'batch' && stopped.size > 0) break
    }
    return sv
  }

  async #ingestCommits(entries: readonly CommitEntry[]): Promise<number[]> {
    const { region, regions } = this.#host
    const origin = entries[0]!.origin
    const own = origin === region
    const keys = [
      this.#host.metaKey,
      this.#host.svKey,
      this.#host.logKey(origin),
      this.#txKey,
      this.#commitsKey,
      this.#garbageKey,
    ]
    const args = [String(region), String(regions), String(origin), String(entries.length)]
    for (const e of entries) {
      const writes = commitWritesOf(e)
      if (own) for (const [key] of writes) keys.push(this.versionsKey(key))
      args.push(
        String(e.idx),
        e.key,
        e.ts,
        String(e.at),
        String(e.tid),
        e.relay === undefined ? '' : e.relay.join(':'),
        e.writes,
        writes.map(([key]) => encodeKeyPart(key)).join(US),
        String(writes.length),
      )
    }
    const writer = this.#host.writer()
    const reply = stringsOf(
      await this.#host.run(writer, 'ingest', (r) => INGEST_COMMITS_SCRIPT.run(r, keys, args)),
      regions,
    )
    const sv = svOf(reply, 0, regions)
    this.#host.advance(sv)
    if (own)
      for (const e of entries) if (e.tid > this.#ctid && e.idx <= sv[origin]!) this.#ctid = e.tid
    return sv
  }
}

/** The commit entry fields of a stream row (`k`, `ts`, `at` are the head). */
export function commitOfFields(
  head: { origin: number; idx: number; key: string; ts: Hlc; at: number },
  fields: ReadonlyMap<string, string>,
): CommitEntry | undefined {
  const tid = fields.get('c')
  const writes = fields.get('w')
  if (tid === undefined || writes === undefined) return undefined
  const relayText = fields.get('r')
  const relay =
    relayText === undefined
      ? undefined
      : (relayText.split(':').map(Number) as unknown as CommitRelay)
  return commitEntry(head, Number(tid), writes, relay)
}

// A member of a version set (`tx-scripts.ts`), or undefined for ''.
function decodeMember(member: string, regions: number, values: boolean): TxVersion | undefined {
  if (member === '') return undefined
  const tid = Number(member.slice(0, 16))
  const ts = member.slice(16, 32)
  const dc = parseInt(member.slice(32, 34), 16)
  const mark = member[34]
  if (
    !Number.isSafeInteger(tid) ||
    !isHlc(ts) ||
    !(dc >= 0 && dc < regions) ||
    (mark !== '=' && mark !== '-')
  )
    throw new CausewayError('INTERNAL', `malformed version ${JSON.stringify(member.slice(0, 40))}`)
  const version: TxVersion = { tid, ts, dc, deleted: mark === '-' }
  if (mark === '=' && values) version.value = member.slice(35)
  return version
}
