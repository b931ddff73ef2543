/**
 * The sets of a {@link RedisPartitionReplica} (see `../set-replica.ts` and `set-scripts.ts`).
 *
 * Keys per set, all in the partition's hash-tag slot (`<prefix>b:<encoded name>:` then):
 *
 * | key | type | holds |
 * |-----|------|-------|
 * | `c` | string | the set-clock (`encodeClock`) |
 * | `e` | sorted set, every score 0 | one member per (element, dot): the Bigsets element key without the set's prefix, so `ZRANGEBYLEX` walks elements in order |
 * | `n` | string | the exact element count (absent: 0) |
 * | `v` | hash | the stamp: field `d` → highest idx of region `d` applied, `ts`, and `n`, the write counter the scripts compare-and-set on |
 *
 * Writes plan in TypeScript (read, plan, compare-and-set script; retried when another writer got
 * in between) under a per-set lock in this process, so one gateway never races itself. Removes
 * delete their keys in the same script, so there is no tombstone and nothing to compact.
 */
import {
  BigsetKeys,
  CausewayError,
  HLC_ZERO,
  decodeClock,
  deltaToJSON,
  freshClock,
  isHlc,
  liveEntries,
  planApplyDelta,
  scanRange,
  storedElementKeys,
  type BigsetClocks,
  type Dot,
  type Hlc,
  type KvRange,
  type KvWrite,
  type OrderedKv,
  type SetOpEntry,
  type WritePlan,
  setOpEntry,
} from '@causeway/core'
import type { Redis } from 'ioredis'
import { AbstractSetReplica, type SetReplicaOwner } from '../abstract-set-replica.js'
import type { LogEntry } from '../partition-replica.js'
import {
  setActor,
  type SetMembership,
  type SetReplicaStream,
  type SetScan,
  type SetScanOptions,
  type SetSize,
  type SetStamp,
  type SetWrite,
} from '../set-replica.js'
import { deltaElements, parseSetDelta, planLocalWrite } from '../set-writes.js'
import { encodeKeyPart } from './key-layout.js'
import type { LuaScript } from './lua-script.js'
import {
  type RedisOpArgs,
  SET_WRITE_OP_SCRIPT,
  opScriptArgs,
  throwIfReplayed,
} from './op-scripts.js'
import {
  SET_HAS_SCRIPT,
  SET_INGEST_SCRIPT,
  SET_READ_SCRIPT,
  SET_SIZE_SCRIPT,
  SET_STAMP_SCRIPT,
  SET_WRITE_SCRIPT,
} from './set-scripts.js'

/** What the sets need from their replica. */
export interface RedisSetsHost {
  readonly region: number
  readonly regions: number
  /** The replica's key prefix (`ReplicaKeys.prefix`). */
  readonly prefix: string
  readonly metaKey: string
  readonly svKey: string
  logKey(origin: number): string
  epoch(): number
  /** The HLC's physical clock as the scripts take it: ms, or '' for the server's `TIME`. */
  now(): string
  /** The leader claim a write goes under ('' for none; `epoch-scripts.ts`). */
  leaderToken(): string
  /** The live write and read connections; throw `BACKEND_UNAVAILABLE` when closed. */
  writer(): Redis
  reader(): Redis
  /** One backend call with the replica's timeout and error mapping. */
  run<T>(client: Redis, operation: string, call: (client: Redis) => Promise<T>): Promise<T>
  /** Tells the replica about an `sv` a script returned. */
  advance(sv: number[]): void
  /** Tells the replica about its own set write: the entry, then the `sv` its script returned. */
  written(entry: SetOpEntry, sv: number[]): void
}

/** The outcome of ingesting one shipped or replicated set entry. */
export type IngestStatus = 'OK' | 'SKIP' | 'GAP'

// A plan written over a state another writer changed is retried; contention is rare (one
// gateway per region serialises its own writes), so a few attempts with jitter are plenty.
const MAX_ATTEMPTS = 16
// Members per ZRANGEBYLEX page of a scan.
const PAGE = 1000

/** The Redis keys of one set. */
class RedisSetKeys {
  readonly clock: string
  readonly elements: string
  readonly size: string
  readonly stamp: string
  /** The Bigsets codec of the set; members are its element keys without `elementsStart`. */
  readonly codec: BigsetKeys

  // `name` was checked by AbstractSetReplica (or is a checked entry's key).
  constructor(prefix: string, name: string) {
    const base = `${prefix}b:${encodeKeyPart(name)}:`
    this.clock = base + 'c'
    this.elements = base + 'e'
    this.size = base + 'n'
    this.stamp = base + 'v'
    this.codec = BigsetKeys.forSet(name)
  }

  /** The sorted-set member of an element key. */
  member(key: Uint8Array): Buffer {
    return Buffer.from(key.subarray(this.codec.elementsStart.length))
  }

  /** The element key of a member. */
  key(member: Buffer): Uint8Array {
    const start = this.codec.elementsStart
    const key = new Uint8Array(start.length + member.length)
    key.set(start)
    key.set(member, start.length)
    return key
  }

  /** A lex bound of `ZRANGEBYLEX` for a range bound (inclusive or not). */
  bound(key: Uint8Array | undefined, inclusive: boolean, open: '-' | '+'): Buffer | string {
    if (key === undefined) return open
    const start = this.codec.elementsStart
    if (open === '-' && sameBytes(key, start)) return '-'
    if (open === '+' && sameBytes(key, this.codec.elementsEnd)) return '+'
    return Buffer.concat([Buffer.from(inclusive ? '[' : '('), this.member(key)])
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}

/** A script's reply read as Buffers (binary members and clocks stay intact). */
async function runScript(
  client: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | Buffer)[],
): Promise<Buffer[]> {
  let reply: unknown
  try {
    reply = await client.callBuffer('EVALSHA', script.sha, keys.length, ...keys, ...args)
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
    reply = await client.callBuffer('EVAL', script.lua, keys.length, ...keys, ...args)
  }
  if (!Array.isArray(reply)) throw new Error(`unexpected set script reply: ${String(reply)}`)
  return reply.map((item) => (Buffer.isBuffer(item) ? item : Buffer.from(String(item))))
}

function text(reply: readonly Buffer[], i: number): string {
  return reply[i]?.toString('utf8') ?? ''
}

function stampOf(reply: readonly Buffer[], tsAt: number, regions: number): SetStamp {
  const ts = text(reply, tsAt)
  const seen: number[] = []
  for (let d = 0; d < regions; d++) seen.push(Number(text(reply, tsAt + 1 + d) || '0'))
  return { seen, ts: (isHlc(ts) ? ts : HLC_ZERO) as Hlc }
}

function svFrom(reply: readonly Buffer[], at: number, regions: number): number[] {
  const sv: number[] = []
  for (let d = 0; d < regions; d++) sv.push(Number(text(reply, at + d) || '0'))
  return sv
}

/** The sorted-set keys of a set as an {@link OrderedKv} for the core's streaming reads. */
class ZsetKv implements OrderedKv {
  readonly #host: RedisSetsHost
  readonly #set: RedisSetKeys

  constructor(host: RedisSetsHost, set: RedisSetKeys) {
    this.#host = host
    this.#set = set
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    // Only the clock is stored; the tombstone is always empty on Redis.
    if (!sameBytes(key, this.#set.codec.clock)) return undefined
    const value = await this.#host.run(this.#host.reader(), 'set clock', (r) =>
      r.getBuffer(this.#set.clock),
    )
    return value ?? undefined
  }

  batch(): Promise<void> {
    throw new Error('set writes go through the set scripts')
  }

  async *keys(range: KvRange): AsyncGenerator<Uint8Array> {
    let min = this.#set.bound(range.gte ?? range.gt, range.gt === undefined, '-')
    const max = this.#set.bound(range.lt ?? range.lte, range.lt === undefined, '+')
    let left = range.limit ?? Infinity
    while (left > 0) {
      const count = Math.min(PAGE, left)
      const page = await this.#host.run(this.#host.reader(), 'set scan', (r) =>
        r.zrangebylexBuffer(this.#set.elements, min, max, 'LIMIT', 0, count),
      )
      for (const member of page) yield this.#set.key(member)
      left -= page.length
      if (page.length < count) return
      min = Buffer.concat([Buffer.from('('), page[page.length - 1]!])
    }
  }
}

/** The sets of one Redis partition replica. */
export class RedisSets extends AbstractSetReplica {
  readonly #host: RedisSetsHost
  readonly #locks = new Map<string, Promise<unknown>>()

  constructor(owner: SetReplicaOwner, host: RedisSetsHost) {
    super(owner)
    this.#host = host
  }

  protected _write(name: string, write: SetWrite, dt: Hlc): Promise<SetOpEntry> {
    return this.writeRecorded(name, write, dt, undefined)
  }

  /**
   * A checked set write (the replica's `writeOnce` comes here directly); with `op`, the script
   * also records the operation.
   */
  async writeRecorded(
    name: string,
    write: SetWrite,
    dt: Hlc,
    op: RedisOpArgs | undefined,
  ): Promise<SetOpEntry> {
    const keys = new RedisSetKeys(this.#host.prefix, name)
    const host = this.#host
    return this.#locked(name, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const state = await this.#readState(
          keys,
          write.elements.map((e) => e.element),
        )
        const actor = setActor(host.region, host.epoch())
        const plan = planLocalWrite(keys.codec, state.clocks, write, state.live, actor, {
          removal: 'delete',
        })
        const setDelta = JSON.stringify(deltaToJSON(plan.delta))
        const extra = op === undefined ? { keys: [], args: [] } : opScriptArgs(op)
        const reply = await host.run(host.writer(), 'set write', (r) =>
          runScript(
            r,
            op === undefined ? SET_WRITE_SCRIPT : SET_WRITE_OP_SCRIPT,
            [
              host.metaKey,
              host.svKey,
              host.logKey(host.region),
              ...this.#planKeys(keys),
              ...extra.keys,
            ],
            [
              String(host.region),
              String(host.regions),
              dt,
              host.now(),
              state.n,
              name,
              setDelta,
              host.leaderToken(),
              ...planArgs(keys, plan),
              ...extra.args,
            ],
          ),
        )
        if (op !== undefined) throwIfReplayed(reply.map((b) => b.toString('utf8')))
        if (text(reply, 0) === 'RETRY') {
          await jitter(attempt)
          continue
        }
        const head = {
          origin: host.region,
          idx: Number(text(reply, 1)),
          key: name,
          ts: text(reply, 2),
          at: Number(text(reply, 3)),
        }
        const entry = setOpEntry(head, setDelta)
        host.written(entry, svFrom(reply, 4, host.regions))
        return entry
      }
      throw contended(name)
    })
  }

  /** Applies one checked, shipped or replicated set entry (idempotent; a gap applies nothing). */
  async ingest(entry: SetOpEntry): Promise<{ status: IngestStatus; sv: number[] }> {
    const keys = new RedisSetKeys(this.#host.prefix, entry.key)
    const delta = parseSetDelta(entry.setDelta)
    const host = this.#host
    return this.#locked(entry.key, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const state = await this.#readState(keys, deltaElements(delta))
        const plan = planApplyDelta(keys.codec, state.clocks, delta, {
          removal: 'delete',
          live: state.live,
        })
        const reply = await host.run(host.writer(), 'set ingest', (r) =>
          runScript(
            r,
            SET_INGEST_SCRIPT,
            [host.metaKey, host.svKey, host.logKey(entry.origin), ...this.#planKeys(keys)],
            [
              String(entry.origin),
              String(entry.idx),
              String(host.regions),
              entry.ts,
              String(entry.at),
              entry.key,
              entry.setDelta,
              state.n,
              ...planArgs(keys, plan),
            ],
          ),
        )
        const status = text(reply, 0)
        const sv = svFrom(reply, 1, host.regions)
        host.advance(sv)
        if (status === 'RETRY') {
          await jitter(attempt)
          continue
        }
        return { status: status as IngestStatus, sv }
      }
      throw contended(entry.key)
    })
  }

  protected async _has(name: string, element: string): Promise<SetMembership> {
    const keys = new RedisSetKeys(this.#host.prefix, name)
    const host = this.#host
    const reply = await host.run(host.reader(), 'set has', (r) =>
      runScript(
        r,
        SET_HAS_SCRIPT,
        [keys.stamp, keys.elements],
        [String(host.regions), ...elementBounds(keys, element)],
      ),
    )
    const stamp = stampOf(reply, 0, host.regions)
    const dots = reply
      .slice(1 + host.regions)
      .map((member) => keys.codec.decodeElement(keys.key(member)).dot)
    return { dots, stamp }
  }

  protected async _size(name: string): Promise<SetSize> {
    const keys = new RedisSetKeys(this.#host.prefix, name)
    const host = this.#host
    const reply = await host.run(host.reader(), 'set size', (r) =>
      runScript(r, SET_SIZE_SCRIPT, [keys.stamp, keys.size], [String(host.regions)]),
    )
    return { size: Number(text(reply, 0)), stamp: stampOf(reply, 1, host.regions) }
  }

  protected _scan(name: string, options: SetScanOptions): SetScan {
    const keys = new RedisSetKeys(this.#host.prefix, name)
    const range = scanRange(keys.codec, options)
    const kv = new ZsetKv(this.#host, keys)
    return {
      [Symbol.asyncIterator]: () =>
        liveEntries(storedElementKeys(kv, keys.codec, range), freshClock(), options),
      // Read after the walk, so it covers every element the walk returned.
      stamp: () => this.#stamp(keys),
    }
  }

  protected async _stream(
    name: string,
    options: Pick<SetScanOptions, 'from' | 'after'>,
  ): Promise<SetReplicaStream> {
    const keys = new RedisSetKeys(this.#host.prefix, name)
    const range = scanRange(keys.codec, options)
    const kv = new ZsetKv(this.#host, keys)
    const clock = decodeClock(await kv.get(keys.codec.clock))
    return {
      clock,
      entries: liveEntries(storedElementKeys(kv, keys.codec, range), freshClock()),
      stamp: () => this.#stamp(keys),
    }
  }

  async #stamp(keys: RedisSetKeys): Promise<SetStamp> {
    const host = this.#host
    const reply = await host.run(host.reader(), 'set stamp', (r) =>
      runScript(r, SET_STAMP_SCRIPT, [keys.stamp], [String(host.regions)]),
    )
    return stampOf(reply, 0, host.regions)
  }

  #planKeys(keys: RedisSetKeys): string[] {
    return [keys.clock, keys.elements, keys.size, keys.stamp]
  }

  // The write counter, the clock and the live dots of `elements`, read together at the leader.
  async #readState(
    keys: RedisSetKeys,
    elements: readonly string[],
  ): Promise<{ n: string; clocks: BigsetClocks; live: Map<string, Dot[]> }> {
    const distinct = [...new Set(elements)]
    const host = this.#host
    const reply = await host.run(host.writer(), 'set read', (r) =>
      runScript(
        r,
        SET_READ_SCRIPT,
        [keys.stamp, keys.clock, keys.elements],
        [String(distinct.length), ...distinct.flatMap((e) => elementBounds(keys, e))],
      ),
    )
    const live = new Map<string, Dot[]>()
    let at = 2
    for (const element of distinct) {
      const count = Number(text(reply, at++))
      const dots: Dot[] = []
      for (let i = 0; i < count; i++)
        dots.push(keys.codec.decodeElement(keys.key(reply[at++]!)).dot)
      live.set(element, dots)
    }
    const clock = reply[1]!.length === 0 ? freshClock() : decodeClock(reply[1])
    return { n: text(reply, 0), clocks: { clock, tombstone: freshClock() }, live }
  }

  #locked<T>(name: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(name) ?? Promise.resolve()
    const run = previous.then(task, task)
    const tail = run.catch(() => undefined)
    this.#locks.set(name, tail)
    void tail.then(() => {
      if (this.#locks.get(name) === tail) this.#locks.delete(name)
    })
    return run
  }
}

/** The `ZRANGEBYLEX` bounds of one element's members. */
function elementBounds(keys: RedisSetKeys, element: string): [Buffer, Buffer] {
  return [
    keys.bound(keys.codec.elementStart(element), true, '-') as Buffer,
    keys.bound(keys.codec.elementEnd(element), false, '+') as Buffer,
  ]
}

/** The plan as script arguments: clock ('' unchanged), size delta, adds, deletes. */
function planArgs(keys: RedisSetKeys, plan: WritePlan): (string | Buffer)[] {
  let clock: Buffer | string = ''
  const adds: Buffer[] = []
  const dels: Buffer[] = []
  for (const w of plan.writes as KvWrite[]) {
    if (sameBytes(w.key, keys.codec.clock)) {
      if (w.type === 'put') clock = Buffer.from(w.value)
      continue
    }
    if (keys.codec.kindOf(w.key) !== 'element')
      throw new CausewayError('INTERNAL', 'a Redis set plan may only write the clock and elements')
    if (w.type === 'put') adds.push(keys.member(w.key))
    else dels.push(keys.member(w.key))
  }
  return [
    clock,
    String(plan.sizeDelta ?? 0),
    String(adds.length),
    ...adds,
    String(dels.length),
    ...dels,
  ]
}

function jitter(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(50, 2 ** attempt)
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function contended(name: string): CausewayError {
  return new CausewayError(
    'BACKEND_UNAVAILABLE',
    `set ${JSON.stringify(name)} changed under ${MAX_ATTEMPTS} attempts to write it; retry`,
  )
}

/**
 * Ingests shipped (`'batch'`: a gap stops everything after it) or replicated (`'per-origin'`: a
 * gap stops only its origin) entries of which some are set writes: runs of other entries go
 * through `ingestOthers` (the replica's own script), set entries one by one, all in order.
 * Every entry was checked before (`AbstractPartitionReplica`). Resolves to the last `sv`.
 */
export async function ingestWithSets(
  sets: RedisSets,
  entries: readonly LogEntry[],
  mode: 'batch' | 'per-origin',
  ingestOthers: (entries: readonly LogEntry[]) => Promise<number[]>,
  sv: number[],
): Promise<number[]> {
  const stopped = new Set<number>()
  let i = 0
  while (i < entries.length) {
    const entry = entries[i]!
    if (entry.kind === 'set-op') {
      i++
      if (stopped.has(entry.origin)) continue
      const result = await sets.ingest(entry)
      sv = result.sv
      if (result.status === 'GAP') {
        stopped.add(entry.origin)
        if (mode === 'batch') break
      }
      continue
    }
    const run: LogEntry[] = []
    while (i < entries.length && entries[i]!.kind !== 'set-op') {
      const e = entries[i++]!
      if (!stopped.has(e.origin)) run.push(e)
    }
    if (run.length === 0) continue
    sv = await ingestOthers(run)
    for (const e of run) if (e.idx > (sv[e.origin] ?? 0)) stopped.add(e.origin)
    if (mode === 'batch' && stopped.size > 0) break
  }
  return sv
}
