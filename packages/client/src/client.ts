/**
 * The client: `get`, `put` and `delete` with per-call consistency levels over the NuKV session
 * (Algorithm 1). Each call validates its input, computes the key's partition once, sends the
 * vector (reads) or dependency time (writes) its level picks, and records the reply in the
 * session, through the exchanges of `client-access.ts` that sets use too: reads are asked again
 * of the region's leader on `SESSION_NOT_AVAILABLE` and, with `fallback: 'home'`, of the home
 * region, all within the call's one deadline (see `read-retry.ts`); writes are never retried.
 *
 * Keys of a `siblings` namespace (see the topology's `namespaces`) read as every concurrent
 * version plus a causal context; a write that passes the context back supersedes what was read.
 * The client passes it back by itself when the value written is the very object (or array) that
 * a read of the key returned as its only value, or that was last written to it (see
 * `WriteOptions.context` and `docs/siblings.md`).
 */
import {
  CausewayError,
  type ConflictMode,
  DEFAULT_LIMITS,
  type Hlc,
  type Namespaces,
  type ReadObservation,
  type ReadReply,
  type Session,
  type Topology,
  checkKey,
  checkNamespaces,
  conflictModeOf,
  decodeCausalContext,
  partitionOf,
  utf8Length,
} from '@causeway/core'
import { type CheckedRead, type ClientParts, readCall, writeCall } from './client-access.js'
import type { EngineHost } from './offline/engine-context.js'
import type { OfflineEngine } from './offline/engine.js'
import { EventHub, type CausewayEventName, type CausewayListener } from './offline/events.js'
import { randomId } from './offline/ids.js'
import { isUnreachable } from './offline/outcome.js'
import type { FailedOp, PendingOp, PendingWrite, SyncResult } from './offline/outbox-types.js'
import {
  WatchHandle,
  type ChangeStream,
  type WatchListener,
  type WatchOptions,
  type WatchTarget,
} from './watch/watch-handle.js'
import { CausewaySet } from './set.js'
import {
  type ReadOptions,
  type ResolveOptions,
  type ResolvedDefaults,
  type WriteOptions,
  checkTimeout,
} from './options.js'
import { checkReadReply } from './replies.js'
import {
  type RunTransactionOptions,
  type Transaction,
  TransactionFactory,
  type TransactionOptions,
} from './transaction.js'
import type { RegionRoute } from './topology.js'
import type { Transport } from './transport.js'
import { guardTransport, type ReplyGuard } from './reply-guard.js'

/** One concurrent version of a key in a siblings namespace. */
export interface Sibling<T = unknown> {
  /** The value; undefined for a tombstone. */
  value: T | undefined
  /** True for a tombstone (a delete). */
  deleted: boolean
  /** HLC the version's leader stamped it with. */
  ts: Hlc
  /** Region where it was written. */
  dc: number
}

/** What `get` resolves to. */
export interface ReadResult<T = unknown> {
  /** Whether the key holds a value (false for a key never written or deleted). */
  found: boolean
  /**
   * The value; undefined when not found. In a siblings namespace, set only when exactly one
   * version holds a value: with several, look at `siblings` (or use `db.resolve`).
   */
  value: T | undefined
  /**
   * Siblings namespaces: the values of every concurrent version, oldest first, tombstones left
   * out (`[]` for a key never written or only deleted). Undefined for a last-writer-wins key.
   */
  siblings: T[] | undefined
  /** Siblings namespaces: every concurrent version, tombstones included, oldest first. */
  versions: Sibling<T>[] | undefined
  /**
   * Siblings namespaces: the causal context of these versions. A `put` or `delete` with
   * `{ context }` supersedes them (and only them). Undefined for a last-writer-wins key.
   */
  context: string | undefined
  /**
   * HLC of the returned version (also of a tombstone); undefined for a key never written. In a
   * siblings namespace, of the newest version.
   */
  ts: Hlc | undefined
  /** Origin region of the returned version. */
  dc: number | undefined
  /** The serving replica's `sv[dc]`. */
  idx: number | undefined
  /**
   * The epoch in which region `dc` issued `idx`, as the serving replica's history has it (the
   * replica's own epoch when the key was never written).
   */
  epoch: number
  /** Id of the region that served the read. */
  region: number
  /** The replica (within its region) that served the read. */
  replica: number
  /** How long the replica waited for the session, in ms. */
  waitedMs: number
  /** How many requests the read took (more than 1 after a retry); 0 when served locally. */
  attempts: number
  /**
   * Where the answer came from: `'remote'` a gateway, `'local'` this device's read cache
   * (`connect({ persist })`, when the gateway could not be reached). A local answer is what this
   * device last read or wrote of the key, with its queued writes laid over it.
   */
  source: 'remote' | 'local'
  /**
   * Whether the answer includes writes of this device still queued (not yet applied by the
   * gateway): the value is what they will write. Then `ts`, `dc` and `idx` are undefined.
   */
  pending: boolean
}

/** What `put` and `delete` resolve to once the gateway applied the write. */
export interface WriteResult {
  /** False: the write is applied (see {@link PendingWrite} for one that is queued). */
  pending: false
  /** The write's operation id: the gateway applies it at most once. */
  opId: string
  /** HLC the leader gave the write. */
  ts: Hlc
  /** Region whose leader took the write (the origin of the new version). */
  dc: number
  /** The write's index in its origin region's log of the partition. */
  idx: number
  /** The epoch in which the region's leader issued `idx`. */
  epoch: number
  /** Id of the region that took the write. */
  region: number
  /**
   * Siblings namespaces: the context of exactly what the write superseded plus the write itself,
   * when the leader can give it (it cannot when the key had versions of this region the writer
   * had not seen). A next write with it supersedes this one without reading again.
   */
  context: string | undefined
}

/**
 * What a write resolves to: applied ({@link WriteResult}) or, on a client with `persist`, queued
 * because the gateway could not be reached ({@link PendingWrite}). A client without `persist`
 * never queues, so its writes resolve `WriteResult` only.
 */
export type WriteOutcome<Offline extends boolean> = Offline extends true
  ? WriteResult | PendingWrite
  : WriteResult

/** What `resolve` resolves to. */
export interface ResolveResult<T = unknown, Offline extends boolean = false> {
  /** The key's value after the call: the merged value, or the only one when nothing needed merging. */
  value: T | undefined
  /** The read the merge was made from. */
  read: ReadResult<T>
  /** The write of the merged value; undefined when there was nothing to resolve. */
  written: WriteOutcome<Offline> | undefined
}

/** Called after a reply changed (or may have changed) the session. */
export type SessionListener = (session: Session) => void

/** Everything a {@link Causeway} needs; `connect()` builds it. */
export interface CausewayInit {
  topology: Topology
  session: Session
  regions: RegionRoute[]
  home: RegionRoute
  defaults: ResolvedDefaults
  transport: Transport
  /** Headers of every request (extra headers, authorization). */
  headers: Record<string, string>
  /** Whether `close()` also closes the transport (true when `connect` made it). */
  ownsTransport: boolean
  /** Reply size cap and trusted origins (`reply-guard.ts`). */
  guard: ReplyGuard
  /** Whether an offline engine will be attached (`connect({ persist })`). */
  persist?: boolean
}

const VALUE_ENVELOPE = '{"value":}'.length

/**
 * A connected client. Create one with `connect()`. `Offline` is true for a client made with
 * `persist` (its writes may resolve {@link PendingWrite}).
 */
export class Causeway<Offline extends boolean = false> {
  /** The topology learnt at connect. */
  readonly topology: Topology
  /**
   * The session: what this client has read and written. `JSON.stringify(db.session)` saves it,
   * `connect({ session })` restores it, `db.session.merge(other)` joins another one into it.
   */
  readonly session: Session
  /** Every region, with the gateway URL calls to it go to. */
  readonly regions: readonly RegionRoute[]
  /** The home region: the default target of calls and the last fallback of reads. */
  readonly home: RegionRoute
  /** The client-wide defaults, filled in. */
  readonly defaults: Readonly<ResolvedDefaults>
  readonly #transport: Transport
  readonly #ownsTransport: boolean
  readonly #closing = new AbortController()
  readonly #listeners = new Set<SessionListener>()
  readonly #partitions: number
  readonly #maxKeyBytes: number
  readonly #maxValueBytes: number
  readonly #maxTimeoutMs: number
  readonly #namespaces: Namespaces
  // What the exchanges (and sets) reach of this client.
  readonly #parts: ClientParts
  /**
   * The context each object or array a read returned (as the key's only value) or a write wrote
   * belongs with, so writing that object back supersedes what was read. Weak: forgotten with it.
   */
  readonly #contexts = new WeakMap<object, { key: string; context: string }>()
  readonly #transactions: TransactionFactory
  readonly #events = new EventHub()
  #offline: OfflineEngine | undefined
  /** Op ids of a client without `persist` (the engine makes them otherwise). */
  readonly #clientId = randomId(16)
  #seq = 0

  /** @internal Use `connect()`. */
  constructor(init: CausewayInit) {
    this.topology = init.topology
    this.session = init.session
    this.regions = init.regions
    this.home = init.home
    this.defaults = Object.freeze({ ...init.defaults })
    this.#transport = init.transport
    this.#ownsTransport = init.ownsTransport
    this.#partitions = init.topology.partitions
    this.#maxKeyBytes = init.topology.limits.maxKeyBytes
    this.#maxValueBytes = init.topology.limits.maxValueBytes
    this.#maxTimeoutMs = init.topology.limits.maxTimeoutMs
    this.#namespaces = checkNamespaces(init.topology.namespaces)
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this
    this.#parts = {
      // Guarded outermost: a request refused for its origin never reaches the network (nor
      // tells the offline engine anything).
      transport: guardTransport(
        init.persist === true ? this.#observed(init.transport) : init.transport,
        init.guard,
      ),
      guard: init.guard,
      headers: init.headers,
      session: this.session,
      regions: this.regions,
      home: this.home,
      defaults: this.defaults,
      partitions: this.#partitions,
      maxKeyBytes: this.#maxKeyBytes,
      causal: init.topology.shipping === 'causal',
      closing: this.#closing.signal,
      timeout: (timeoutMs) => this.#timeout(timeoutMs),
      changed: () => this.#changed(),
      throwIfClosed: () => this.#throwIfClosed(),
      get offline() {
        return self.#offline
      },
      nextOpId: () => this.#nextOpId(),
    }
    this.#transactions = new TransactionFactory(
      this.#parts,
      init.topology.limits.maxTxKeys ?? DEFAULT_LIMITS.maxTxKeys,
    )
  }

  /** @internal `connect({ persist })` attaches the engine once the client exists. */
  attachOffline(engine: OfflineEngine): void {
    this.#offline = engine
  }

  /** @internal What the offline engine reaches of this client. */
  get engineHost(): EngineHost {
    return {
      parts: this.#parts,
      events: this.#events,
      topology: this.topology,
      conflictMode: (key) => this.conflictMode(key),
      refresh: (key) => this.get(key),
    }
  }

  /** The transport, telling the engine whether gateways answer. */
  #observed(transport: Transport): Transport {
    return {
      request: async (req) => {
        try {
          const res = await transport.request(req)
          this.#offline?.connectivity.markOnline()
          return res
        } catch (error) {
          // A reply too large arrived: the gateway is reachable.
          if (error instanceof CausewayError && error.code === 'REPLY_TOO_LARGE') {
            this.#offline?.connectivity.markOnline()
            throw error
          }
          if (req.signal?.aborted !== true && !this.closed)
            this.#offline?.connectivity.markOffline(
              new CausewayError(
                'NETWORK_ERROR',
                `cannot reach ${req.url}: ${(error as Error)?.message ?? String(error)}`,
                { url: req.url },
                { cause: error },
              ),
            )
          throw error
        }
      },
      ...(transport.close ? { close: () => transport.close!() } : {}),
    }
  }

  #nextOpId(): string {
    return this.#offline?.nextOpId() ?? `${this.#clientId}.${++this.#seq}`
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closing.signal.aborted
  }

  /** The partition that holds `key` (the same function the gateway uses). */
  partitionOf(key: string): number {
    checkKey(key, this.#maxKeyBytes)
    return partitionOf(key, this.#partitions)
  }

  /**
   * The CRDT set `name` (add, remove, has, scan, size; see `set.ts`). It lives in the partition
   * of its name, with the same per-call levels and session as keys.
   */
  set(name: string): CausewaySet<Offline> {
    checkKey(name, this.#maxKeyBytes)
    return new CausewaySet<Offline>(name, this.#parts)
  }

  /**
   * How concurrent writes to `key` are resolved: `'siblings'` when its namespace (the text before
   * its first `:`) is configured so, otherwise `'lww'` (last writer wins).
   */
  conflictMode(key: string): ConflictMode {
    return conflictModeOf(key, this.#namespaces)
  }

  /**
   * Reads `key` at the call's read level. Resolves once a replica that covers the session's
   * vector for the key's partition has answered; rejects with `SessionNotAvailableError` when no
   * replica could within the deadline (after the retries and the home fallback), `TIMEOUT` or
   * `NETWORK_ERROR`, whose `details.tried` lists every attempt.
   *
   * With `persist`: when the gateway cannot be reached (or is known to be unreachable) the read
   * is answered at once from this device's read cache with its queued writes laid over it
   * (`source: 'local'`), or rejects with `OfflineError` (`OFFLINE`) for a key this device never
   * read or wrote. A remote answer for a key with queued writes shows them too (`pending`).
   */
  async get<T = unknown>(key: string, options?: ReadOptions): Promise<ReadResult<T>> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    const engine = this.#offline
    if (engine !== undefined && !engine.connectivity.online)
      return engine.localRead<T>(key, undefined)
    let outcome
    try {
      outcome = await readCall(this.#parts, {
        partition: partitionOf(key, this.#partitions),
        path: '/v1/kv/' + encodeURIComponent(key),
        what: `get ${JSON.stringify(key)}`,
        options,
        check: checkKeyRead,
      })
    } catch (error) {
      if (
        engine !== undefined &&
        isUnreachable(error) &&
        !this.closed &&
        !options?.signal?.aborted
      ) {
        engine.connectivity.markOffline(error as CausewayError)
        return engine.localRead<T>(key, error as CausewayError)
      }
      // Positions the session holds that the gateway never had: a reset cluster, maybe. Checked
      // (the `clusterChanged` event when so) before the outbox sends anything more.
      if (engine !== undefined && (error as CausewayError)?.code === 'VECTOR_UNREACHABLE')
        engine.cluster.suspect()
      throw error
    }
    const { reply, attempts } = outcome
    // A transactional key: the session has seen this tid of the serving region's log.
    if (reply.tid !== undefined) {
      this.session.observeTid(reply.region, reply.tid)
      this.#changed()
    }
    const value = reply.found ? (reply.value as T | undefined) : undefined
    if (reply.context !== undefined && typeof value === 'object' && value !== null)
      this.#contexts.set(value, { key, context: reply.context })
    const result: ReadResult<T> = {
      found: reply.found,
      value,
      ...siblingsOf<T>(reply),
      ts: reply.ts,
      dc: reply.dc,
      idx: reply.idx,
      epoch: reply.epoch,
      region: reply.region,
      replica: reply.replica,
      waitedMs: reply.waitedMs,
      attempts,
      source: 'remote',
      pending: false,
    }
    if (engine === undefined) return result
    const shown = await engine.afterRemoteRead(key, reply, result)
    if (shown === undefined) return result
    this.#remember(key, shown.value, shown.context)
    return shown
  }

  /**
   * Writes `value` (any JSON value) to `key` at the leader of the call's region, with the
   * dependency time the call's write level picks. Not retried: on `TIMEOUT` or `NETWORK_ERROR` the
   * write may or may not have been applied.
   *
   * With `persist`: the write is queued first (a full store rejects with `StorageFullError`);
   * when the gateway cannot be reached it stays queued and resolves `{ pending: true, opId }`,
   * to be applied exactly once by a later sync. A refusal of the write itself (a 4xx) still
   * rejects.
   */
  async put(key: string, value: unknown, options?: WriteOptions): Promise<WriteOutcome<Offline>> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    const context = this.#contextFor(key, value, options?.context)
    const body = this.#encodeValue(value)
    const written = await this.#write('put', key, value, body, context, options)
    if (typeof value === 'object' && value !== null && this.conflictMode(key) === 'siblings') {
      // Writing the same object again then supersedes this write, and only it.
      const next = written.pending ? '~' + written.opId : written.context
      if (next !== undefined) this.#contexts.set(value, { key, context: next })
      else this.#contexts.delete(value)
    }
    return written as WriteOutcome<Offline>
  }

  /**
   * Deletes `key` (writes a tombstone); otherwise exactly like {@link Causeway.put}. In a siblings
   * namespace, pass the context of a read (`{ context: r.context }`) to delete what it returned:
   * without one, the tombstone is one more sibling and the other versions stay.
   */
  async delete(key: string, options?: WriteOptions): Promise<WriteOutcome<Offline>> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    const context = this.#contextFor(key, undefined, options?.context)
    return (await this.#write(
      'delete',
      key,
      undefined,
      undefined,
      context,
      options,
    )) as WriteOutcome<Offline>
  }

  /** A put or delete: sent at once, or through the outbox with `persist`. */
  async #write(
    kind: 'put' | 'delete',
    key: string,
    value: unknown,
    body: string | undefined,
    context: { context?: string; afterOp?: string },
    options: WriteOptions | undefined,
  ): Promise<WriteResult | PendingWrite> {
    const partition = partitionOf(key, this.#partitions)
    const path = '/v1/kv/' + encodeURIComponent(key)
    const what = `${kind} ${JSON.stringify(key)}`
    const method = kind === 'put' ? 'PUT' : 'DELETE'
    const engine = this.#offline
    if (engine === undefined)
      return writeCall(this.#parts, {
        method,
        partition,
        path,
        body,
        what,
        options,
        context: context.context,
        opId: this.#nextOpId(),
      })
    return engine.writeKey(
      { kind, key, ...(kind === 'put' ? { value } : {}), ...context, partition },
      options,
      (sent) =>
        writeCall(this.#parts, {
          method,
          partition,
          path,
          body,
          what,
          options,
          context: sent.context,
          opId: sent.opId,
        }),
    )
  }

  /**
   * Resolves the siblings of `key` (a siblings namespace): reads it, and when it has more than one
   * version, writes `merge(values, read)` back with the read's context, which supersedes every
   * version read; a merge that returns `undefined` deletes them instead. Versions written
   * concurrently with the call stay as siblings of the result. With `force`, the write happens
   * even when there is a single version (a read-modify-write). Offline (with `persist`) it
   * merges what this device knows and queues the write.
   * @throws `INVALID_REQUEST` for a key of a last-writer-wins namespace.
   */
  async resolve<T = unknown>(
    key: string,
    merge: (siblings: T[], read: ReadResult<T>) => T | undefined | Promise<T | undefined>,
    options: ResolveOptions = {},
  ): Promise<ResolveResult<T, Offline>> {
    this.#throwIfClosed()
    checkKey(key, this.#maxKeyBytes)
    if (this.conflictMode(key) !== 'siblings') {
      throw new CausewayError(
        'INVALID_REQUEST',
        `resolve needs a key of a siblings namespace; ${JSON.stringify(key)} is last-writer-wins`,
      )
    }
    const { write, durability, force, ...readOptions } = options
    const read = await this.get<T>(key, readOptions)
    const versions = read.versions ?? []
    if (versions.length <= 1 && force !== true)
      return { value: read.value, read, written: undefined }
    const merged = await merge(read.siblings ?? [], read)
    const writeOptions: WriteOptions = { context: read.context ?? null }
    if (write !== undefined) writeOptions.write = write
    if (durability !== undefined) writeOptions.durability = durability
    if (options.region !== undefined) writeOptions.region = options.region
    if (options.timeoutMs !== undefined) writeOptions.timeoutMs = options.timeoutMs
    if (options.signal !== undefined) writeOptions.signal = options.signal
    const written =
      merged === undefined
        ? await this.delete(key, writeOptions)
        : await this.put(key, merged, writeOptions)
    return { value: merged, read, written }
  }

  // ---- offline-first (connect({ persist })) ----

  /**
   * Listens to event `name` (see {@link CausewayEvents}): `online`, `offline`, `pending`,
   * `synced`, `conflict`, `error`. Returns a function that removes the listener. Only a client
   * with `persist` emits them.
   *
   * @example
   * db.on('pending', ({ count }) => (badge.textContent = String(count)))
   */
  on<K extends CausewayEventName>(name: K, listener: CausewayListener<K>): () => void {
    return this.#events.on(name, listener)
  }

  /**
   * Whether this client reaches the gateway, as it last found out: false after a request got no
   * reply, until one does. Always true without `persist`.
   */
  get online(): boolean {
    return this.#offline?.connectivity.online ?? true
  }

  /**
   * Whether this client replays the outbox: of the clients sharing one store (tabs), exactly one
   * does. Always true without `persist` (nothing to replay).
   */
  get outboxOwner(): boolean {
    return this.#offline?.owner ?? true
  }

  /**
   * Replays the outbox now, in order, in batches (`POST /v1/ops`), and resolves what it did.
   * It also runs by itself on reconnect (the browser's `online` event, any call that reaches the
   * gateway after a failure, a retry with backoff). A transient failure stops it (`error` set,
   * the rest kept queued); ops refused for good move to {@link Causeway.failed}. In a tab that
   * does not own the outbox, it asks the owner and resolves what the owner reports. Offline
   * with nothing queued, it asks the gateway whether it answers again (the `online` event when
   * it does): call it when the app knows the network is back.
   */
  async sync(): Promise<SyncResult> {
    this.#throwIfClosed()
    if (this.#offline === undefined) return { applied: 0, failed: 0, pending: 0, owner: true }
    return this.#offline.sync()
  }

  /**
   * The way on after a `clusterChanged` event (`CLUSTER_CHANGED`: the gateway serves a cluster
   * that was reset, or restored from a copy of its data, so it knows nothing of this device's
   * session): forgets the session and the read cache, keeps the new cluster's topology, and keeps
   * the queued writes (`queued: 'keep'`, sent as blind writes: their causal contexts named
   * versions of the old cluster) or drops them (`'drop'`), in one batch of the store; then closes
   * this client. Connect again (`connect({ url, persist })`) to go on with a fresh session; other
   * tabs of the store must connect again too. Rejects with `INVALID_OPTION` when no change was found.
   */
  async resetCluster({ queued }: { queued: 'keep' | 'drop' }): Promise<void> {
    this.#throwIfClosed()
    if (queued !== 'keep' && queued !== 'drop')
      throw new CausewayError('INVALID_OPTION', "resetCluster: queued must be 'keep' or 'drop'", {
        option: 'queued',
      })
    if (this.#offline === undefined)
      throw new CausewayError('INVALID_OPTION', 'resetCluster needs a client with persist', {
        option: 'persist',
      })
    await this.#offline.resetCluster(queued)
    await this.close()
  }

  /** The writes queued in the outbox (of every tab sharing the store), oldest first. */
  async pending(): Promise<PendingOp[]> {
    return this.#offline?.pending() ?? []
  }

  /**
   * The queued writes the gateway refused for good during a replay (bad input, credentials,
   * scope), with their errors, oldest first. They are kept until {@link Causeway.discardFailed}.
   */
  async failed(): Promise<FailedOp[]> {
    return this.#offline?.failed() ?? []
  }

  /** Forgets failed writes: those named, or all. Resolves how many were forgotten. */
  async discardFailed(opIds?: readonly string[]): Promise<number> {
    return this.#offline?.discardFailed(opIds) ?? 0
  }

  /**
   * Watches changes to keys (a prefix, or a list of keys) through the gateway's change feed
   * (`GET /v1/watch`, server-sent events). Iterate it (`for await (const change of
   * db.watch('cart:'))`) or pass a listener. It resumes by itself from its cursor after a
   * disconnect or a gateway restart, and starts from `options.since` (a `change.cursor` of an
   * earlier watch) when given. Each change is recorded in the session as a read; with `persist`,
   * in the read cache too. `close()` ends it.
   *
   * @example
   * const feed = db.watch('list:', (change) => render(change.key, change.value))
   * ...
   * feed.close()
   */
  watch(target: WatchTarget, options?: WatchOptions): ChangeStream
  watch(target: WatchTarget, listener: WatchListener, options?: WatchOptions): ChangeStream
  watch(
    target: WatchTarget,
    listenerOrOptions?: WatchListener | WatchOptions,
    maybeOptions?: WatchOptions,
  ): ChangeStream {
    this.#throwIfClosed()
    const listener = typeof listenerOrOptions === 'function' ? listenerOrOptions : undefined
    const options =
      (typeof listenerOrOptions === 'function' ? maybeOptions : listenerOrOptions) ?? {}
    return new WatchHandle(
      {
        parts: this.#parts,
        topology: this.topology,
        conflictMode: (key) => this.conflictMode(key),
        recordKey: (key, entry) => this.#offline?.recordKey(key, entry),
        recordSet: (name, added, removed) => this.#offline?.recordSetChange(name, added, removed),
        onOnline: (listener) => this.#events.on('online', listener),
      },
      target,
      options,
      listener,
    )
  }

  /**
   * Starts a transaction (Nami) over keys of transactional namespaces: `tx.get` reads at one
   * snapshot of the region's transaction log, `tx.put` and `tx.delete` buffer writes, and
   * `tx.commit()` resolves to `{ tid, outcome }`: `applied`, or `conflict` when a key it read
   * changed after its snapshot (nothing written). Its snapshot is at least `minTid` and covers
   * everything this session has read and written. See `docs/transactions.md`.
   */
  async transaction(options?: TransactionOptions): Promise<Transaction> {
    return this.#transactions.begin(options)
  }

  /**
   * Runs `fn` in a transaction and commits it, starting again (with a backoff) after a conflict,
   * up to `retries` times (default 10); resolves to what `fn` returned in the transaction that
   * applied, or rejects with `TRANSACTION_CONFLICT`. `fn` may run more than once: keep it free of
   * other side effects.
   */
  runTransaction<R>(
    fn: (tx: Transaction) => R | Promise<R>,
    options?: RunTransactionOptions,
  ): Promise<R> {
    return this.#transactions.run(fn, options)
  }

  /**
   * Calls `listener` after every reply that updated the session (not after `session.merge`,
   * which the caller does itself). Returns a function that removes the listener.
   */
  onSessionChange(listener: SessionListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /**
   * Closes the client: calls in flight reject with `SHUTTING_DOWN`, later calls too, and a
   * transport that `connect` created is closed. The session stays readable.
   */
  async close(): Promise<void> {
    if (this.closed) return
    this.#closing.abort()
    this.#listeners.clear()
    await this.#offline?.close()
    this.#events.clear()
    if (this.#ownsTransport) await this.#transport.close?.()
  }

  /**
   * The context a write sends: an explicit one (checked), none for `null`, or, in a siblings
   * namespace, the one remembered for the very object being written to the same key. A local
   * context (`~<opId>`, from a read served with queued writes) names a queued write: the write
   * supersedes what that one wrote.
   */
  #contextFor(
    key: string,
    value: unknown,
    explicit: string | null | undefined,
  ): { context?: string; afterOp?: string } {
    if (explicit === null) return {}
    const siblings = this.conflictMode(key) === 'siblings'
    if (explicit !== undefined) {
      if (!siblings) {
        throw new CausewayError(
          'INVALID_CONTEXT',
          `${JSON.stringify(key)} is in a last-writer-wins namespace; a context applies only to siblings namespaces`,
        )
      }
      return this.#checkContext(explicit)
    }
    if (!siblings || typeof value !== 'object' || value === null) return {}
    const known = this.#contexts.get(value)
    return known?.key === key ? this.#checkContext(known.context) : {}
  }

  #checkContext(context: string): { context?: string; afterOp?: string } {
    if (context.startsWith('~')) {
      if (this.#offline === undefined)
        throw new CausewayError('INVALID_CONTEXT', 'a local context needs a client with persist')
      return this.#offline.contextOfLocal(context)
    }
    decodeCausalContext(context, { regions: this.regions.length })
    return { context }
  }

  /** Remembers the context of a value a read showed (so writing it back supersedes the read). */
  #remember(key: string, value: unknown, context: string | undefined): void {
    if (context !== undefined && typeof value === 'object' && value !== null)
      this.#contexts.set(value, { key, context })
  }

  #encodeValue(value: unknown): string {
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') {
      throw new CausewayError('INVALID_VALUE', `a value must be JSON; got ${typeof value}`)
    }
    let body: string
    try {
      body = JSON.stringify({ value })
    } catch (cause) {
      throw new CausewayError(
        'INVALID_VALUE',
        `the value cannot be encoded as JSON: ${(cause as Error).message}`,
      )
    }
    // A toJSON() that returns undefined drops the field.
    if (body.length <= VALUE_ENVELOPE) {
      throw new CausewayError('INVALID_VALUE', 'the value encodes to nothing')
    }
    const chars = body.length - VALUE_ENVELOPE
    // A UTF-16 unit is at most 3 bytes of UTF-8: only encode when the value might be too large.
    if (chars * 3 > this.#maxValueBytes) {
      const bytes = utf8Length(body) - VALUE_ENVELOPE
      if (bytes > this.#maxValueBytes) {
        throw new CausewayError(
          'VALUE_TOO_LARGE',
          `the value is ${bytes} bytes of JSON; the limit is ${this.#maxValueBytes}`,
          { bytes, limit: this.#maxValueBytes },
        )
      }
    }
    return body
  }

  #timeout(timeoutMs: number | undefined): number {
    return timeoutMs === undefined
      ? this.defaults.timeoutMs
      : checkTimeout(timeoutMs, this.#maxTimeoutMs)
  }

  #throwIfClosed(): void {
    if (this.closed) throw new CausewayError('SHUTTING_DOWN', 'the client is closed')
  }

  #changed(): void {
    this.#offline?.sessionChanged()
    if (this.#listeners.size === 0) return
    for (const listener of this.#listeners) {
      try {
        listener(this.session)
      } catch (error) {
        // A listener's bug must not fail the call whose reply is already in the session.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }
}

/** Checks a key's read reply; each sibling is a version of its own region, seen by the session. */
function checkKeyRead(body: unknown, regions: number): CheckedRead<ReadReply> {
  const reply = checkReadReply(body, regions)
  if (reply.siblings === undefined) return { reply, observed: [reply] }
  const observed: ReadObservation[] = [reply]
  // The reply's epoch is the newest sibling's position's; the others' are not said.
  for (const s of reply.siblings)
    observed.push({
      ...(s.dc === reply.dc && s.idx === reply.idx ? { epoch: reply.epoch } : {}),
      ts: s.ts,
      dc: s.dc,
      idx: s.idx,
    })
  return { reply, observed }
}

/** The sibling fields of a read result, from its reply. */
function siblingsOf<T>(reply: ReadReply): Pick<ReadResult<T>, 'siblings' | 'versions' | 'context'> {
  if (reply.siblings === undefined)
    return { siblings: undefined, versions: undefined, context: reply.context }
  const versions = reply.siblings.map((s): Sibling<T> => ({
    value: s.value as T | undefined,
    deleted: !('value' in s),
    ts: s.ts,
    dc: s.dc,
  }))
  return {
    siblings: versions.filter((v) => !v.deleted).map((v) => v.value as T),
    versions,
    context: reply.context,
  }
}
