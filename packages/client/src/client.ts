/**
 * The client: `get`, `put` and `delete` with per-call consistency levels over the NuKV session
 * (Algorithm 1). Each call validates its input, computes the key's partition once, sends the
 * vector (reads) or dependency time (writes) its level picks, and records the reply in the
 * session. Reads fall back to the region's leader and the home region on
 * `SESSION_NOT_AVAILABLE` (see `read-retry.ts`); writes are never retried.
 */
import {
  CausewayError,
  HLC_ZERO,
  type Hlc,
  type ReplicaChoice,
  type Session,
  SessionNotAvailableError,
  type Topology,
  type WriteLevel,
  checkKey,
  formatReadNeed,
  partitionOf,
  utf8Length,
} from '@causeway/core'
import { CallDeadline } from './call-deadline.js'
import { HEADER_AFTER, HEADER_DT } from '@causeway/core'
import {
  type ReadOptions,
  type ResolvedDefaults,
  type WriteOptions,
  checkDurability,
  checkRead,
  checkReplica,
  checkRetry,
  checkTimeout,
  checkWrite,
} from './options.js'
import { checkReadReply, checkWriteReply } from './replies.js'
import {
  type ReadRetryScope,
  STEP_HOME,
  STEP_LEADER,
  nextStep,
  replyReserve,
  stepsAfter,
  waitShare,
} from './read-retry.js'
import { type RegionRoute, findRegion } from './topology.js'
import type { Transport, TransportResponse } from './transport.js'

/** What `get` resolves to. */
export interface ReadResult<T = unknown> {
  /** Whether the key holds a value (false for a key never written or deleted). */
  found: boolean
  /** The value; undefined when not found. */
  value: T | undefined
  /** HLC of the returned version (also of a tombstone); undefined for a key never written. */
  ts: Hlc | undefined
  /** Origin region of the returned version. */
  dc: number | undefined
  /** The serving replica's `sv[dc]`. */
  idx: number | undefined
  /** The partition's epoch at the serving replica. */
  epoch: number
  /** Id of the region that served the read. */
  region: number
  /** The replica (within its region) that served the read. */
  replica: number
  /** How long the replica waited for the session, in ms. */
  waitedMs: number
  /** How many requests the read took (more than 1 after a retry). */
  attempts: number
}

/** What `put` and `delete` resolve to. */
export interface WriteResult {
  /** HLC the leader gave the write. */
  ts: Hlc
  /** Region whose leader took the write (the origin of the new version). */
  dc: number
  /** The write's index in its origin region's log of the partition. */
  idx: number
  /** The partition's epoch. */
  epoch: number
  /** Id of the region that took the write. */
  region: number
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
}

const VALUE_ENVELOPE = '{"value":}'.length

/** A connected client. Create one with `connect()`. */
export class Causeway {
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
  readonly #headers: Record<string, string>
  readonly #closing = new AbortController()
  readonly #listeners = new Set<SessionListener>()
  readonly #partitions: number
  readonly #maxKeyBytes: number
  readonly #maxValueBytes: number
  readonly #maxTimeoutMs: number

  /** @internal Use `connect()`. */
  constructor(init: CausewayInit) {
    this.topology = init.topology
    this.session = init.session
    this.regions = init.regions
    this.home = init.home
    this.defaults = Object.freeze({ ...init.defaults })
    this.#transport = init.transport
    this.#ownsTransport = init.ownsTransport
    this.#headers = init.headers
    this.#partitions = init.topology.partitions
    this.#maxKeyBytes = init.topology.limits.maxKeyBytes
    this.#maxValueBytes = init.topology.limits.maxValueBytes
    this.#maxTimeoutMs = init.topology.limits.maxTimeoutMs
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
   * Reads `key` at the call's read level. Resolves once a replica that covers the session's
   * vector for the key's partition has answered; rejects with `SessionNotAvailableError` when no
   * replica could within the deadline (after the retries), `TIMEOUT` or `NETWORK_ERROR`.
   */
  async get<T = unknown>(key: string, options?: ReadOptions): Promise<ReadResult<T>> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    const d = this.defaults
    const level = options?.read === undefined ? d.read : checkRead(options.read)
    const replica = options?.replica === undefined ? d.replica : checkReplica(options.replica)
    const timeoutMs = this.#timeout(options?.timeoutMs)
    const retry = options?.retry === undefined ? d.retry : checkRetry(options.retry)
    const target =
      options?.region === undefined ? this.home : findRegion(this.regions, options.region)

    const p = partitionOf(key, this.#partitions)
    const need = this.session.readNeed(p, level)
    // Computed once: every attempt, retries included, sends exactly this vector.
    const after = need && formatReadNeed(need)
    const path = '/v1/kv/' + encodeURIComponent(key) + '?level=' + level + '&replica='
    const scope: ReadRetryScope = {
      retry,
      askedLeader: replica === 'leader',
      awayFromHome: target !== this.home,
    }
    const headers = { ...this.#headers }
    if (after !== undefined) headers[HEADER_AFTER] = after
    const reserve = replyReserve(timeoutMs)
    const deadline = new CallDeadline(timeoutMs, options?.signal, this.#closing.signal)
    let step = 0
    let attempts = 0
    let lastRefusal: CausewayError | undefined
    try {
      for (;;) {
        const region = step === STEP_HOME ? this.home : target
        const choice: ReplicaChoice = step === 0 ? replica : step === STEP_LEADER ? 'leader' : 'any'
        const waitMs = waitShare(deadline.remaining(), reserve, stepsAfter(step, scope))
        // A fallback with no time left to wait cannot succeed where the last attempt failed.
        if (waitMs <= 0 && lastRefusal) throw finalRefusal(lastRefusal, attempts)
        deadline.throwIfStopped(`get ${JSON.stringify(key)}`, { attempts })
        attempts++
        let res: TransportResponse
        try {
          res = await this.#transport.request({
            method: 'GET',
            url: region.url + path + choice + '&timeoutMs=' + waitMs,
            headers,
            signal: deadline.signal,
          })
        } catch (cause) {
          deadline.throwIfStopped(`get ${JSON.stringify(key)}`, { attempts })
          lastRefusal = unreachable(region, cause)
          step = nextStep(step, scope, 'unreachable', false)
          if (step < 0) throw lastRefusal
          continue
        }
        if (res.status === 200) {
          const reply = checkReadReply(res.body, this.regions.length)
          this.session.observeRead(p, reply)
          this.#changed()
          return {
            found: reply.found,
            value: reply.found ? (reply.value as T) : undefined,
            ts: reply.ts,
            dc: reply.dc,
            idx: reply.idx,
            epoch: reply.epoch,
            region: reply.region,
            replica: reply.replica,
            waitedMs: reply.waitedMs,
            attempts,
          }
        }
        const error = CausewayError.fromBody(res.body, res.status)
        if (error.code !== 'SESSION_NOT_AVAILABLE' && !isUnavailable(error)) throw error
        lastRefusal = error
        const leaderServed = error.details?.role === 'leader'
        step = nextStep(step, scope, isUnavailable(error) ? 'unreachable' : 'session', leaderServed)
        if (step < 0) throw finalRefusal(error, attempts)
      }
    } finally {
      deadline.dispose()
    }
  }

  /**
   * Writes `value` (any JSON value) to `key` at the leader of the call's region, with the
   * dependency time the call's write level picks. Not retried: on `TIMEOUT` or `NETWORK_ERROR` the
   * write may or may not have been applied.
   */
  async put(key: string, value: unknown, options?: WriteOptions): Promise<WriteResult> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    return this.#write('PUT', key, this.#encodeValue(value), options)
  }

  /** Deletes `key` (writes a tombstone); otherwise exactly like {@link Causeway.put}. */
  async delete(key: string, options?: WriteOptions): Promise<WriteResult> {
    this.#throwIfClosed()
    options?.signal?.throwIfAborted()
    checkKey(key, this.#maxKeyBytes)
    return this.#write('DELETE', key, undefined, options)
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
    if (this.#ownsTransport) await this.#transport.close?.()
  }

  async #write(
    method: 'PUT' | 'DELETE',
    key: string,
    body: string | undefined,
    options: WriteOptions | undefined,
  ): Promise<WriteResult> {
    const d = this.defaults
    const level: WriteLevel = options?.write === undefined ? d.write : checkWrite(options.write)
    const durability =
      options?.durability === undefined ? d.durability : checkDurability(options.durability)
    const timeoutMs = this.#timeout(options?.timeoutMs)
    const region =
      options?.region === undefined ? this.home : findRegion(this.regions, options.region)

    const p = partitionOf(key, this.#partitions)
    const dt = this.session.writeDependency(level)
    const headers = { ...this.#headers }
    if (dt !== HLC_ZERO) headers[HEADER_DT] = dt
    if (body !== undefined) headers['content-type'] = 'application/json'
    const url =
      region.url +
      '/v1/kv/' +
      encodeURIComponent(key) +
      '?level=' +
      level +
      '&durability=' +
      durability
    const what = `${method === 'PUT' ? 'put' : 'delete'} ${JSON.stringify(key)}`
    const deadline = new CallDeadline(timeoutMs, options?.signal, this.#closing.signal)
    let res: TransportResponse
    try {
      res = await this.#transport.request({ method, url, headers, body, signal: deadline.signal })
    } catch (cause) {
      // The request may have reached the leader: say so, and do not resend it.
      deadline.throwIfStopped(`${what} (it may or may not have been applied)`)
      throw unreachable(region, cause, ' (the write may or may not have been applied)')
    } finally {
      deadline.dispose()
    }
    if (res.status !== 200) throw CausewayError.fromBody(res.body, res.status)
    const reply = checkWriteReply(res.body, this.regions.length)
    this.session.observeWrite(p, reply)
    this.#changed()
    return { ts: reply.ts, dc: reply.dc, idx: reply.idx, epoch: reply.epoch, region: reply.region }
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

/** A gateway that answers but cannot serve now (shutting down, backend down): try elsewhere. */
function isUnavailable(error: CausewayError): boolean {
  return error.code === 'SHUTTING_DOWN' || error.code === 'BACKEND_UNAVAILABLE'
}

function unreachable(region: RegionRoute, cause: unknown, note = ''): CausewayError {
  const why = cause instanceof Error ? cause.message : String(cause)
  return new CausewayError(
    'NETWORK_ERROR',
    `cannot reach the gateway of region ${region.name} (${region.url}): ${why}${note}`,
    { region: region.id, url: region.url },
    { cause },
  )
}

function finalRefusal(error: CausewayError, attempts: number): CausewayError {
  // By code, not instanceof: the brand check makes every CausewayError pass `instanceof` here.
  if (error.code !== 'SESSION_NOT_AVAILABLE') return error
  return new SessionNotAvailableError(
    `${error.message} (after ${attempts} attempt${attempts === 1 ? '' : 's'})`,
    { ...error.details, attempts },
  )
}
