/**
 * The two exchanges every call of the SDK is made of, for keys (`client.ts`) and sets (`set.ts`)
 * alike, and what they reach of a {@link Causeway} (its transport, session, routes and defaults).
 *
 * A read sends the session's vector for its partition and retries as `read-retry.ts` says; a
 * write sends the dependency time its level picks and is never retried. Either way the reply is
 * checked and then recorded in the session here, and only here (NuKV Algorithm 1).
 */
import {
  CausewayError,
  EpochMismatchError,
  HEADER_AFTER,
  HEADER_CLOCK,
  HEADER_CONTEXT,
  HEADER_DT,
  HEADER_OP_ID,
  HLC_ZERO,
  SessionNotAvailableError,
  formatClock,
  formatReadNeed,
  type Durability,
  type ErrorCode,
  type Hlc,
  type ReadObservation,
  type ReplicaChoice,
  type Session,
  type WriteLevel,
} from '@causeway/core'
import { AttemptCutoff, CallDeadline } from './call-deadline.js'
import type { WriteResult } from './client.js'
import type { OfflineEngine } from './offline/engine.js'
import {
  checkDurability,
  checkEpochMismatch,
  checkFallback,
  checkRead,
  checkReplica,
  checkRetry,
  checkWrite,
  type ReadOptions,
  type ResolvedDefaults,
  type WriteOptions,
} from './options.js'
import { ReadRetryPlan, replyReserve, type AttemptFailure, type ReadAttempt } from './read-retry.js'
import { sendWithRateLimitBackoff } from './rate-limit-backoff.js'
import { checkWriteReply } from './replies.js'
import { isGuardRefusal, type ReplyGuard } from './reply-guard.js'
import { findRegion, type RegionRoute } from './topology.js'
import type { Transport, TransportResponse } from './transport.js'

/** The parts of a client its calls use. */
export interface ClientParts {
  /** Guarded (`reply-guard.ts`): credentials to trusted origins only, replies capped. */
  readonly transport: Transport
  /** What the transport's guard enforces, for the change feed (which streams with `fetch`). */
  readonly guard: ReplyGuard
  /** Headers of every request. */
  readonly headers: Record<string, string>
  readonly session: Session
  readonly regions: readonly RegionRoute[]
  readonly home: RegionRoute
  readonly defaults: Readonly<ResolvedDefaults>
  readonly partitions: number
  readonly maxKeyBytes: number
  /**
   * The cluster ships causally (`shipping: 'causal'`): every version a reply shows goes into the
   * session's vector clock, and the `causal` levels are taken.
   */
  readonly causal: boolean
  /** Aborted when the client closes. */
  readonly closing: AbortSignal
  /** The offline engine (`connect({ persist })`), once started. */
  readonly offline: OfflineEngine | undefined
  /** The next operation id of this client. */
  nextOpId(): string
  /** The call's timeout, checked, or the default. */
  timeout(timeoutMs: number | undefined): number
  /** Tells the session listeners the session changed. */
  changed(): void
  throwIfClosed(): void
}

/** A read reply, checked, and what it tells the session about the read's partition. */
export interface CheckedRead<R> {
  reply: R
  /** Every version the reply shows (each one of its own region); recorded in the session. */
  observed: readonly ReadObservation[]
}

/** One read exchange: a `GET` of `path` (its query so far), retried on refusals. */
export interface ReadCall<R> {
  /** Partition the read's vector is for. */
  partition: number
  /** Path and query without `level`, `replica` and `timeoutMs` (the call adds them). */
  path: string
  /** For error messages: `get "x"`. */
  what: string
  options: ReadOptions | undefined
  /**
   * Checks a success reply's body, throwing `INTERNAL` when it is malformed. Runs before anything
   * is recorded, so a malformed reply leaves the session alone.
   */
  check(body: unknown, regions: number): CheckedRead<R>
}

/** A successful read: the checked reply (already recorded) and the attempts it took. */
export interface ReadOutcome<R> {
  reply: R
  attempts: number
}

/** One request of a read, as its final error reports it (`details.tried`). */
export interface TriedAttempt {
  /** Id of the region it went to. */
  region: number
  /** Name of that region. */
  regionName: string
  replica: ReplicaChoice
  /** How long its replica was allowed to wait, in ms. */
  waitMs: number
  /** Why it failed. */
  code: ErrorCode
}

/**
 * Sends a read with the session's vector for `call.partition`, retrying as `read-retry.ts` says
 * (the region's leader on `SESSION_NOT_AVAILABLE`, then, with `fallback: 'home'`, the home region
 * when the region cannot serve in time or is unavailable), and records the reply in the session.
 */
export async function readCall<R>(parts: ClientParts, call: ReadCall<R>): Promise<ReadOutcome<R>> {
  const { options } = call
  const { region: target, timeoutMs } = callScope(parts, options)
  const d = parts.defaults
  const level = options?.read === undefined ? d.read : checkRead(options.read)
  const replica = options?.replica === undefined ? d.replica : checkReplica(options.replica)
  const retry = options?.retry === undefined ? d.retry : checkRetry(options.retry)
  const fallback = options?.fallback === undefined ? d.fallback : checkFallback(options.fallback)
  checkCausal(parts, level)
  let rebase = epochPolicy(parts.defaults.onEpochMismatch, options?.onEpochMismatch) === 'rebase'
  const headers = { ...parts.headers }
  // Computed once: every attempt, retries and the home fallback included, sends exactly this
  // (unless the session is re-based on what a failover kept, once).
  const setNeed = () => {
    const need = parts.session.readNeed(call.partition, level)
    const after = need && formatReadNeed(need)
    if (after !== undefined) headers[HEADER_AFTER] = after
    else delete headers[HEADER_AFTER]
  }
  setNeed()
  const clock = level === 'causal' ? formatClock(parts.session.clock()) : undefined
  if (clock !== undefined) headers[HEADER_CLOCK] = clock
  const separator = call.path.includes('?') ? '&' : '?'
  const path = `${call.path}${separator}level=${level}&replica=`
  const deadline = new CallDeadline(timeoutMs, options?.signal, parts.closing)
  const plan = new ReadRetryPlan(
    { retry, replica, toHome: fallback === 'home' && target !== parts.home },
    deadline.at - timeoutMs,
    timeoutMs,
  )
  const tried: TriedAttempt[] = []
  let attempt: ReadAttempt | undefined = plan.first(Date.now())
  let last: CausewayError | undefined
  try {
    while (attempt !== undefined) {
      if (deadline.signal.aborted) deadline.throwIfStopped(call.what, triedDetails(tried))
      const region = attempt.home ? parts.home : target
      const cutoff =
        attempt.cutoffAt === undefined
          ? undefined
          : new AttemptCutoff(deadline, attempt.cutoffAt - Date.now())
      let res: TransportResponse | undefined
      try {
        res = await sendWithRateLimitBackoff(
          parts.transport,
          {
            method: 'GET',
            url: region.url + path + attempt.replica + '&timeoutMs=' + attempt.waitMs,
            headers,
            signal: cutoff?.signal ?? deadline.signal,
          },
          deadline,
        )
      } catch (cause) {
        if (isGuardRefusal(cause)) throw cause
        if (deadline.signal.aborted) {
          const code = deadline.stoppedBy === 'closed' ? 'SHUTTING_DOWN' : 'TIMEOUT'
          deadline.throwIfStopped(call.what, triedDetails(tried, triedOf(region, attempt, code)))
        }
        last = cutoff?.fired === true ? noReply(region, attempt) : unreachable(region, cause)
      } finally {
        cutoff?.dispose()
      }
      let why: AttemptFailure = 'unreachable'
      if (res !== undefined) {
        if (res.status === 200) {
          const { reply, observed } = call.check(res.body, parts.regions.length)
          for (const o of observed) {
            parts.session.observeRead(call.partition, o)
            if (parts.causal && o.dc !== undefined && o.ts !== undefined)
              parts.session.observeClock(o.dc, o.ts)
          }
          parts.changed()
          return { reply, attempts: tried.length + 1 }
        }
        last = CausewayError.fromBody(res.body, res.status)
        if (rebase && rebased(parts, call.partition, last)) {
          // Once: the session no longer depends on what the failover lost; ask again.
          rebase = false
          setNeed()
          continue
        }
        if (last.code === 'SESSION_NOT_AVAILABLE') why = 'session'
        // A 5xx says this gateway cannot serve now (draining, backend down, a proxy's 502):
        // another region may. Anything else is about the request, and the same everywhere.
        else if (res.status < 500) throw last
      }
      tried.push(triedOf(region, attempt, last!.code))
      attempt = plan.next(Date.now(), why)
    }
    throw finalError(last!, tried)
  } finally {
    deadline.dispose()
  }
}

/** One write exchange: `method` on `path` at the leader of the call's region. */
export interface WriteCall {
  method: 'PUT' | 'DELETE' | 'POST'
  partition: number
  /** Path without query. */
  path: string
  /** JSON text; undefined for a request without a body (a delete). */
  body: string | undefined
  /** For error messages: `put "x"`. */
  what: string
  options: Omit<WriteOptions, 'context'> | undefined
  /** Siblings namespaces: the causal context the write supersedes (`causeway-context`). */
  context?: string | undefined
  /**
   * Also send the session's vector for the partition (`causeway-after`), so the leader first
   * covers what the session has read and written.
   */
  withVector?: boolean
  /**
   * The route takes `timeoutMs`, how long its leader may wait to cover that vector (the set
   * routes do; the kv routes refuse it).
   */
  leaderWaits?: boolean
  /** The write's operation id (`causeway-op-id`): a repeat of it is never applied twice. */
  opId: string
}

/** A write's level, durability, region and deadline, from its options and the defaults, checked. */
export interface WriteScope {
  region: RegionRoute
  timeoutMs: number
  level: WriteLevel
  durability: Durability
}

/** Checks a write's options (see {@link WriteScope}). */
export function writeScope(
  parts: ClientParts,
  options: Omit<WriteOptions, 'context'> | undefined,
): WriteScope {
  const { region, timeoutMs } = callScope(parts, options)
  const d = parts.defaults
  const level: WriteLevel = options?.write === undefined ? d.write : checkWrite(options.write)
  checkCausal(parts, level)
  return {
    region,
    timeoutMs,
    level,
    durability:
      options?.durability === undefined ? d.durability : checkDurability(options.durability),
  }
}

/**
 * Sends a write with the dependency time its level picks and records the reply in the session.
 * Never retried: a failed send may or may not have been applied.
 */
export async function writeCall(parts: ClientParts, call: WriteCall): Promise<WriteResult> {
  const { options } = call
  const { region, timeoutMs, level, durability } = writeScope(parts, options)
  const dt: Hlc = parts.session.writeDependency(level)
  const headers = { ...parts.headers }
  headers[HEADER_OP_ID] = call.opId
  if (dt !== HLC_ZERO) headers[HEADER_DT] = dt
  const clock = level === 'causal' ? formatClock(parts.session.clock()) : undefined
  if (clock !== undefined) headers[HEADER_CLOCK] = clock
  if (call.context !== undefined) headers[HEADER_CONTEXT] = call.context
  if (call.body !== undefined) headers['content-type'] = 'application/json'
  // The positions the write follows: the leader refuses it (EPOCH_MISMATCH) when a failover lost
  // one of them, rather than apply it without what it follows. With `withVector` the leader also
  // first covers everything the session read and wrote.
  const setNeed = () => {
    const need =
      level === 'eventual'
        ? undefined
        : call.withVector === true
          ? parts.session.readNeed(call.partition, 'session')
          : parts.session.writeNeed(call.partition, level)
    const after = need && formatReadNeed(need)
    if (after !== undefined) headers[HEADER_AFTER] = after
    else delete headers[HEADER_AFTER]
  }
  setNeed()
  let rebase = epochPolicy(parts.defaults.onEpochMismatch, options?.onEpochMismatch) === 'rebase'
  let url = region.url + call.path + '?level=' + level + '&durability=' + durability
  if (call.leaderWaits === true)
    url += '&timeoutMs=' + Math.floor(Math.max(0, timeoutMs - replyReserve(timeoutMs)))
  const deadline = new CallDeadline(timeoutMs, options?.signal, parts.closing)
  let res: TransportResponse
  try {
    for (;;) {
      try {
        res = await sendWithRateLimitBackoff(
          parts.transport,
          { method: call.method, url, headers, body: call.body, signal: deadline.signal },
          deadline,
        )
      } catch (cause) {
        if (isGuardRefusal(cause)) throw cause
        // The request may have reached the leader: say so, and do not resend it.
        deadline.throwIfStopped(`${call.what} (it may or may not have been applied)`)
        throw unreachable(region, cause, ' (the write may or may not have been applied)')
      }
      if (res.status === 200) break
      const error = CausewayError.fromBody(res.body, res.status)
      // EPOCH_MISMATCH refuses a write before anything is applied: sent again once re-based.
      if (rebase && rebased(parts, call.partition, error)) {
        rebase = false
        setNeed()
        continue
      }
      throw error
    }
  } finally {
    deadline.dispose()
  }
  const reply = checkWriteReply(res.body, parts.regions.length)
  parts.session.observeWrite(call.partition, reply)
  if (parts.causal) parts.session.observeClock(reply.dc, reply.ts)
  parts.changed()
  return {
    pending: false,
    opId: call.opId,
    ts: reply.ts,
    dc: reply.dc,
    idx: reply.idx,
    epoch: reply.epoch,
    region: reply.region,
    context: reply.context,
  }
}

/** A `causal` call needs a cluster that ships causally (the gateway says the same). */
function checkCausal(parts: ClientParts, level: string): void {
  if (level === 'causal' && !parts.causal)
    throw new CausewayError(
      'INVALID_LEVEL',
      "level causal needs a cluster with shipping: 'causal'; this one ships fifo (use session)",
      { level, shipping: 'fifo' },
    )
}

/** A call's `onEpochMismatch`, or the client's. */
function epochPolicy(fallback: 'throw' | 'rebase', asked: unknown): 'throw' | 'rebase' {
  return asked === undefined ? fallback : checkEpochMismatch(asked)
}

/**
 * Re-bases the session's row of `partition` on what a failover kept, when `error` is an
 * `EPOCH_MISMATCH` of that partition naming the lost positions; resolves whether it changed
 * anything (so a retry can succeed).
 */
function rebased(parts: ClientParts, partition: number, error: CausewayError): boolean {
  if (!(error instanceof EpochMismatchError)) return false
  if (error.partition !== undefined && error.partition !== partition) return false
  const changed = parts.session.rebase(partition, error.lost)
  if (changed) parts.changed()
  return changed
}

/**
 * The start of every exchange: a closed client or an aborted call goes no further; then the
 * region the call goes to and its time budget, checked.
 */
function callScope(
  parts: ClientParts,
  options: Pick<ReadOptions, 'region' | 'timeoutMs' | 'signal'> | undefined,
): { region: RegionRoute; timeoutMs: number } {
  parts.throwIfClosed()
  options?.signal?.throwIfAborted()
  return {
    region: options?.region === undefined ? parts.home : findRegion(parts.regions, options.region),
    timeoutMs: parts.timeout(options?.timeoutMs),
  }
}

/**
 * The error of a call whose gateway could not be reached; `details.url` is the URL that failed
 * when the transport says (the fetch transport does), else the region's.
 */
function unreachable(region: RegionRoute, cause: unknown, note = ''): CausewayError {
  const why = cause instanceof Error ? cause.message : String(cause)
  const failed = cause instanceof CausewayError ? cause.details?.url : undefined
  return new CausewayError(
    'NETWORK_ERROR',
    `cannot reach the gateway of region ${region.name} (${region.url}): ${why}${note}`,
    { region: region.id, url: typeof failed === 'string' ? failed : region.url },
    { cause },
  )
}

/** The error of a read attempt that a region did not answer before its share ran out. */
function noReply(region: RegionRoute, attempt: ReadAttempt): CausewayError {
  return new CausewayError(
    'TIMEOUT',
    `no reply from the gateway of region ${region.name} (${region.url}) in time to fall back to the home region (its replica was allowed ${attempt.waitMs} ms)`,
    { region: region.id, url: region.url },
  )
}

function triedOf(region: RegionRoute, attempt: ReadAttempt, code: ErrorCode): TriedAttempt {
  return {
    region: region.id,
    regionName: region.name,
    replica: attempt.replica,
    waitMs: attempt.waitMs,
    code,
  }
}

/** The details a read stopped by its deadline or `close()` carries: the attempts so far. */
function triedDetails(
  tried: readonly TriedAttempt[],
  inFlight?: TriedAttempt,
): Record<string, unknown> {
  const all = inFlight ? [...tried, inFlight] : [...tried]
  return { attempts: all.length, tried: all }
}

/** `eu any ≤450 ms → SESSION_NOT_AVAILABLE; us any ≤430 ms → NETWORK_ERROR` */
function describeTried(tried: readonly TriedAttempt[]): string {
  return tried.map((t) => `${t.regionName} ${t.replica} ≤${t.waitMs} ms → ${t.code}`).join('; ')
}

/**
 * The error a read throws after its last attempt: the last one's code, with every attempt in
 * `details.tried` (and `details.attempts`), named in the message when there was more than one.
 */
function finalError(error: CausewayError, tried: readonly TriedAttempt[]): CausewayError {
  const attempts = tried.length
  const details = { ...error.details, attempts, tried }
  if (error.code === 'SESSION_NOT_AVAILABLE') {
    const after = `after ${attempts} attempt${attempts === 1 ? '' : 's'}`
    const what = attempts === 1 ? after : `${after}: ${describeTried(tried)}`
    return new SessionNotAvailableError(`${error.message} (${what})`, details)
  }
  const message =
    attempts === 1 ? error.message : `${error.message} (tried ${describeTried(tried)})`
  return new CausewayError(error.code, message, details, { cause: error.cause ?? error })
}
