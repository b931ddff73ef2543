/**
 * Transactions (Nami): `db.transaction()` and `db.runTransaction()`. A transaction reads at one
 * snapshot of its region's transaction log (the first read fixes it: at least the session's tid of
 * that region and `minTid`, which covers what the session saw of that region's transactions, and
 * covering what its partition vectors say it saw of other regions' ones), buffers its writes
 * here, and commits them with what it read. The region decides in log order: `applied` when no key
 * it read changed after its snapshot, else `conflict` (nothing written).
 *
 * Reads asked for in the same turn of the event loop go as one request. A commit carries an
 * operation id, so the SDK sends it again when the gateway could not be reached or answered 503
 * (a gateway killed mid-commit): the region decides it once and answers the same. The session
 * records every version read, every partition written and the tids seen, so later calls (and
 * transactions) see at least as much.
 */
import {
  CausewayError,
  HEADER_DT,
  HLC_ZERO,
  type Session,
  type TxCommitReply,
  type TxOutcome,
  type TxReadItem,
  type TxReadReply,
  checkKey,
  formatReadNeed,
  isHlc,
  partitionOf,
} from '@causeway/core'
import { CallDeadline } from './call-deadline.js'
import type { ClientParts } from './client-access.js'
import { checkDurability } from './options.js'
import { checkReplyBounds, isGuardRefusal } from './reply-guard.js'
import type { RegionRef, RegionRoute } from './topology.js'
import { findRegion } from './topology.js'
import type { TransportResponse } from './transport.js'

/** Options of `db.transaction()`. */
export interface TransactionOptions {
  /**
   * The snapshot is at least this tid of the region's log (as a previous commit or read returned
   * it). The session's own tid of the region is always the floor.
   * @default 0
   */
  minTid?: number
  /** The region whose log orders the transaction. @default the home region */
  region?: RegionRef
  /** Deadline of each read and of the commit, in ms. @default the client's default */
  timeoutMs?: number
  /** `'majority'`: the commit returns once a majority of each partition written has it. */
  durability?: 'leader' | 'majority'
  /** Aborts the transaction's calls. */
  signal?: AbortSignal
}

/** Options of `db.runTransaction()`. */
export interface RunTransactionOptions extends TransactionOptions {
  /**
   * How many times to start again after a `conflict` (or `SNAPSHOT_TOO_OLD`) before giving up with
   * `TRANSACTION_CONFLICT`.
   * @default 10
   */
  retries?: number
  /** First pause before a retry, in ms; doubled (with jitter) on each one. @default 5 */
  backoffMs?: number
  /** Longest pause before a retry, in ms. @default 500 */
  maxBackoffMs?: number
}

/** What `commit()` resolves to. */
export interface CommitResult {
  /** The transaction's position in its region's log (its snapshot, for one that wrote nothing). */
  tid: number
  /** `applied`: its writes are in; `conflict`: something it read changed, nothing was written. */
  outcome: TxOutcome
}

/** Makes the transactions of one client: ids, reads batched per turn, commits retried. */
export class TransactionFactory {
  readonly #parts: ClientParts
  readonly #maxKeys: number

  /** `maxKeys`: most keys one read request may name (the cluster's `limits.maxTxKeys`). */
  constructor(parts: ClientParts, maxKeys: number) {
    this.#parts = parts
    this.#maxKeys = maxKeys
  }

  /** A new transaction (no request is sent until its first read or its commit). */
  begin(options: TransactionOptions = {}): Transaction {
    this.#parts.throwIfClosed()
    options.signal?.throwIfAborted()
    const region =
      options.region === undefined
        ? this.#parts.home
        : findRegion(this.#parts.regions, options.region)
    const minTid = options.minTid ?? 0
    if (!Number.isSafeInteger(minTid) || minTid < 0)
      throw new CausewayError('INVALID_OPTION', 'minTid must be a non-negative integer', {
        option: 'minTid',
      })
    if (options.durability !== undefined) checkDurability(options.durability)
    // The client's one sequence of operation ids (the offline engine's, with persist): a commit
    // and the client's single writes never share an id.
    const id = this.#parts.nextOpId()
    return new Transaction(this.#parts, region, id, options, this.#maxKeys)
  }

  /**
   * Runs `fn` in a transaction and commits it; after a conflict (or a snapshot collected under
   * it), waits a little and runs it again in a new one, up to `retries` times. Resolves to what
   * `fn` returned in the transaction that applied.
   */
  async run<R>(
    fn: (tx: Transaction) => R | Promise<R>,
    options: RunTransactionOptions = {},
  ): Promise<R> {
    const retries = options.retries ?? 10
    if (!Number.isSafeInteger(retries) || retries < 0)
      throw new CausewayError('INVALID_OPTION', 'retries must be a non-negative integer', {
        option: 'retries',
      })
    let backoff = options.backoffMs ?? 5
    const maxBackoff = options.maxBackoffMs ?? 500
    for (let attempt = 0; ; attempt++) {
      const tx = this.begin(options)
      let outcome: CommitResult | undefined
      let result: R
      try {
        result = await fn(tx)
        outcome = await tx.commit()
      } catch (error) {
        if (!(error instanceof CausewayError) || error.code !== 'SNAPSHOT_TOO_OLD') throw error
      }
      if (outcome?.outcome === 'applied') return result!
      if (attempt >= retries)
        throw new CausewayError(
          'TRANSACTION_CONFLICT',
          `the transaction conflicted ${attempt + 1} times; gave up after ${retries} retries`,
          { attempts: attempt + 1, tid: outcome?.tid },
        )
      const pause = Math.min(maxBackoff, backoff) * (0.5 + Math.random())
      backoff *= 2
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, pause)
        options.signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer)
            reject(options.signal!.reason)
          },
          { once: true },
        )
      })
    }
  }
}

interface PendingRead {
  key: string
  resolve: (item: TxReadItem) => void
  reject: (error: unknown) => void
}

/** One transaction. Get it from `db.transaction()`. */
export class Transaction {
  /** The transaction's operation id (its commit is applied at most once under it). */
  readonly id: string
  /** The region whose log orders it. */
  readonly region: RegionRoute
  readonly #parts: ClientParts
  readonly #options: TransactionOptions
  readonly #maxKeys: number
  #snapshot: number | undefined
  /** The first read in flight: later reads wait for its snapshot. */
  #fixing: Promise<number> | undefined
  /** Keys read, with the version's tid and the value (JSON text parsed). */
  readonly #reads = new Map<string, { tid: number; value: unknown }>()
  /** Buffered writes: JSON text, or undefined for a delete. */
  readonly #writes = new Map<string, string | undefined>()
  #queued: PendingRead[] = []
  #done = false

  /** @internal Use `db.transaction()`. */
  constructor(
    parts: ClientParts,
    region: RegionRoute,
    id: string,
    options: TransactionOptions,
    maxKeys: number,
  ) {
    this.#parts = parts
    this.region = region
    this.id = id
    this.#options = options
    this.#maxKeys = maxKeys
  }

  /** The snapshot the transaction reads at, once its first read fixed it. */
  get snapshot(): number | undefined {
    return this.#snapshot
  }

  /**
   * The value of `key` in this transaction: what it wrote, else the value at its snapshot
   * (`undefined` when the key has none). Each key is read from the region once.
   */
  async get<T = unknown>(key: string): Promise<T | undefined> {
    this.#check()
    checkKey(key, this.#parts.maxKeyBytes)
    if (this.#writes.has(key)) {
      const text = this.#writes.get(key)
      return text === undefined ? undefined : (JSON.parse(text) as T)
    }
    const known = this.#reads.get(key)
    if (known !== undefined) return known.value as T | undefined
    const item = await new Promise<TxReadItem>((resolve, reject) => {
      this.#queued.push({ key, resolve, reject })
      if (this.#queued.length === 1) queueMicrotask(() => void this.#flush())
    })
    // Another read of the same key in the same batch got there first: one version per key.
    const first = this.#reads.get(key)
    if (first !== undefined) return first.value as T | undefined
    const value = item.found ? item.value : undefined
    this.#reads.set(key, { tid: item.tid, value })
    return value as T | undefined
  }

  /** Writes `value` (any JSON value) to `key` when the transaction commits. */
  put(key: string, value: unknown): void {
    this.#check()
    checkKey(key, this.#parts.maxKeyBytes)
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol')
      throw new CausewayError('INVALID_VALUE', `a value must be JSON; got ${typeof value}`)
    let text: string | undefined
    try {
      text = JSON.stringify(value)
    } catch (cause) {
      throw new CausewayError(
        'INVALID_VALUE',
        `the value cannot be encoded as JSON: ${(cause as Error).message}`,
      )
    }
    if (text === undefined) throw new CausewayError('INVALID_VALUE', 'the value encodes to nothing')
    this.#writes.set(key, text)
  }

  /** Deletes `key` when the transaction commits. */
  delete(key: string): void {
    this.#check()
    checkKey(key, this.#parts.maxKeyBytes)
    this.#writes.set(key, undefined)
  }

  /**
   * Commits: the region appends the transaction to its log and decides it. A transaction that
   * wrote nothing needs no commit: it resolves `applied` at its snapshot without a request.
   * Sent again (same id) after a network failure or a 503, within the deadline.
   */
  async commit(): Promise<CommitResult> {
    this.#check()
    if (this.#queued.length > 0 || this.#fixing !== undefined) await this.#settled()
    this.#done = true
    if (this.#writes.size === 0)
      return { tid: this.#snapshot ?? this.#parts.session.tid(this.region.id), outcome: 'applied' }
    const parts = this.#parts
    const writes = [...this.#writes].map(([key, text]) =>
      text === undefined
        ? `{"key":${JSON.stringify(key)}}`
        : `{"key":${JSON.stringify(key)},"value":${text}}`,
    )
    const reads = [...this.#reads].map(([key, { tid }]) => [key, tid])
    const body =
      `{"id":${JSON.stringify(this.id)},"snapshot":${this.#snapshot ?? 0},` +
      `"reads":${JSON.stringify(reads)},"writes":[${writes.join(',')}]}`
    const dt = parts.session.writeDependency('session')
    const headers: Record<string, string> = { ...parts.headers, 'content-type': 'application/json' }
    if (dt !== HLC_ZERO) headers[HEADER_DT] = dt
    const durability = this.#options.durability ?? parts.defaults.durability
    const reply = (await this.#post(
      `/v1/tx/commit?durability=${durability}`,
      body,
      headers,
      'commit',
      true,
    )) as Partial<TxCommitReply>
    if (
      !isIndex(reply.tid, 1) ||
      (reply.outcome !== 'applied' && reply.outcome !== 'conflict') ||
      (reply.ts !== undefined && !isHlc(reply.ts)) ||
      (reply.writes !== undefined &&
        (!Array.isArray(reply.writes) ||
          !reply.writes.every(
            (w) =>
              isIndex(w.p, 0) &&
              w.p < parts.partitions &&
              isIndex(w.idx, 1) &&
              isIndex(w.epoch, 1) &&
              isIndex(w.dc, 0),
          )))
    )
      throw new CausewayError('INTERNAL', 'the gateway sent a malformed commit reply', {
        body: reply,
      })
    checkReplyBounds(
      'commit',
      reply,
      [
        ['tid', reply.tid, 1],
        ...(reply.writes ?? []).flatMap((w) => [
          ['write idx', w.idx, 1] as const,
          ['write epoch', w.epoch, 1] as const,
        ]),
      ],
      [['ts', reply.ts]],
    )
    const session: Session = parts.session
    if (reply.outcome === 'applied' && reply.ts !== undefined)
      for (const w of reply.writes ?? [])
        session.observeWrite(w.p, { dc: w.dc, idx: w.idx, ts: reply.ts, epoch: w.epoch })
    session.observeTid(this.region.id, reply.tid)
    parts.changed()
    return { tid: reply.tid, outcome: reply.outcome }
  }

  #check(): void {
    this.#parts.throwIfClosed()
    this.#options.signal?.throwIfAborted()
    if (this.#done) throw new CausewayError('INVALID_REQUEST', 'the transaction was committed')
  }

  // Resolves once every read asked for so far has been answered (or failed).
  async #settled(): Promise<void> {
    while (this.#queued.length > 0 || this.#fixing !== undefined) {
      if (this.#queued.length > 0) await this.#flush()
      if (this.#fixing !== undefined) await this.#fixing.catch(() => undefined)
    }
  }

  // Sends the reads queued in this turn: one request per `maxKeys` keys.
  async #flush(): Promise<void> {
    // The first read fixes the snapshot: the others wait for it, then go together.
    if (this.#snapshot === undefined && this.#fixing !== undefined) {
      await this.#fixing.catch(() => undefined)
    }
    const queued = this.#queued.splice(0)
    if (queued.length === 0) return
    const byKey = new Map<string, PendingRead[]>()
    for (const r of queued) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r])
    const all = [...byKey.keys()]
    const chunks: string[][] = []
    for (let i = 0; i < all.length; i += this.#maxKeys) chunks.push(all.slice(i, i + this.#maxKeys))
    // Without a snapshot yet, the first request fixes it and the others follow.
    const [first, ...rest] = chunks
    const failed = await this.#send(first!, byKey)
    if (failed !== undefined && this.#snapshot === undefined) {
      for (const keys of rest)
        for (const key of keys) for (const r of byKey.get(key)!) r.reject(failed)
      return
    }
    await Promise.all(rest.map((keys) => this.#send(keys, byKey)))
  }

  // One read request for `keys`; settles their pending reads; resolves to its error, if any.
  async #send(keys: string[], waiting: ReadonlyMap<string, PendingRead[]>): Promise<unknown> {
    const batch = keys.flatMap((key) => waiting.get(key)!)
    const parts = this.#parts
    const payload: Record<string, unknown> = { keys }
    if (this.#snapshot !== undefined) payload.snapshot = this.#snapshot
    else {
      payload.minTid = Math.max(this.#options.minTid ?? 0, parts.session.tid(this.region.id))
      // What the session saw of other regions' transactions (its tid covers this region's).
      const after: Record<string, string> = {}
      for (const p of parts.session.touched()) {
        const need = parts.session.readNeed(p, 'session')
        if (need === undefined) continue
        const foreign = {
          ...need,
          need: need.need.map((idx, d) => (d === this.region.id ? 0 : idx)),
        }
        const text = formatReadNeed(foreign)
        if (text !== undefined) after[p] = text
      }
      if (Object.keys(after).length > 0) payload.after = after
    }
    const sending = this.#post(
      '/v1/tx/read',
      JSON.stringify(payload),
      { ...parts.headers, 'content-type': 'application/json' },
      'read',
      false,
    ).then((body) => this.#recordRead(body as TxReadReply, keys))
    if (this.#snapshot === undefined) {
      const fixing = sending.then(() => this.#snapshot!)
      this.#fixing = fixing
      fixing.then(
        () => this.#unfix(fixing),
        () => this.#unfix(fixing),
      )
    }
    try {
      const items = new Map((await sending).map((item) => [item.key, item]))
      for (const r of batch) r.resolve(items.get(r.key)!)
      return undefined
    } catch (error) {
      for (const r of batch) r.reject(error)
      return error
    }
  }

  #unfix(fixing: Promise<number>): void {
    if (this.#fixing === fixing) this.#fixing = undefined
  }

  // Checks a read reply and records it in the session; returns its items.
  #recordRead(reply: TxReadReply, keys: readonly string[]): TxReadItem[] {
    const parts = this.#parts
    const regions = parts.regions.length
    if (
      typeof reply !== 'object' ||
      reply === null ||
      !isIndex(reply.snapshot, 0) ||
      !Array.isArray(reply.items) ||
      reply.items.length !== keys.length ||
      (this.#snapshot !== undefined && reply.snapshot !== this.#snapshot) ||
      !reply.items.every(
        (item, i) =>
          item.key === keys[i] &&
          typeof item.found === 'boolean' &&
          isIndex(item.tid, 0) &&
          item.tid <= reply.snapshot &&
          isIndex(item.epoch, 1) &&
          item.p === partitionOf(item.key, parts.partitions) &&
          (item.tid === 0 ||
            (isHlc(item.ts) && isIndex(item.dc, 0) && item.dc < regions && isIndex(item.idx, 0))),
      )
    )
      throw new CausewayError('INTERNAL', 'the gateway sent a malformed transactional read reply', {
        body: reply,
      })
    checkReplyBounds(
      'transactional read',
      reply,
      [
        ['snapshot', reply.snapshot, 0],
        ...reply.items.flatMap((item) => [
          ['item tid', item.tid, 0] as const,
          ['item epoch', item.epoch, 1] as const,
          ['item idx', item.idx, 0] as const,
        ]),
      ],
      reply.items.map((item) => ['item ts', item.ts] as const),
    )
    this.#snapshot = reply.snapshot
    parts.session.observeTid(this.region.id, reply.snapshot)
    for (const item of reply.items)
      if (item.tid > 0)
        parts.session.observeRead(item.p, {
          dc: item.dc!,
          idx: item.idx!,
          ts: item.ts!,
          epoch: item.epoch,
        })
    parts.changed()
    return reply.items
  }

  // POSTs `body`; with `resend`, sends it again on a network failure or a 503 until the deadline.
  async #post(
    path: string,
    body: string,
    headers: Record<string, string>,
    what: string,
    resend: boolean,
  ): Promise<unknown> {
    const parts = this.#parts
    const timeoutMs = parts.timeout(this.#options.timeoutMs)
    const deadline = new CallDeadline(timeoutMs, this.#options.signal, parts.closing)
    const url = `${this.region.url}${path}${path.includes('?') ? '&' : '?'}timeoutMs=${Math.max(0, timeoutMs - 50)}`
    let pause = 20
    try {
      for (;;) {
        let res: TransportResponse | undefined
        let failure: CausewayError | undefined
        try {
          res = await parts.transport.request({
            method: 'POST',
            url,
            headers,
            body,
            signal: deadline.signal,
          })
        } catch (cause) {
          if (isGuardRefusal(cause)) throw cause
          deadline.throwIfStopped(
            `transaction ${what}${resend ? ' (it may or may not have been applied)' : ''}`,
          )
          failure = new CausewayError(
            'NETWORK_ERROR',
            `cannot reach the gateway of region ${this.region.name} (${this.region.url}): ${cause instanceof Error ? cause.message : String(cause)}`,
            { region: this.region.id, url: this.region.url },
            { cause },
          )
        }
        if (res !== undefined) {
          if (res.status === 200) return res.body
          failure = CausewayError.fromBody(res.body, res.status)
          if (res.status !== 503) throw failure
        }
        if (!resend || deadline.remaining() < pause + 50) throw failure!
        await new Promise((resolve) => setTimeout(resolve, pause))
        pause = Math.min(pause * 2, 1000)
        deadline.throwIfStopped(`transaction ${what}`)
      }
    } finally {
      deadline.dispose()
    }
  }
}

function isIndex(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min
}
