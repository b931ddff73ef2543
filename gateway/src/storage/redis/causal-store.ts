/**
 * The receiving side of a region of a Redis deployment with causal shipping
 * (`replication/causal/receiver-store.ts`), and the region's stabiliser progress, kept in Redis so
 * that any gateway of the region can take labels and data from other regions and the one that
 * holds the region's causal lease applies them; a new holder carries on where the last one
 * stopped, losing nothing.
 *
 * | key | type | holds |
 * |-----|------|-------|
 * | `cw:{<ns>:r<region>:causal}:q:<origin>` | stream | `origin`'s labels not yet applied, in its stream order: fields `p`, `i` (idx), `v` (the vector timestamp, comma-separated) |
 * | `cw:{<ns>:r<region>:causal}:qs:<origin>` | hash | per partition `r<p>` the highest idx queued, `appended` and `popped` (labels ever queued and applied), `stable` and `stableAt` (the origin's stable time and the position it holds after) |
 * | `cw:{<ns>:r<region>:causal}:site` | hash | `SiteTime`: field `d` → the HLC up to which region `d`'s updates are applied here |
 * | `cw:{<ns>:r<region>:causal}:progress` | string | the stabiliser leader's progress (JSON) |
 * | `cw:{<ns>:r<region>:causal}:lease` | string | the causal lease (`cluster/shipping-lease.ts`) |
 * | `cw:{<ns>:r<region>:p<p>}:inbox:<origin>` | stream | data of `origin`'s updates of partition `p` waiting for their labels, id `<idx>-0`, fields `e` (the entry's JSON) and `ep` (the epoch it was shipped in) |
 *
 * The region's keys live on its partition 0 leader's server, each inbox on its partition's
 * leader (next to the log the entries go into). Each mutation is one Lua script, so a crash never
 * leaves a queue and its counters apart.
 */
import {
  type Hlc,
  HLC_ZERO,
  type Label,
  type LabelEnvelope,
  type LogEntry,
  type ShipEnvelope,
  checkLogEntry,
  checkShipEnvelope,
  isHlc,
  label,
  zeroClock,
} from '@causeway/core'
import { Redis } from 'ioredis'
import type { AbstractPartitionReplica } from '../abstract-partition-replica.js'
import type { LabelCheckpoint } from '../../replication/causal/label-link.js'
import type {
  CausalInbox,
  LabelQueues,
  QueuedLabels,
  ReceiverStore,
  SiteTimeStore,
} from '../../replication/causal/receiver-store.js'
import type {
  ProgressChannel,
  StabiliserProgress,
} from '../../replication/causal/stabiliser-replica.js'
import { backendError } from './backend-error.js'
import { ReplicaKeys, encodeKeyPart } from './key-layout.js'
import { LuaScript } from './lua-script.js'

// KEYS: queue, state. ARGV: partitions, stable, n, applied[0..P-1], then p, idx, vts per label.
const APPEND = new LuaScript(`#!lua
local P = tonumber(ARGV[1])
local stable = ARGV[2]
local n = tonumber(ARGV[3])
local have = {}
for p = 0, P - 1 do
  local r = tonumber(redis.call('HGET', KEYS[2], 'r' .. p) or '0')
  have[p] = math.max(r, tonumber(ARGV[4 + p]))
end
local appended = tonumber(redis.call('HGET', KEYS[2], 'appended') or '0')
local whole = true
local base = 4 + P
for i = 0, n - 1 do
  local p = tonumber(ARGV[base + 3 * i])
  local idx = tonumber(ARGV[base + 3 * i + 1])
  if idx > have[p] then
    if idx ~= have[p] + 1 then whole = false; break end
    redis.call('XADD', KEYS[1], '*', 'p', ARGV[base + 3 * i], 'i', ARGV[base + 3 * i + 1], 'v', ARGV[base + 3 * i + 2])
    have[p] = idx
    redis.call('HSET', KEYS[2], 'r' .. p, ARGV[base + 3 * i + 1])
    appended = appended + 1
  end
end
redis.call('HSET', KEYS[2], 'appended', string.format('%d', appended))
if whole and stable > (redis.call('HGET', KEYS[2], 'stable') or '') then
  redis.call('HSET', KEYS[2], 'stable', stable, 'stableAt', string.format('%d', appended))
end
local out = { redis.call('HGET', KEYS[2], 'stable') or '0000000000000000' }
for p = 0, P - 1 do out[#out + 1] = string.format('%d', have[p]) end
return out
`)

// KEYS: queue, state. ARGV: first, count. Pops only when the head is still at \`first\`.
const POP = new LuaScript(`#!lua
local popped = tonumber(redis.call('HGET', KEYS[2], 'popped') or '0')
if popped ~= tonumber(ARGV[1]) then return 0 end
local rows = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[2])
for _, row in ipairs(rows) do redis.call('XDEL', KEYS[1], row[1]) end
redis.call('HSET', KEYS[2], 'popped', string.format('%d', popped + #rows))
return #rows
`)

// KEYS: state, queue. ARGV: partitions. Reply: popped, stable, stableAt, received[0..P-1].
const QUEUE_STATE = new LuaScript(`#!lua flags=no-writes
local P = tonumber(ARGV[1])
local out = {
  redis.call('HGET', KEYS[1], 'popped') or '0',
  redis.call('HGET', KEYS[1], 'stable') or '0000000000000000',
  redis.call('HGET', KEYS[1], 'stableAt') or '0',
}
for p = 0, P - 1 do out[#out + 1] = redis.call('HGET', KEYS[1], 'r' .. p) or '0' end
return out
`)

// The highest idx of an inbox stream or applied (sv[origin]); a helper of the scripts below.
const INBOX_TOP_LUA = `
local function inbox_top(inbox, sv, origin)
  local have = tonumber(redis.call('HGET', sv, origin) or '0')
  local last = redis.call('XREVRANGE', inbox, '+', '-', 'COUNT', 1)
  if #last > 0 then
    local id = tonumber(string.match(last[1][1], '^(%d+)'))
    if id > have then have = id end
  end
  return have
end
`

// KEYS: inbox, sv. ARGV: origin, max, epoch, n, then idx and JSON per entry.
const STASH = new LuaScript(`#!lua
${INBOX_TOP_LUA}
local max = tonumber(ARGV[2])
local n = tonumber(ARGV[4])
local have = inbox_top(KEYS[1], KEYS[2], ARGV[1])
local len = redis.call('XLEN', KEYS[1])
for i = 0, n - 1 do
  local idx = tonumber(ARGV[5 + 2 * i])
  if idx > have then
    if idx ~= have + 1 or len >= max then break end
    redis.call('XADD', KEYS[1], ARGV[5 + 2 * i] .. '-0', 'e', ARGV[6 + 2 * i], 'ep', ARGV[3])
    have = idx
    len = len + 1
  end
end
return string.format('%d', have)
`)

// KEYS: inbox, sv. ARGV: origin.
const INBOX_TOP = new LuaScript(`#!lua flags=no-writes
${INBOX_TOP_LUA}
return string.format('%d', inbox_top(KEYS[1], KEYS[2], ARGV[1]))
`)

// KEYS: site. ARGV: origin, ts. Raises, never lowers.
const RAISE = new LuaScript(`#!lua
if ARGV[2] > (redis.call('HGET', KEYS[1], ARGV[1]) or '') then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0
`)

const INVALIDATE_CHANNEL = '__redis__:invalidate'

/** Options of a {@link RedisCausalStore}. */
export interface RedisCausalStoreOptions {
  /** The cluster's Redis key namespace. */
  namespace: string
  region: number
  regions: number
  /** The server of the region's partition 0 leader: where the region's causal keys live. */
  regionUrl: string
  /** Each partition leader's server (where its inbox lives), by partition. */
  leaderUrls: readonly string[]
  /** The region's partition leaders (what they have applied), by partition. */
  leaders: readonly AbstractPartitionReplica[]
  /** @default 5000 */
  commandTimeoutMs?: number
  /** @default 2000 */
  connectTimeoutMs?: number
  /** @default 1000 */
  reconnectMaxDelayMs?: number
  /** Most entries per inbox (origin and partition). @default 100000 */
  maxInbox?: number
  /** Told when `SiteTime` may have changed (a push from the server). */
  onSiteTime?: () => void
}

/** The key prefix of region `region`'s causal state. */
export function causalPrefix(namespace: string, region: number): string {
  return `cw:{${encodeKeyPart(namespace)}:r${region}:causal}:`
}

/** A region's causal receiver state and stabiliser progress in Redis. See the module comment. */
export class RedisCausalStore implements ReceiverStore, LabelQueues, CausalInbox, SiteTimeStore {
  readonly labels: LabelQueues = this
  readonly inbox: CausalInbox = this
  readonly site: SiteTimeStore = this
  /** The key of the region's causal lease. */
  readonly leaseKey: string
  readonly #options: RedisCausalStoreOptions
  readonly #prefix: string
  readonly #partitions: number
  readonly #main: Redis
  readonly #subscriber: Redis
  readonly #leaders: Redis[]
  readonly #blockers = new Map<number, Redis>()
  readonly #replicaKeys: ReplicaKeys[] = []
  #closed = false

  constructor(options: RedisCausalStoreOptions) {
    this.#options = options
    this.#prefix = causalPrefix(options.namespace, options.region)
    this.leaseKey = `${this.#prefix}lease`
    this.#partitions = options.leaders.length
    this.#main = this.#connect(options.regionUrl, 'causal')
    this.#subscriber = this.#connect(options.regionUrl, 'causal-watch', true)
    // One connection per distinct server (partitions may share one).
    const byUrl = new Map<string, Redis>()
    this.#leaders = options.leaderUrls.map((url) => {
      let redis = byUrl.get(url)
      if (!redis) byUrl.set(url, (redis = this.#connect(url, 'causal-inbox')))
      return redis
    })
  }

  /** Connects (the servers need not be up: calls fail with `BACKEND_UNAVAILABLE` until they are). */
  async start(): Promise<void> {
    for (const redis of this.#all()) redis.connect().catch(() => undefined)
    this.#subscriber.on('ready', () => void this.#watch())
    this.#subscriber.on('message', (channel: string) => {
      if (channel === INVALIDATE_CHANNEL) this.#options.onSiteTime?.()
    })
    const ready = (redis: Redis) =>
      new Promise<void>((resolve) => {
        if (redis.status === 'ready') return resolve()
        redis.once('ready', () => resolve())
        setTimeout(resolve, this.#options.connectTimeoutMs ?? 2000)
      })
    await Promise.all([ready(this.#main), ready(this.#subscriber)])
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const redis of [...this.#all(), ...this.#blockers.values()]) redis.disconnect()
  }

  // ---- label queues

  async labelCheckpoint(origin: number): Promise<LabelCheckpoint> {
    const state = await this.#queueState(origin)
    const applied = this.#applied(origin)
    return {
      received: applied.map((idx, p) => Math.max(idx, state.received[p] ?? 0)),
      applied,
      stable: state.stable,
    }
  }

  async append(envelope: LabelEnvelope): Promise<LabelCheckpoint> {
    const origin = envelope.from
    const applied = this.#applied(origin)
    const args = [
      String(this.#partitions),
      envelope.stable,
      String(envelope.labels.length),
      ...applied.map(String),
    ]
    for (const l of envelope.labels) args.push(String(l.p), String(l.idx), l.vts.join(','))
    const reply = (await this.#run(this.#main, 'append labels', (r) =>
      APPEND.run(r, [this.#queueKey(origin), this.#stateKey(origin)], args),
    )) as string[]
    return {
      received: reply.slice(1).map(Number),
      applied,
      stable: reply[0] ?? HLC_ZERO,
    }
  }

  async head(origin: number, max: number): Promise<QueuedLabels> {
    const [state, rows] = await Promise.all([
      this.#queueState(origin),
      this.#run(this.#main, 'read labels', (r) =>
        r.xrange(this.#queueKey(origin), '-', '+', 'COUNT', max),
      ),
    ])
    const labels = rows.map(([, fields]) => labelOf(fields))
    return { labels, first: state.popped, stable: state.stable, stableAt: state.stableAt }
  }

  async pop(origin: number, first: number, count: number): Promise<void> {
    await this.#run(this.#main, 'pop labels', (r) =>
      POP.run(r, [this.#queueKey(origin), this.#stateKey(origin)], [String(first), String(count)]),
    )
  }

  async queued(origin: number): Promise<number> {
    return this.#run(this.#main, 'count labels', (r) => r.xlen(this.#queueKey(origin)))
  }

  async waitForLabels(origin: number, _after: number, stable: Hlc, ms: number): Promise<void> {
    // XREAD from the start of the stream returns at once when a label is queued, and otherwise
    // blocks until one is added (popped labels are deleted, so nothing old is returned).
    let blocker = this.#blockers.get(origin)
    if (!blocker) {
      blocker = this.#connect(this.#options.regionUrl, `causal-wait-${origin}`)
      this.#blockers.set(origin, blocker)
      await blocker.connect().catch(() => undefined)
    }
    if (blocker.status !== 'ready') {
      await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 100)))
      return
    }
    const state = await this.#queueState(origin).catch(() => undefined)
    if (state !== undefined && state.stable > stable) return
    await blocker
      .xread(
        'COUNT',
        1,
        'BLOCK',
        Math.max(1, Math.floor(ms)),
        'STREAMS',
        this.#queueKey(origin),
        '0-0',
      )
      .catch(() => undefined)
  }

  // ---- inbox

  async dataCheckpoint(origin: number, p: number): Promise<number> {
    const reply = await this.#run(this.#leader(p), 'inbox checkpoint', (r) =>
      INBOX_TOP.run(r, [this.#inboxKey(origin, p), this.#svKey(p)], [String(origin)]),
    )
    return Number(reply)
  }

  async stash(p: number, envelope: ShipEnvelope): Promise<number> {
    const checked = checkShipEnvelope(envelope, this.#options.regions, this.#options.region)
    const args = [
      String(checked.from),
      String(this.#options.maxInbox ?? 100_000),
      String(checked.epoch),
      String(checked.entries.length),
    ]
    for (const entry of checked.entries) {
      const { origin: _origin, ...rest } = entry
      args.push(String(entry.idx), JSON.stringify(rest))
    }
    const reply = await this.#run(this.#leader(p), 'stash', (r) =>
      STASH.run(r, [this.#inboxKey(checked.from, p), this.#svKey(p)], args),
    )
    return Number(reply)
  }

  async take(
    origin: number,
    p: number,
    afterIdx: number,
    lastIdx: number,
  ): Promise<{ entries: LogEntry[]; epoch: number }> {
    const rows = await this.#run(this.#leader(p), 'take', (r) =>
      r.xrange(this.#inboxKey(origin, p), `${afterIdx + 1}-0`, `${lastIdx}-0`),
    )
    const entries: LogEntry[] = []
    let epoch = 1
    for (const [id, fields] of rows) {
      const idx = parseInt(id, 10)
      if (idx !== afterIdx + entries.length + 1) break
      const f = fieldsOf(fields)
      const json = JSON.parse(f.get('e') ?? 'null') as Record<string, unknown>
      entries.push(checkLogEntry({ ...json, origin }, this.#options.regions))
      epoch = Number(f.get('ep') ?? '1')
    }
    return { entries, epoch }
  }

  async drop(origin: number, p: number, idx: number): Promise<void> {
    await this.#run(this.#leader(p), 'drop', (r) =>
      r.xtrim(this.#inboxKey(origin, p), 'MINID', `${idx + 1}-0`),
    )
  }

  // ---- SiteTime

  async read(): Promise<Hlc[]> {
    const hash = await this.#run(this.#main, 'read SiteTime', (r) => r.hgetall(this.#siteKey()))
    const site = zeroClock(this.#options.regions)
    for (const [d, ts] of Object.entries(hash)) {
      const region = Number(d)
      if (Number.isInteger(region) && region >= 0 && region < site.length && isHlc(ts))
        site[region] = ts
    }
    return site
  }

  async raise(origin: number, ts: Hlc): Promise<void> {
    await this.#run(this.#main, 'raise SiteTime', (r) =>
      RAISE.run(r, [this.#siteKey()], [String(origin), ts]),
    )
  }

  // ---- stabiliser progress

  async #publishProgress(progress: StabiliserProgress): Promise<void> {
    await this.#run(this.#main, 'publish progress', (r) =>
      r.set(`${this.#prefix}progress`, JSON.stringify(progress)),
    )
  }

  async #readProgress(): Promise<StabiliserProgress | undefined> {
    const text = await this.#run(this.#main, 'read progress', (r) =>
      r.get(`${this.#prefix}progress`),
    )
    if (text === null) return undefined
    const value = JSON.parse(text) as Partial<StabiliserProgress>
    if (!isHlc(value.stableTime) || !Array.isArray(value.applied)) return undefined
    return { stableTime: value.stableTime, applied: value.applied.map(Number) }
  }

  /** The stabiliser progress channel of the region. */
  readonly progress: ProgressChannel = {
    publish: (progress) => this.#publishProgress(progress),
    read: () => this.#readProgress(),
  }

  async #queueState(origin: number): Promise<{
    popped: number
    stable: Hlc
    stableAt: number
    received: number[]
  }> {
    const reply = (await this.#run(this.#main, 'queue state', (r) =>
      QUEUE_STATE.run(
        r,
        [this.#stateKey(origin), this.#queueKey(origin)],
        [String(this.#partitions)],
      ),
    )) as string[]
    return {
      popped: Number(reply[0]),
      stable: isHlc(reply[1]) ? reply[1] : HLC_ZERO,
      stableAt: Number(reply[2]),
      received: reply.slice(3).map(Number),
    }
  }

  #applied(origin: number): number[] {
    return this.#options.leaders.map((leader) => leader.sv()[origin] ?? 0)
  }

  #queueKey(origin: number): string {
    return `${this.#prefix}q:${origin}`
  }

  #stateKey(origin: number): string {
    return `${this.#prefix}qs:${origin}`
  }

  #siteKey(): string {
    return `${this.#prefix}site`
  }

  #inboxKey(origin: number, p: number): string {
    return `${this.#keys(p).prefix}inbox:${origin}`
  }

  #svKey(p: number): string {
    return this.#keys(p).sv
  }

  #keys(p: number): ReplicaKeys {
    let keys = this.#replicaKeys[p]
    if (!keys)
      keys = this.#replicaKeys[p] = new ReplicaKeys(
        this.#options.namespace,
        this.#options.region,
        p,
      )
    return keys
  }

  #leader(p: number): Redis {
    const redis = this.#leaders[p]
    if (!redis) throw new RangeError(`no partition ${p}`)
    return redis
  }

  #all(): Redis[] {
    return [this.#main, this.#subscriber, ...new Set(this.#leaders)]
  }

  // Has the server push an invalidation whenever SiteTime changes (as the replicas do for sv).
  async #watch(): Promise<void> {
    try {
      const id = await this.#subscriber.client('ID')
      await this.#subscriber.call(
        'CLIENT',
        'TRACKING',
        'ON',
        'REDIRECT',
        String(id),
        'BCAST',
        'PREFIX',
        this.#siteKey(),
      )
      await this.#subscriber.subscribe(INVALIDATE_CHANNEL)
      this.#options.onSiteTime?.()
    } catch {
      // The next reconnection sets it up again.
    }
  }

  #connect(url: string, role: string, subscriber = false): Redis {
    const redis = new Redis(url, {
      lazyConnect: true,
      connectionName: `causeway:${role}:r${this.#options.region}`,
      connectTimeout: this.#options.connectTimeoutMs ?? 2000,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      ...(subscriber ? { protocol: 2 as const } : {}),
      retryStrategy: (attempt) => Math.min(50 * attempt, this.#options.reconnectMaxDelayMs ?? 1000),
    })
    redis.on('error', () => {})
    return redis
  }

  async #run<T>(client: Redis, operation: string, call: (client: Redis) => Promise<T>): Promise<T> {
    const backend = 'redis causal store'
    if (this.#closed || client.status !== 'ready')
      throw backendError(new Error(`connection is ${client.status}`), backend, operation)
    const timeoutMs = this.#options.commandTimeoutMs ?? 5000
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      return await Promise.race([
        call(client),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no reply in ${timeoutMs} ms`)), timeoutMs)
        }),
      ])
    } catch (error) {
      throw backendError(error, backend, operation)
    } finally {
      clearTimeout(timer)
    }
  }
}

// A label as the queue holds it (written by APPEND from a checked envelope).
function labelOf(fields: string[]): Label {
  const f = fieldsOf(fields)
  return label(Number(f.get('p')), Number(f.get('i')), (f.get('v') ?? '').split(','))
}

function fieldsOf(fields: string[]): Map<string, string> {
  const f = new Map<string, string>()
  for (let i = 0; i + 1 < fields.length; i += 2) f.set(String(fields[i]), String(fields[i + 1]))
  return f
}
