/**
 * A partition replica stored in one `redis-server`: the leader, or a follower whose server is a
 * Redis replica (`REPLICAOF`) of the leader's, so Redis's own replication keeps it up to date.
 *
 * Mutations are Lua scripts (see `replica-scripts.ts`), atomic at the leader and, as Redis 7
 * replicates a script's effects in MULTI/EXEC, at every follower. `sv` is kept in memory from the
 * scripts' replies and from the messages the server publishes when it changes; `waitFor` is woken
 * by them, never by polling.
 *
 * Every script that advances `sv` publishes the new value on the `sv` key's name (`sv-lua.ts`);
 * Redis replicates the `PUBLISH` with the script's effects, so a follower's server publishes it
 * once it has applied them (measured on Redis 7.0, see the follower tests). The message carries
 * the vector, so learning it costs no read. What no script publishes is a full resync, which
 * replaces a follower's data wholesale: client-side-caching invalidation reports that one
 * (`CLIENT TRACKING ... BCAST PREFIX` on a prefix no key has, so a flush is the only push,
 * redirected to the RESP2 subscriber connection on `__redis__:invalidate`), and the replica then
 * reads `sv` again. Neither needs any `notify-keyspace-events` configuration on the server.
 *
 * Connections: one for writes, one for reads, one for the pushes, and, from the first
 * `waitReplicas`, one for `WAIT` (which blocks its connection). None queues commands while the server is away: calls fail at once with
 * `BACKEND_UNAVAILABLE` and the connections reconnect by themselves.
 *
 * A stored value that does not decode quarantines its key (`quarantine.ts`): reads of it fail
 * with `VALUE_QUARANTINED`, the scripts leave it out of every merge, and `repair` rebuilds it from
 * the log (paged scans, then one script that puts it back if nothing changed it meanwhile).
 */
import {
  CausewayError,
  type CommitEntry,
  DvvSet,
  type EpochHistory,
  INITIAL_HISTORY,
  type KeyEntry,
  type ShipEnvelope,
  currentEpoch,
  decodeHistory,
  encodeHistory,
  type LogEntry,
  type SiblingSet,
  type SiblingsEntry,
  isHlc,
  isRegionId,
  keyEntry,
  setOpEntry,
  siblingsEntry,
} from '@causeway/core'
import type { CausalContext, Hlc } from '@causeway/core'
import { Redis } from 'ioredis'
import { AbstractPartitionReplica } from '../abstract-partition-replica.js'
import type {
  AdvanceListener,
  AsOfRead,
  Heartbeat,
  ReplicaManifest,
  ReplicaRead,
  SiblingRead,
  TxCommit,
  Version,
} from '../partition-replica.js'
import {
  IGNORE_QUARANTINE,
  type QuarantineKind,
  type QuarantineSink,
  quarantinedError,
} from '../quarantine.js'
import { decodeLoggedSiblings, decodeSiblingSet, encodeSiblingSet } from '../sibling-set.js'
import { backendError } from './backend-error.js'
import { RedisSets, ingestWithSets } from './redis-sets.js'
import { SET_SCRIPTS } from './set-scripts.js'
import { ReplicaKeys } from './key-layout.js'
import {
  INGEST_FIELDS,
  HEARTBEAT_SCRIPT,
  INGEST_SCRIPT,
  LOAD_SCRIPT,
  READ_SCRIPT,
  READ_SIBLINGS_SCRIPT,
  REPAIR_SCRIPT,
  SCAN_LOG_SCRIPT,
  WRITE_SCRIPT,
  WRITE_SIBLING_SCRIPT,
  stringsOf,
  svOf,
} from './replica-scripts.js'
import { RecentLog } from './recent-log.js'
import { StableVector } from './stable-vector.js'
import { RedisTxVersions, TX_SCRIPTS, commitOfFields } from './redis-tx.js'
import { ADMIT_SCRIPT, CLAIM_SCRIPT, RAISE_SCRIPT, STATE_SCRIPT } from './epoch-scripts.js'
import { parsePublishedSv } from './sv-lua.js'
import {
  DEFAULT_OP_RETENTION_MS,
  OP_WINDOW,
  type OpCheck,
  type OpOutcome,
  type OpRef,
  type ReplicaWrite,
  checkOpWindow,
  checkRetention,
  decodeOpRecord,
  opClientOf,
  opExpired,
  recordOf,
  replayOf,
} from '../op-records.js'
import {
  OpBelowMark,
  OpReplayed,
  type RedisOpArgs,
  WRITE_OP_SCRIPT,
  WRITE_SIBLING_OP_SCRIPT,
  opScriptArgs,
  throwIfReplayed,
} from './op-scripts.js'

/** Options of a {@link RedisPartitionReplica}. */
export interface RedisPartitionReplicaOptions {
  /** The server holding this replica: `redis://[user:password@]host:port[/db]`. */
  url: string
  /** The cluster's (or tenant's) namespace; part of every key, so namespaces never collide. */
  namespace: string
  region: number
  partition: number
  /** Index of this replica in its region; replica 0 starts as leader. */
  replica: number
  /** Number of regions D: the length of `sv`. */
  regions: number
  /**
   * How long one backend call may take before it fails with `BACKEND_UNAVAILABLE`, in ms. A write
   * that times out may still have been applied.
   * @default 5000
   */
  commandTimeoutMs?: number
  /**
   * How long to wait for a TCP connection, in ms.
   * @default 2000
   */
  connectTimeoutMs?: number
  /**
   * Upper bound of the delay between reconnection attempts, in ms (attempts back off from 50 ms).
   * @default 1000
   */
  reconnectMaxDelayMs?: number
  /**
   * The physical clock the HLC advances from, in ms. Tests inject one to step it backwards.
   * @default the Redis server's `TIME`, so every gateway writing to a leader shares one clock
   */
  now?: (() => number) | undefined
  /**
   * Where keys whose stored value does not decode, and entries whose sibling set does not, are
   * reported (`quarantine.ts`).
   * @default ignores them
   */
  quarantine?: QuarantineSink | undefined
  /**
   * How long a client of operation ids (`writeOnce`) may be idle before its records are dropped
   * (its mark stays: `op-records.ts`), in ms: the `PEXPIRE` of its records, so Redis itself
   * drops them.
   * @default 24 hours
   */
  opRetentionMs?: number
  /** How many operation records are kept per client above its mark. @default OP_WINDOW (1024) */
  opWindow?: number
  /**
   * Writes wait for a leader's claim: this replica takes none until {@link
   * RedisPartitionReplica.lead} names the server process that claimed the partition's current
   * epoch (the Redis deployment's failover does, `cluster/redis-failover.ts`), and none after
   * {@link RedisPartitionReplica.resign}. Without it (a replica used on its own) it writes
   * whenever its server takes writes.
   * @default false
   */
  supervised?: boolean
  /**
   * Told when a write found that the server no longer holds the claim this replica wrote under
   * (supervised replicas; the replica stops writing until `lead` again).
   * @default nothing
   */
  onClaimLost?: () => void
  /**
   * How many indexes a leader reserves at a time above the ones it issued (`epoch-scripts.ts`):
   * a new leader's epoch starts above the reservation, so at most this many indexes go unused per
   * failover.
   * @default 1000
   */
  ceilingStep?: number
  /**
   * How many of the partition's other replicas must have a reservation before writes may use
   * it (a majority of the replicas, the leader being one): what makes the reservation survive
   * the loss of the leader.
   * @default 0
   */
  ceilingReplicas?: number
}

interface Connections {
  writer: Redis
  reader: Redis
  subscriber: Redis
  /** For `WAIT`, made on first use (followers and eventual-only clusters never need it). */
  waiter?: { redis: Redis; connecting: Promise<void> | undefined }
}

const noop = () => {}
// Where the server pushes invalidations for a connection that redirects them (RESP2).
const INVALIDATE_CHANNEL = '__redis__:invalidate'
// A push-triggered re-read that fails (e.g. -LOADING while a replica loads its leader's data
// after a full resync) is retried with backoff: 50 ms doubling to 1 s, 20 times (~15 s).
const CATCH_UP_ATTEMPTS = 20
// Log entries a repair's scan reads per script call: each call blocks the server that long.
const REPAIR_PAGE = 1000
const US = '\u001f'

const MANIFEST: ReplicaManifest = Object.freeze({
  siblings: true,
  sets: true,
  multiVersionReads: true,
  // Several gateway processes write one leader: a view of `sv` may be a push behind.
  refresh: true,
  opRecords: true,
})

/** One partition replica on Redis. See the module comment. */
export class RedisPartitionReplica extends AbstractPartitionReplica {
  readonly backend: string
  readonly supports = MANIFEST
  /** The Redis key names of this replica. */
  readonly keys: ReplicaKeys
  /** The sets of this partition (`redis-sets.ts`). */
  protected readonly _sets: RedisSets
  /** The versions of transactional keys (`redis-tx.ts`). */
  readonly #tx: RedisTxVersions

  readonly #options: Required<
    Omit<RedisPartitionReplicaOptions, 'now' | 'quarantine' | 'supervised' | 'onClaimLost'>
  >
  readonly #supervised: boolean
  readonly #onClaimLost: () => void
  readonly #quarantine: QuarantineSink
  /** Keys this replica reported quarantined and has not seen whole again. */
  readonly #quarantinedKeys = new Set<string>()
  readonly #now: (() => number) | undefined
  readonly #db: number
  #connections: Connections | undefined
  #stable: StableVector
  /** Each origin's epoch history as this replica's store has it. */
  #histories: EpochHistory[]
  /** The run id of the server process whose claim writes go under (supervised replicas). */
  #leading: string | undefined
  /** What writes may take: the store's `ceiling` as last read or raised (Infinity: none). */
  #ceiling = Infinity
  #raising: Promise<void> | undefined
  #refreshing: Promise<void> | undefined
  #refreshAgain = false
  /** The next refresh replaces the view even where it is lower. */
  #resetNext = false
  readonly #inFlight = new Set<Promise<unknown>>()
  /** The `WAIT` not sent yet for each (replicas, timeout), which calls join (`waitReplicas`). */
  readonly #nextWaits = new Map<string, Promise<number>>()
  /** The last `WAIT` sent or queued: the next one goes after it. */
  #waitTail: Promise<unknown> = Promise.resolve()
  /** This replica's latest own writes, for the shipper's reads (`recent-log.ts`). */
  readonly #recent = new RecentLog()
  #catchUpTimer: ReturnType<typeof setTimeout> | undefined

  constructor(options: RedisPartitionReplicaOptions) {
    super(options)
    const { quarantine, supervised, onClaimLost, ...rest } = options
    this.#quarantine = quarantine ?? IGNORE_QUARANTINE
    this.#supervised = supervised ?? false
    this.#onClaimLost = onClaimLost ?? noop
    this.#options = {
      commandTimeoutMs: 5000,
      connectTimeoutMs: 2000,
      reconnectMaxDelayMs: 1000,
      opRetentionMs: DEFAULT_OP_RETENTION_MS,
      opWindow: OP_WINDOW,
      ceilingStep: 1000,
      ceilingReplicas: 0,
      ...rest,
    }
    if (!Number.isSafeInteger(this.#options.ceilingStep) || this.#options.ceilingStep < 1)
      throw new TypeError('ceilingStep must be a positive integer')
    this.#histories = Array.from({ length: options.regions }, () => INITIAL_HISTORY)
    checkRetention(this.#options.opRetentionMs)
    checkOpWindow(this.#options.opWindow)
    const url = new URL(options.url)
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
      throw new TypeError(`not a redis:// URL: ${options.url}`)
    this.#db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0
    if (!Number.isInteger(this.#db) || this.#db < 0)
      throw new TypeError(`bad database in ${options.url}`)
    // Never show credentials in status pages or errors.
    this.backend = `${url.protocol}//${url.host}${this.#db === 0 ? '' : `/${this.#db}`}`
    this.keys = new ReplicaKeys(options.namespace, options.region, options.partition)
    this.#now = options.now
    this.#stable = new StableVector(options.regions)
    this._sets = new RedisSets(this, {
      region: this.region,
      regions: options.regions,
      prefix: this.keys.prefix,
      metaKey: this.keys.meta,
      svKey: this.keys.sv,
      logKey: (origin) => this.keys.log(origin),
      epoch: () => this.epoch(),
      now: () => (this.#now ? String(Math.floor(this.#now())) : ''),
      leaderToken: () => this.#token(),
      writer: () => this.#live().writer,
      reader: () => this.#live().reader,
      run: (client, operation, call) => this.#run(client, operation, call),
      advance: (sv) => this.#stable.advance(sv),
      written: (entry, sv) => this.#written(entry, sv),
    })
    this.#tx = new RedisTxVersions({
      region: this.region,
      regions: options.regions,
      prefix: this.keys.prefix,
      metaKey: this.keys.meta,
      svKey: this.keys.sv,
      logKey: (origin) => this.keys.log(origin),
      now: () => (this.#now ? String(Math.floor(this.#now())) : ''),
      writer: () => this.#live().writer,
      reader: () => this.#live().reader,
      run: (client, operation, call) => this.#run(client, operation, call),
      advance: (sv) => this.#stable.advance(sv),
      readLog: (origin, afterIdx, limit) => this._readLog(origin, afterIdx, limit),
    })
  }

  /** True while every connection to the server is ready. */
  override get available(): boolean {
    const c = this.#connections
    // ioredis keeps `ready` until it handles the socket's close; an ended socket tells earlier.
    return (
      c !== undefined &&
      [c.writer, c.reader, c.subscriber].every((r) => r.status === 'ready' && r.stream.writable)
    )
  }

  protected async _open(): Promise<void> {
    if (this.#connections) return
    const connections: Connections = {
      writer: this.#connect('writer'),
      reader: this.#connect('reader'),
      subscriber: this.#connect('subscriber'),
    }
    const all = [connections.writer, connections.reader, connections.subscriber]
    try {
      await Promise.all(all.map((r) => r.connect()))
      this.#connections = connections
      if (this.#stable.closed) this.#stable = new StableVector(this.#options.regions)
      connections.subscriber.on('message', (channel: string, message: unknown) => {
        if (channel === this.keys.sv) {
          const sv =
            typeof message === 'string'
              ? parsePublishedSv(message, this.#options.regions)
              : undefined
          if (sv) this.#stable.advance(sv)
          else this.#catchUp()
        } else if (channel === INVALIDATE_CHANNEL)
          // No key named: the server flushed its data (a full resynchronisation replaced it), so
          // what it holds now may be less than it held.
          this.#catchUp(0, message === null || message === '')
      })
      await this.#watch(connections.subscriber)
      await this.#loadScripts(connections.reader)
      this.#takeState(await this.#readState(connections.reader, 'open'))
      await this.#tx.load(connections.reader)
    } catch (error) {
      this.#connections = undefined
      for (const r of all) r.disconnect()
      throw backendError(error, this.backend, 'open')
    }
    // After a reconnection (e.g. the server restarted): the server forgot the tracking and the
    // scripts, and pushes were missed meanwhile, so set them up again and re-read `sv`.
    const { reader, subscriber, writer } = connections
    subscriber.on('ready', () => void this.#watch(subscriber).then(() => this.#catchUp(), noop))
    // The server may have restarted and lost the last writes (appendfsync everysec).
    writer.on('ready', () => this.#recent.clear())
    reader.on('ready', () => {
      this.#loadScripts(reader).catch(noop)
      // The server may be another process now (it restarted, perhaps with less, or wiped): its
      // view goes, and so does the claim writes went under until the failover looks again.
      if (this.#leading !== undefined) {
        this.#leading = undefined
        this.#onClaimLost()
      }
      this.#catchUp(0, true)
    })
  }

  protected async _close(): Promise<void> {
    const c = this.#connections
    // New calls fail from here on; calls already sent still get their replies.
    this.#connections = undefined
    this.#stable.close()
    this.#recent.clear()
    clearTimeout(this.#catchUpTimer)
    if (!c) return
    await Promise.allSettled([...this.#inFlight])
    const all = [c.writer, c.reader, c.subscriber]
    if (c.waiter) all.push(c.waiter.redis)
    await Promise.all(
      all.map(async (r) => {
        r.removeAllListeners('ready')
        r.removeAllListeners('message')
        // QUIT lets replies in flight arrive; a server that is away or hung gets a plain
        // disconnect.
        if (r.status === 'ready') {
          let timer: ReturnType<typeof setTimeout> | undefined
          await Promise.race([
            r.quit().catch(noop),
            new Promise((resolve) => (timer = setTimeout(resolve, this.#options.commandTimeoutMs))),
          ])
          clearTimeout(timer)
        }
        r.disconnect()
      }),
    )
  }

  sv(): number[] {
    return this.#stable.current()
  }

  epoch(): number {
    return currentEpoch(this.#histories[this.region]!)
  }

  override epochHistory(origin: number): EpochHistory {
    return this.#histories[origin] ?? INITIAL_HISTORY
  }

  /**
   * Supervised replicas: from now on, writes go to this server under the claim of its process
   * `runId` (the one `claim` recorded). The failover calls it once the claim is made.
   */
  lead(runId: string): void {
    if (this.#leading !== runId) this.#ceiling = -Infinity // read again under the new claim
    this.#leading = runId
  }

  /** Supervised replicas: no more writes here (another server leads, or none does yet). */
  resign(): void {
    this.#leading = undefined
  }

  /** Whether writes go here now (always true unsupervised). */
  get leading(): boolean {
    return !this.#supervised || this.#leading !== undefined
  }

  /**
   * Claims the leadership of the partition in this region for the server process `runId`
   * (address `addr`): the start of a new epoch above `minFirst - 1` and after `minEpoch`, unless
   * this process holds the claim already (`epoch-scripts.ts`, CLAIM_SCRIPT). Resolves to the
   * region's history after it. The caller makes sure the server is not behind the partition's
   * other replicas.
   */
  async claim(
    runId: string,
    addr: string,
    minEpoch: number,
    minFirst: number,
  ): Promise<EpochHistory> {
    const { writer } = this.#live()
    const reply = stringsOf(
      await this.#run(writer, 'claim', (r) =>
        CLAIM_SCRIPT.run(
          r,
          [this.keys.meta, this.keys.sv, this.keys.epochs],
          [String(this.region), runId, addr, String(minEpoch), String(minFirst)],
        ),
      ),
      2,
    )
    await this.#refresh()
    return decodeHistory(reply[1]!)
  }

  /**
   * The leader's claim and reservation as this replica's store has them (any replica: a
   * follower's is its leader's, as replicated so far): what a failover compares.
   */
  async claimState(): Promise<ClaimState> {
    const { reader } = this.#live()
    const reply = await this.#readState(reader, 'state')
    this.#takeState(reply)
    return {
      sv: reply.sv,
      history: reply.histories[this.region]!,
      epoch: reply.claimed ? currentEpoch(reply.histories[this.region]!) : 0,
      leader: reply.leader,
      leaderAddr: reply.leaderAddr,
      reserved: Math.max(reply.reserved, reply.ceiling === Infinity ? 0 : reply.ceiling),
    }
  }

  /**
   * Entries of this region's own log that another region received before this replica's
   * server took over as leader (recovered at a failover): appended in order from
   * `sv[region] + 1`, as a follower applies its leader's.
   */
  recover(entries: readonly LogEntry[]): Promise<void> {
    return this.apply(entries)
  }

  protected async _write(write: ReplicaWrite, dt: Hlc): Promise<LogEntry> {
    return this.#writeOf(write, dt, undefined)
  }

  // One checked write; with `op`, its script also records the operation (`writeOnce`).
  #writeOf(write: ReplicaWrite, dt: Hlc, op: RedisOpArgs | undefined): Promise<LogEntry> {
    return this.#fenced(
      () => this.#writeOnceOf(write, dt, op),
      (entry) => entry.idx,
    )
  }

  // A leader write under this process's claim (`LEADER_CHECK_LUA`): one past the reserved ceiling
  // reserves more and is tried once more; a lost claim stops writes until the failover looks
  // again. `lastIdx`: the highest index the write took.
  async #fenced<T>(write: () => Promise<T>, lastIdx: (written: T) => number): Promise<T> {
    this.#checkLeading()
    let written: T
    try {
      try {
        if (this.#ceiling === -Infinity) await this.#raiseCeiling()
        written = await write()
      } catch (error) {
        if (refusal(error) !== 'CW_CEILING') throw error
        await this.#raiseCeiling()
        written = await write()
      }
    } catch (error) {
      // The server no longer holds the claim this process wrote under (it restarted, or another
      // claim replaced it): no more writes here until the failover has looked again.
      if (refusal(error) === 'CW_NOT_LEADER' && this.#leading !== undefined) {
        this.#leading = undefined
        this.#onClaimLost()
      }
      throw error
    }
    if (lastIdx(written) > this.#ceiling - this.#options.ceilingStep / 2)
      this.#raiseCeiling().catch(noop) // ahead of need: the next writes do not wait for it
    return written
  }

  #writeOnceOf(write: ReplicaWrite, dt: Hlc, op: RedisOpArgs | undefined): Promise<LogEntry> {
    if (write.kind === 'kv') return this.#writeKey(write.key, write.value, dt, op)
    if (write.kind === 'sibling')
      return this.#writeSibling(write.key, write.value, dt, write.context, op)
    return this._sets.writeRecorded(write.name, write.write, dt, op)
  }

  // The claim a write goes under ('' unsupervised: the scripts then check none).
  #token(): string {
    if (!this.#supervised) return ''
    this.#checkLeading()
    return this.#leading!
  }

  #checkLeading(): void {
    if (this.leading) return
    throw new CausewayError(
      'BACKEND_UNAVAILABLE',
      `partition ${this.partition} of region ${this.region} has no leader on ${this.backend} now (a failover is under way); retry shortly`,
      {
        region: this.region,
        partition: this.partition,
        backend: this.backend,
        reason: 'not-leader',
      },
    )
  }

  /**
   * Moves the store's ceiling up by a step: reserves it, waits until `ceilingReplicas` replicas
   * have the reservation (`WAIT`), then lets writes use it. Concurrent calls share one. A store no
   * leader ever claimed (unsupervised use) has no ceiling and nothing is done.
   */
  #raiseCeiling(): Promise<void> {
    this.#raising ??= (async () => {
      try {
        const runId = this.#leading
        const state = await this.#readState(this.#live().reader, 'ceiling')
        this.#takeState(state)
        if (runId === undefined || state.leader === '') {
          this.#ceiling = state.ceiling
          return
        }
        const target =
          Math.max(state.sv[this.region] ?? 0, state.ceiling) + this.#options.ceilingStep
        const { writer } = this.#live()
        await this.#run(writer, 'ceiling', (r) =>
          RAISE_SCRIPT.run(r, [this.keys.meta], ['reserve', String(target), runId]),
        )
        const needed = this.#options.ceilingReplicas
        if (needed > 0) {
          const acked = await this.waitReplicas(needed, this.#options.commandTimeoutMs)
          if (acked < needed)
            throw new CausewayError(
              'BACKEND_UNAVAILABLE',
              `only ${acked} of the ${needed} replicas needed confirmed the index reservation of partition ${this.partition}; writes wait`,
              { region: this.region, partition: this.partition, backend: this.backend },
            )
        }
        const raised = stringsOf(
          await this.#run(writer, 'ceiling', (r) =>
            RAISE_SCRIPT.run(r, [this.keys.meta], ['confirm', String(target), runId]),
          ),
          2,
        )
        this.#ceiling = Number(raised[0])
      } finally {
        this.#raising = undefined
      }
    })()
    return this.#raising
  }

  async #writeKey(
    key: string,
    value: string | undefined,
    dt: Hlc,
    op: RedisOpArgs | undefined,
  ): Promise<KeyEntry> {
    const versionKey = this.keys.version(key)
    const { writer } = this.#live()
    const region = String(this.region)
    const extra = op === undefined ? { keys: [], args: [] } : opScriptArgs(op)
    const result = await this.#run(writer, 'write', (r) =>
      (op === undefined ? WRITE_SCRIPT : WRITE_OP_SCRIPT).run(
        r,
        [this.keys.meta, this.keys.sv, this.keys.log(this.region), versionKey, ...extra.keys],
        [
          region,
          String(this.#options.regions),
          dt,
          key,
          value === undefined ? '0' : '1',
          value ?? '',
          this.#now ? String(Math.floor(this.#now())) : '',
          this.#token(),
          ...extra.args,
        ],
      ),
    )
    if (op !== undefined) throwIfReplayed(result as unknown[])
    const reply = stringsOf(result, 3 + this.#options.regions)
    const head = {
      origin: this.region,
      idx: Number(reply[0]),
      key,
      ts: reply[1]!,
      at: Number(reply[2]),
    }
    const entry = keyEntry(head, value)
    this.#written(entry, svOf(reply, 3, this.#options.regions))
    this.#whole(key) // the script replaced a version that did not decode, if there was one
    return entry
  }

  async #writeSibling(
    key: string,
    value: string | undefined,
    dt: Hlc,
    context: CausalContext,
    op: RedisOpArgs | undefined,
  ): Promise<SiblingsEntry> {
    try {
      return await this.#writeSiblingOnce(key, value, dt, context, op)
    } catch (error) {
      // The stored set does not decode: rebuild it from the log, then write once more.
      if (!(error instanceof CausewayError) || error.code !== 'VALUE_QUARANTINED') throw error
      this.#reportQuarantined(key, 'siblings', error)
      await this.repair(key)
      return this.#writeSiblingOnce(key, value, dt, context, op)
    }
  }

  async #writeSiblingOnce(
    key: string,
    value: string | undefined,
    dt: Hlc,
    context: CausalContext,
    op: RedisOpArgs | undefined,
  ): Promise<SiblingsEntry> {
    const setKey = this.keys.siblings(key)
    const { writer } = this.#live()
    const region = String(this.region)
    const extra = op === undefined ? { keys: [], args: [] } : opScriptArgs(op)
    const result = await this.#run(writer, 'write', (r) =>
      (op === undefined ? WRITE_SIBLING_SCRIPT : WRITE_SIBLING_OP_SCRIPT).run(
        r,
        [this.keys.meta, this.keys.sv, this.keys.log(this.region), setKey, ...extra.keys],
        [
          region,
          String(this.#options.regions),
          dt,
          key,
          value === undefined ? '0' : '1',
          value ?? '',
          this.#now ? String(Math.floor(this.#now())) : '',
          // The context as a sibling set without siblings (see replica-scripts.ts).
          context.map(([actor, counter]) => `${actor}\u001f${counter}`).join('\u001e'),
          this.#token(),
          ...extra.args,
        ],
      ),
    )
    if (op !== undefined) throwIfReplayed(result as unknown[])
    const reply = stringsOf(result, 4 + this.#options.regions)
    const head = {
      origin: this.region,
      idx: Number(reply[0]),
      key,
      ts: reply[1]!,
      at: Number(reply[2]),
    }
    const entry = siblingsEntry(head, reply[3]!)
    this.#written(entry, svOf(reply, 4, this.#options.regions))
    return entry
  }

  protected async _writeOnce(
    op: OpRef,
    write: ReplicaWrite,
    dt: Hlc,
    check: OpCheck | undefined,
  ): Promise<OpOutcome> {
    const { tenant, client, seq } = opClientOf(op)
    const keys = this.keys.opClient(tenant, client)
    // A look first, so a replay runs no check and plans no set write; the script looks again,
    // atomically with the write, so concurrent duplicates (any gateway) still apply once.
    const { writer } = this.#live()
    const [stored, low] = await this.#run(writer, 'op', async (r) =>
      Promise.all([r.hget(keys[1], String(seq)), r.hget(keys[0], 'low')]),
    )
    const found = stored === null ? undefined : decodeOpRecord(stored)
    if (found !== undefined) return replayOf(op, found)
    if (low !== null && seq <= Number(low)) throw opExpired(op, Number(low))
    await check?.()
    const args: RedisOpArgs = {
      keys,
      fingerprint: op.fingerprint,
      seq,
      retentionMs: this.#options.opRetentionMs,
      window: this.#options.opWindow,
    }
    try {
      const entry = await this.#writeOf(write, dt, args)
      return { entry, record: recordOf(entry, op.fingerprint, this.epoch(), this.region) }
    } catch (error) {
      if (error instanceof OpReplayed) return replayOf(op, error.record)
      if (error instanceof OpBelowMark) throw opExpired(op, error.low)
      throw error
    }
  }

  /** How many operation records this replica's server holds of the client of `op` (for tests). */
  async opRecordCount(op: Pick<OpRef, 'id' | 'tenant'>): Promise<number> {
    const { tenant, client } = opClientOf({ ...op, namespace: '', fingerprint: 'x' })
    const { writer } = this.#live()
    return this.#run(writer, 'op', (r) => r.hlen(this.keys.opClient(tenant, client)[1]))
  }

  /**
   * Before a shipped envelope's entries are ingested: its history and the entries this replica
   * already holds must agree with what it has (`epoch-scripts.ts`, ADMIT_SCRIPT); an envelope
   * starting a new epoch above a lost range moves `sv[from]` past it.
   */
  protected override async _admitShipped(envelope: ShipEnvelope): Promise<void> {
    const { writer } = this.#live()
    const args = [
      String(envelope.from),
      envelope.epochs === undefined ? '' : encodeHistory(envelope.epochs),
      String(envelope.first),
    ]
    for (const e of envelope.entries) args.push(String(e.idx), e.ts)
    const reply = stringsOf(
      await this.#run(writer, 'receive', (r) =>
        ADMIT_SCRIPT.run(
          r,
          [this.keys.sv, this.keys.epochs, this.keys.log(envelope.from), this.keys.diverged],
          args,
        ),
      ),
      3,
    )
    if (envelope.epochs !== undefined && reply[0] === 'ok')
      this.#histories[envelope.from] = envelope.epochs
    const sv = this.sv()
    sv[envelope.from] = Math.max(sv[envelope.from] ?? 0, Number(reply[2]))
    this.#stable.advance(sv)
    if (reply[0] === 'diverged')
      throw new CausewayError(
        'SHIPPING_DIVERGED',
        `region ${this.region} refused region ${envelope.from}'s entries of partition ${this.partition}: ${reply[1]}`,
        { region: this.region, partition: this.partition, origin: envelope.from, reason: reply[1] },
      )
  }

  /** What this replica noted of each origin whose envelopes disagreed with it (`sv:diverged`). */
  async divergence(): Promise<Map<number, string>> {
    const { reader } = this.#live()
    const all = await this.#run(reader, 'state', (r) => r.hgetall(this.keys.diverged))
    return new Map(Object.entries(all).map(([d, note]) => [Number(d), note]))
  }

  protected async _applyShipped(origin: number, entries: readonly LogEntry[]): Promise<number> {
    const sv = await this.#ingestAny('receive', 'batch', entries)
    return sv[origin] ?? 0
  }

  protected async _applyReplicated(entries: readonly LogEntry[]): Promise<void> {
    await this.#ingestAny('apply', 'per-origin', entries)
  }

  // Entries of any kind: commit entries through the transactions' script, set writes through the
  // sets', the rest through the ingest script, in order.
  #ingestAny(
    operation: string,
    mode: 'batch' | 'per-origin',
    entries: readonly LogEntry[],
  ): Promise<number[]> {
    const others = (run: readonly LogEntry[]) =>
      run.some((e) => e.kind === 'set-op')
        ? this.#ingestWithSets(operation, mode, run)
        : this.#ingest(operation, mode, run)
    if (!entries.some((e) => e.kind === 'commit')) return others(entries)
    return this.#tx.ingest(entries, mode, others, this.sv())
  }

  override committedTid(): number {
    return this.#tx.committedTid
  }

  override txFloor(): number {
    return this.#tx.floor
  }

  override visibleAt(need: readonly number[]): Promise<number | undefined> {
    return this.#tx.visibleAt(need)
  }

  protected override _commit(commits: readonly TxCommit[]): Promise<CommitEntry[]> {
    return this.#fenced(
      async () => {
        // A round's commits take one index each: room for all of them first (one raise moves
        // the ceiling by ceilingStep; the script refuses a batch that passes it, whole).
        for (let raises = 0; raises < 64; raises++) {
          const room = this.#ceiling - (this.sv()[this.region] ?? 0)
          if (this.#ceiling !== -Infinity && room >= commits.length) break
          if (!this.#supervised || this.#leading === undefined) break
          await this.#raiseCeiling()
        }
        return this.#tx.commit(commits, this.#token())
      },
      (entries) => Math.max(0, ...entries.map((e) => e.idx)),
    )
  }

  protected override _readAsOf(
    tid: number,
    keys: readonly string[],
    values: boolean,
  ): Promise<AsOfRead> {
    return this.#tx.readAsOf(tid, keys, values)
  }

  protected override _collectGarbage(floor: number): Promise<void> {
    return this.#tx.collect(floor)
  }

  // Entries with set writes among them: set entries go through the set scripts, one by one.
  #ingestWithSets(
    operation: string,
    mode: 'batch' | 'per-origin',
    entries: readonly LogEntry[],
  ): Promise<number[]> {
    const others = (run: readonly LogEntry[]) => this.#ingest(operation, mode, run)
    return ingestWithSets(this._sets, entries, mode, others, this.sv())
  }

  protected async _read(key: string): Promise<ReplicaRead> {
    const versionKey = this.keys.version(key)
    const { reader } = this.#live()
    const regions = this.#options.regions
    const result = await this.#run(reader, 'read', (r) =>
      READ_SCRIPT.run(r, [versionKey, this.keys.sv], [String(regions)]),
    )
    const reply = stringsOf(result, 5 + regions)
    const sv = svOf(reply, 5, regions)
    this.#stable.advance(sv)
    let version: Version | undefined
    if (reply[0] === '1') {
      const dc = /^(0|[1-9][0-9]{0,2})$/.test(reply[2]!) ? Number(reply[2]) : -1
      if (!isHlc(reply[1]) || !isRegionId(dc, regions) || (reply[3] === '1' && reply[4] === ''))
        throw this.#quarantined(
          key,
          'version',
          `malformed version (ts ${JSON.stringify(reply[1]!.slice(0, 24))}, dc ${JSON.stringify(reply[2]!.slice(0, 8))})`,
        )
      version = { ts: reply[1], dc }
      if (reply[3] === '1') version.value = reply[4] ?? ''
    }
    this.#whole(key)
    return { version, sv }
  }

  protected async _readSiblings(key: string): Promise<SiblingRead> {
    const setKey = this.keys.siblings(key)
    const { reader } = this.#live()
    const regions = this.#options.regions
    const result = await this.#run(reader, 'read', (r) =>
      READ_SIBLINGS_SCRIPT.run(r, [setKey, this.keys.sv], [String(regions)]),
    )
    const reply = stringsOf(result, 1 + regions)
    const sv = svOf(reply, 1, regions)
    this.#stable.advance(sv)
    let siblings: SiblingSet
    try {
      siblings = decodeSiblingSet(reply[0]!, regions)
    } catch (error) {
      throw this.#quarantined(key, 'siblings', error)
    }
    this.#whole(key)
    return { siblings, sv }
  }

  protected async _repair(key: string): Promise<boolean> {
    const setKey = this.keys.siblings(key)
    const versionKey = this.keys.version(key)
    // A follower's store is its leader's: the leader's repair reaches it by replication.
    if ((await this.serverRole()) !== 'master') return false
    const { writer } = this.#live()
    const regions = this.#options.regions
    const [setText, fields] = await this.#run(writer, 'repair', (r) =>
      Promise.all([r.get(setKey), r.hmget(versionKey, 'ts', 'dc', 'v')]),
    )
    let repaired = false
    if (setText !== null && !decodes(() => decodeSiblingSet(setText, regions)))
      repaired = (await this.#rebuild('s', key, setKey, setText)) || repaired
    const [ts, dc, v] = fields
    if (
      (ts !== null || dc !== null || v !== null) &&
      (!isHlc(ts) || !/^(0|[1-9][0-9]{0,2})$/.test(dc ?? '') || Number(dc) >= regions || v === '')
    )
      repaired =
        (await this.#rebuild('v', key, versionKey, [ts ?? '', dc ?? '', v ?? ''].join(US))) ||
        repaired
    if (repaired) this.#whole(key, true)
    return repaired
  }

  /**
   * Rebuilds one stored form of `key` from the log (`quarantine.ts`): pages through every
   * origin's log for the key's entries, then has {@link REPAIR_SCRIPT} store the result if the
   * stored value is still `seen`, with the entries logged since the scan merged in.
   */
  async #rebuild(kind: 's' | 'v', key: string, storeKey: string, seen: string): Promise<boolean> {
    const { reader, writer } = this.#live()
    const regions = this.#options.regions
    const logged: SiblingSet[] = []
    let best: { ts: Hlc; dc: number; value: string | undefined } | undefined
    const scanned: string[] = []
    for (let d = 0; d < regions; d++) {
      let after = '0'
      for (;;) {
        const reply = stringsOf(
          await this.#run(reader, 'repair', (r) =>
            SCAN_LOG_SCRIPT.run(r, [this.keys.log(d)], [key, after, String(REPAIR_PAGE)]),
          ),
          2,
        )
        after = reply[0]!
        for (let i = 2; i + 3 < reply.length; i += 4) {
          const [idx, ts, what, text] = reply.slice(i, i + 4) as [string, Hlc, string, string]
          if (what === 's') {
            const entry = { origin: d, idx: Number(idx), ts, siblings: text }
            try {
              logged.push(decodeLoggedSiblings(entry, regions))
            } catch {
              // refused when it was written, or damaged since: left out
            }
          } else if ((what === 'v' || what === 't') && isHlc(ts)) {
            if (best === undefined || ts > best.ts || (ts === best.ts && d > best.dc))
              best = { ts, dc: d, value: what === 'v' ? text : undefined }
          }
        }
        if (reply[1] !== '1') break
      }
      scanned.push(after)
    }
    let rebuilt = ''
    if (kind === 's') rebuilt = encodeSiblingSet(DvvSet.sync(logged))
    else if (best !== undefined)
      rebuilt = [best.value === undefined ? '0' : '1', best.ts, best.dc, best.value ?? ''].join(US)
    const keys = [storeKey, ...Array.from({ length: regions }, (_, d) => this.keys.log(d))]
    const result = await this.#run(writer, 'repair', (r) =>
      REPAIR_SCRIPT.run(r, keys, [kind, String(regions), key, seen, rebuilt, ...scanned]),
    )
    return result === 'repaired'
  }

  // Reports a key whose stored value does not decode, asks for its repair, and returns the error
  // the read fails with.
  #quarantined(key: string, kind: QuarantineKind, cause: unknown): CausewayError {
    const event = this.#reportQuarantined(key, kind, cause)
    this.repair(key).catch(() => {}) // a server that went away: the next read asks again
    return quarantinedError(event)
  }

  #reportQuarantined(key: string, kind: QuarantineKind, cause: unknown) {
    const event = {
      region: this.region,
      partition: this.partition,
      replica: this.replica,
      key,
      kind,
      reason: cause instanceof Error ? cause.message : String(cause),
    }
    this.#quarantinedKeys.add(key)
    this.#quarantine.quarantined(event)
    return event
  }

  // `key` decoded (or was rebuilt) here: if it was reported quarantined, it is whole again.
  #whole(key: string, rebuilt = false): void {
    if (!this.#quarantinedKeys.delete(key) && !rebuilt) return
    this.#quarantine.repaired({
      region: this.region,
      partition: this.partition,
      replica: this.replica,
      key,
    })
  }

  /**
   * An own write's entry and the `sv` its script answered: remembered first, so a listener the
   * advance wakes (the shipper) reads it from memory.
   */
  #written(entry: LogEntry, sv: number[]): void {
    this.#recent.add(entry)
    this.#stable.advance(sv)
  }

  protected async _readLog(origin: number, afterIdx: number, limit: number): Promise<LogEntry[]> {
    const { reader } = this.#live()
    // While the server is away, reads fail like every call (it may come back without them).
    const recent = this.available ? this.#recent.after(origin, afterIdx, limit) : undefined
    if (recent !== undefined) return recent
    const rows = await this.#run(reader, 'readLog', (r) =>
      r.xrange(this.keys.log(origin), `${afterIdx + 1}-0`, '+', 'COUNT', limit),
    )
    return rows.map(([id, fields]) => {
      const f = new Map<string, string>()
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(String(fields[i]), String(fields[i + 1]))
      const head = {
        origin,
        idx: parseInt(id, 10),
        key: f.get('k') ?? '',
        ts: f.get('ts') ?? '',
        at: Number(f.get('at') ?? 0),
      }
      const commit = commitOfFields(head, f)
      if (commit !== undefined) return commit
      const siblings = f.get('s')
      if (siblings !== undefined) return siblingsEntry(head, siblings)
      const setDelta = f.get('b')
      if (setDelta !== undefined) return setOpEntry(head, setDelta)
      return keyEntry(head, f.get('v'))
    })
  }

  protected async _heartbeat(): Promise<Heartbeat> {
    const { writer } = this.#live()
    const now = this.#now ? String(Math.floor(this.#now())) : ''
    const reply = await this.#run(writer, 'heartbeat', (r) =>
      HEARTBEAT_SCRIPT.run(r, [this.keys.meta, this.keys.sv], [now, String(this.region)]),
    )
    const [ts, idx] = reply as [string, string]
    return { ts, idx: Number(idx) }
  }

  protected _waitCovered(need: readonly number[], deadline: number): Promise<boolean> {
    if (!this.#connections) return Promise.resolve(false)
    const waiting = this.#stable.wait(need, deadline)
    // One look at the stored `sv` as insurance against a push lost while a connection was being
    // re-established; every later advance arrives as a push.
    if (!this.#stable.covers(need)) this.#refresh().catch(noop)
    return waiting
  }

  onAdvance(listener: AdvanceListener): () => void {
    return this.#stable.onAdvance(listener)
  }

  /**
   * The majority wait (`awaitReplicated`): the leader's server counts the followers (Redis
   * replicas) that have its writes, with `WAIT`, rather than the followers' `sv` as this process
   * sees it.
   */
  protected override _awaitReplicated(
    _idx: number,
    _followers: readonly AbstractPartitionReplica[],
    needed: number,
    timeoutMs: number,
  ): Promise<number> {
    return this.waitReplicas(needed, timeoutMs)
  }

  /**
   * Waits until `replicas` Redis replicas have received every write this replica acknowledged so
   * far, or `timeoutMs` passed; resolves to how many did. For `durability: 'majority'` (in memory
   * on the replicas; fsynced only at the leader, as Redis 7.0 has no `WAITAOF`).
   *
   * `WAIT` counts only the writes of its own connection and blocks it, so this runs on a
   * connection of its own: it bumps the `wait` key, whose place in the (single, ordered)
   * replication stream is after every write acknowledged before the call, and `WAIT`s for that
   * (both sent at once: one round trip). Ordinary writes and reads never queue behind it.
   *
   * Batched: a `WAIT` blocks its connection, so calls made while one is on its way wait for it to
   * end anyway; those with the same arguments share the next one, whose bump comes after all
   * their writes. Many majority writes at once cost a few `WAIT`s, not one each.
   */
  waitReplicas(replicas: number, timeoutMs: number): Promise<number> {
    if (!Number.isInteger(replicas) || replicas < 0)
      return Promise.reject(
        new CausewayError('INVALID_OPTION', 'replicas must be a non-negative integer'),
      )
    // WAIT 0 ms would block forever.
    const timeout = Math.max(1, Math.ceil(timeoutMs))
    const key = `${replicas}/${timeout}`
    const next = this.#nextWaits.get(key)
    if (next !== undefined) return next
    const wait = this.#waitTail.then(async () => {
      // Sent from here on: a later call's writes may come after this bump.
      this.#nextWaits.delete(key)
      const waiter = await this.#waiter()
      const [, acked] = await this.#run(
        waiter,
        'wait',
        (r) => Promise.all([r.incr(this.keys.wait), r.wait(replicas, timeout)]),
        timeout + this.#options.commandTimeoutMs,
      )
      return Number(acked)
    })
    this.#nextWaits.set(key, wait)
    this.#waitTail = wait.catch(noop)
    return wait
  }

  /**
   * Re-reads `sv` from the server and returns it: for a caller that must not act on a view a
   * push has not refreshed yet (another gateway process may have written a moment ago).
   */
  protected override async _refresh(): Promise<number[]> {
    this.#live()
    await this.#refresh()
    return this.sv()
  }

  /** The server's replication role (`ROLE`): `master` for a leader, `slave` for a follower. */
  async serverRole(): Promise<string> {
    const { reader } = this.#live()
    const reply = await this.#run(reader, 'role', (r) => r.call('ROLE'))
    return String((reply as unknown[])[0])
  }

  /** The HLC stored with this replica (the last one issued or observed). */
  async hlc(): Promise<Hlc> {
    const { reader } = this.#live()
    const value = await this.#run(reader, 'hlc', (r) => r.hget(this.keys.meta, 'hlc'))
    return (value ?? '0000000000000000') as Hlc
  }

  async #ingest(
    operation: string,
    mode: 'batch' | 'per-origin',
    entries: readonly LogEntry[],
  ): Promise<number[]> {
    const keys = [this.keys.meta, this.keys.sv]
    const args = [mode, String(this.#options.regions), String(entries.length)]
    // Why each sibling entry whose set does not decode was judged so, reported if it applies.
    const undecodable = new Map<number, string>()
    for (const [i, entry] of entries.entries()) {
      const sibling = entry.kind === 'siblings'
      const why = sibling ? this.#whyUnmergeable(entry) : undefined
      if (why !== undefined) undecodable.set(i, why)
      keys.push(
        this.keys.log(entry.origin),
        sibling ? this.keys.siblings(entry.key) : this.keys.version(entry.key),
      )
      args.push(
        String(entry.origin),
        String(entry.idx),
        entry.key,
        sibling ? (why === undefined ? '2' : '3') : entry.kind === 'put' ? '1' : '0',
        sibling ? entry.siblings : entry.kind === 'put' ? entry.value : '',
        entry.ts,
        String(entry.at),
      )
    }
    if (args.length !== 3 + entries.length * INGEST_FIELDS) throw new Error('ingest arity')
    const { writer } = this.#live()
    const result = await this.#run(writer, operation, (r) => INGEST_SCRIPT.run(r, keys, args))
    const reply = stringsOf(result, this.#options.regions)
    const sv = svOf(reply, 0, this.#options.regions)
    this.#stable.advance(sv)
    for (const position of reply.slice(this.#options.regions)) {
      const entry = entries[Number(position)]!
      this.#quarantine.skipped({
        region: this.region,
        partition: this.partition,
        replica: this.replica,
        key: entry.key,
        origin: entry.origin,
        idx: entry.idx,
        reason: undecodable.get(Number(position)) ?? 'the ingest script could not parse it',
      })
    }
    return sv
  }

  // Why a sibling entry's set may not be merged (it does not decode), or undefined when it may;
  // one that may not is logged only (the ingest script applies the same rules, see
  // replica-scripts.ts, and says which of them it applied).
  #whyUnmergeable(entry: SiblingsEntry): string | undefined {
    try {
      decodeLoggedSiblings(entry, this.#options.regions)
      return undefined
    } catch (error) {
      return error instanceof Error ? error.message : String(error)
    }
  }

  /** The `WAIT` connection, connected on first use. */
  async #waiter(): Promise<Redis> {
    const c = this.#live()
    c.waiter ??= { redis: this.#connect('waiter'), connecting: undefined }
    const waiter = c.waiter
    if (waiter.redis.status === 'wait') {
      waiter.connecting ??= waiter.redis.connect().finally(() => (waiter.connecting = undefined))
      try {
        await waiter.connecting
      } catch (error) {
        throw backendError(error, this.backend, 'wait')
      }
    }
    return waiter.redis
  }

  async #readState(reader: Redis, operation: string): Promise<StoredState> {
    const regions = this.#options.regions
    const reply = stringsOf(
      await this.#run(reader, operation, (r) =>
        STATE_SCRIPT.run(r, [this.keys.sv, this.keys.epochs, this.keys.meta], [String(regions)]),
      ),
      2 * regions + 5,
    )
    const histories = Array.from({ length: regions }, (_, d) => {
      const text = reply[regions + d]!
      if (text === '') return INITIAL_HISTORY
      try {
        return decodeHistory(text)
      } catch {
        return this.#histories[d] ?? INITIAL_HISTORY // damaged: keep what was known
      }
    })
    const meta = reply.slice(2 * regions)
    return {
      sv: svOf(reply, 0, regions),
      histories,
      claimed: reply[regions + this.region] !== '',
      leader: meta[1]!,
      leaderAddr: meta[2]!,
      ceiling: meta[3] === '' ? Infinity : Number(meta[3]),
      reserved: meta[4] === '' ? 0 : Number(meta[4]),
    }
  }

  #takeState(state: StoredState, reset = false): void {
    this.#histories = state.histories
    if (!this.#supervised || this.#leading === undefined || state.leader !== this.#leading)
      this.#ceiling = state.ceiling
    else if (this.#ceiling !== -Infinity) this.#ceiling = Math.max(this.#ceiling, state.ceiling)
    if (reset) this.#stable.reset(state.sv)
    else this.#stable.advance(state.sv)
  }

  #live(): Connections {
    if (!this.#connections)
      throw new CausewayError('BACKEND_UNAVAILABLE', `replica on ${this.backend} is closed`, {
        backend: this.backend,
      })
    return this.#connections
  }

  #connect(role: keyof Connections): Redis {
    const { connectTimeoutMs, reconnectMaxDelayMs } = this.#options
    const redis = new Redis(this.#options.url, {
      lazyConnect: true,
      connectionName: `causeway:${role}:r${this.region}p${this.partition}n${this.replica}`,
      connectTimeout: connectTimeoutMs,
      // Fail fast instead of queueing while the server is away; never resend a command that may
      // have run (a write is not idempotent).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Resubscribing is part of #watch, which also sets up tracking on the new connection.
      autoResubscribe: false,
      // The invalidation pushes reach ioredis only as pub/sub messages, which needs RESP2.
      ...(role === 'subscriber' ? { protocol: 2 as const } : {}),
      retryStrategy: (attempt) => Math.min(50 * attempt, reconnectMaxDelayMs),
    })
    // Without a listener ioredis prints every connection error; the calls report them instead.
    redis.on('error', noop)
    return redis
  }

  /** One backend call: fails at once when the connection is not ready, and after a timeout. */
  async #run<T>(
    client: Redis,
    operation: string,
    call: (client: Redis) => Promise<T>,
    timeoutMs = this.#options.commandTimeoutMs,
  ): Promise<T> {
    if (client.status !== 'ready')
      throw backendError(new Error(`connection is ${client.status}`), this.backend, operation)
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no reply in ${timeoutMs} ms`)), timeoutMs)
    })
    const settled = Promise.race([call(client), timeout])
    this.#inFlight.add(settled)
    try {
      return await settled
    } catch (error) {
      throw backendError(error, this.backend, operation)
    } finally {
      clearTimeout(timer)
      this.#inFlight.delete(settled)
    }
  }

  /**
   * Subscribes `subscriber` to the `sv` the scripts publish, and has the server push an
   * invalidation to it when a full resync replaces the whole dataset (see the module comment).
   * Run on every new subscriber connection, before it subscribes: in RESP2 a subscribed
   * connection takes no other command.
   */
  async #watch(subscriber: Redis): Promise<void> {
    const id = await this.#run(subscriber, 'watch', (r) => r.client('ID'))
    await this.#run(subscriber, 'watch', (r) =>
      r.call(
        'CLIENT',
        'TRACKING',
        'ON',
        'REDIRECT',
        String(id),
        'BCAST',
        'PREFIX',
        this.keys.resync,
      ),
    )
    await this.#run(subscriber, 'watch', (r) => r.subscribe(INVALIDATE_CHANNEL, this.keys.sv))
  }

  /** Loads the scripts (a restarted server forgot them), so calls need no NOSCRIPT round trip. */
  async #loadScripts(reader: Redis): Promise<void> {
    for (const script of [
      WRITE_SCRIPT,
      WRITE_SIBLING_SCRIPT,
      HEARTBEAT_SCRIPT,
      INGEST_SCRIPT,
      READ_SCRIPT,
      READ_SIBLINGS_SCRIPT,
      LOAD_SCRIPT,
      STATE_SCRIPT,
      CLAIM_SCRIPT,
      RAISE_SCRIPT,
      ADMIT_SCRIPT,
      SCAN_LOG_SCRIPT,
      REPAIR_SCRIPT,
      ...SET_SCRIPTS,
      ...TX_SCRIPTS,
    ])
      await this.#run(reader, 'script', (r) => r.script('LOAD', script.lua))
  }

  /**
   * Re-reads `sv` after a push or a reconnection, retrying (bounded) while that fails; with
   * `reset`, the view may go down to what the store holds (see {@link StableVector.reset}).
   */
  #catchUp(attempt = 0, reset = false): void {
    if (reset) this.#resetNext = true
    this.#refresh().catch(() => {
      if (!this.#connections || attempt + 1 >= CATCH_UP_ATTEMPTS) return
      clearTimeout(this.#catchUpTimer)
      this.#catchUpTimer = setTimeout(
        () => this.#catchUp(attempt + 1),
        Math.min(50 * 2 ** attempt, 1000),
      )
    })
  }

  /** Re-reads the stored `sv`; concurrent calls share one read plus at most one more after it. */
  #refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#refreshAgain = true
      return this.#refreshing
    }
    const run = async () => {
      try {
        do {
          this.#refreshAgain = false
          const c = this.#connections
          if (!c) return
          const reset = this.#resetNext
          this.#resetNext = false
          try {
            this.#takeState(await this.#readState(c.reader, 'refresh'), reset)
          } catch (error) {
            if (reset) this.#resetNext = true // not done: the next refresh does it
            throw error
          }
        } while (this.#refreshAgain || this.#resetNext)
      } finally {
        this.#refreshing = undefined
      }
    }
    this.#refreshing = run()
    return this.#refreshing
  }
}

/** What {@link RedisPartitionReplica.claimState} reads. */
export interface ClaimState {
  sv: number[]
  /** This region's own history. */
  history: EpochHistory
  /** The region's current epoch in this store; 0 when no leader ever claimed it. */
  epoch: number
  /** The run id of the server process that holds the claim ('' when none ever did). */
  leader: string
  /** That server's address ('' when none). */
  leaderAddr: string
  /** The highest index a leader may have issued: its reservation (0 when none). */
  reserved: number
}

interface StoredState {
  sv: number[]
  histories: EpochHistory[]
  /** Whether the store holds its own region's history (a leader claimed it once). */
  claimed: boolean
  leader: string
  leaderAddr: string
  /** Infinity when the store has none (no leader ever claimed it). */
  ceiling: number
  reserved: number
}

// The epoch scripts' refusal an error carries (`CW_CEILING`, `CW_NOT_LEADER`), if any.
function refusal(error: unknown): string | undefined {
  if (!(error instanceof CausewayError)) return undefined
  const reason = error.details?.['reason']
  return typeof reason === 'string' ? /^CW_[A-Z_]+/.exec(reason)?.[0] : undefined
}

function decodes(decode: () => unknown): boolean {
  try {
    decode()
    return true
  } catch {
    return false
  }
}
