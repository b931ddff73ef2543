/**
 * What a part of the SDK built on a {@link Causeway} (such as `db.set(name)`) reaches of it: its
 * transport, session, routes and defaults, plus the two read and write exchanges every call is
 * made of, with NuKV's session bookkeeping and the read retries of `read-retry.ts`.
 */
import {
  CausewayError,
  HEADER_AFTER,
  HEADER_DT,
  HLC_ZERO,
  SessionNotAvailableError,
  formatReadNeed,
  type Hlc,
  type ReadLevel,
  type ReplicaChoice,
  type Session,
  type WriteLevel,
} from '@causeway/core'
import { CallDeadline } from './call-deadline.js'
import {
  checkDurability,
  checkRead,
  checkReplica,
  checkRetry,
  checkWrite,
  type ReadOptions,
  type ResolvedDefaults,
  type WriteOptions,
} from './options.js'
import {
  STEP_HOME,
  STEP_LEADER,
  nextStep,
  replyReserve,
  stepsAfter,
  waitShare,
  type ReadRetryScope,
} from './read-retry.js'
import { findRegion, type RegionRoute } from './topology.js'
import type { Transport, TransportResponse } from './transport.js'

/** The parts of a client its extensions use. */
export interface ClientParts {
  readonly transport: Transport
  /** Headers of every request. */
  readonly headers: Record<string, string>
  readonly session: Session
  readonly regions: readonly RegionRoute[]
  readonly home: RegionRoute
  readonly defaults: Readonly<ResolvedDefaults>
  readonly partitions: number
  readonly maxKeyBytes: number
  /** Aborted when the client closes. */
  readonly closing: AbortSignal
  /** The call's timeout, checked, or the default. */
  timeout(timeoutMs: number | undefined): number
  /** Tells the session listeners the session changed. */
  changed(): void
  throwIfClosed(): void
}

/** One read exchange: a `GET` of `path` (its query so far), retried as `get` is. */
export interface ReadCall {
  /** Partition the read's vector is for. */
  partition: number
  /** Path and query without `level`, `replica` and `timeoutMs` (the call adds them). */
  path: string
  /** For error messages: `has "x"`. */
  what: string
  options: ReadOptions | undefined
}

/** A successful read: the reply body (checked by the caller) and the attempts it took. */
export interface ReadOutcome {
  body: unknown
  level: ReadLevel
  attempts: number
}

/**
 * Sends a read with the session's vector for `call.partition`, retrying on
 * `SESSION_NOT_AVAILABLE` (leader, then home region) and on unreachable gateways, as `get` does.
 * The caller records the reply in the session.
 */
export async function readCall(parts: ClientParts, call: ReadCall): Promise<ReadOutcome> {
  const { options } = call
  parts.throwIfClosed()
  options?.signal?.throwIfAborted()
  const d = parts.defaults
  const level = options?.read === undefined ? d.read : checkRead(options.read)
  const replica = options?.replica === undefined ? d.replica : checkReplica(options.replica)
  const timeoutMs = parts.timeout(options?.timeoutMs)
  const retry = options?.retry === undefined ? d.retry : checkRetry(options.retry)
  const target =
    options?.region === undefined ? parts.home : findRegion(parts.regions, options.region)
  const need = parts.session.readNeed(call.partition, level)
  const after = need && formatReadNeed(need)
  const scope: ReadRetryScope = {
    retry,
    askedLeader: replica === 'leader',
    awayFromHome: target !== parts.home,
  }
  const headers = { ...parts.headers }
  if (after !== undefined) headers[HEADER_AFTER] = after
  const separator = call.path.includes('?') ? '&' : '?'
  const path = `${call.path}${separator}level=${level}&replica=`
  const reserve = replyReserve(timeoutMs)
  const deadline = new CallDeadline(timeoutMs, options?.signal, parts.closing)
  let step = 0
  let attempts = 0
  let lastRefusal: CausewayError | undefined
  try {
    for (;;) {
      const region = step === STEP_HOME ? parts.home : target
      const choice: ReplicaChoice = step === 0 ? replica : step === STEP_LEADER ? 'leader' : 'any'
      const waitMs = waitShare(deadline.remaining(), reserve, stepsAfter(step, scope))
      if (waitMs <= 0 && lastRefusal) throw finalRefusal(lastRefusal, attempts)
      deadline.throwIfStopped(call.what, { attempts })
      attempts++
      let res: TransportResponse
      try {
        res = await parts.transport.request({
          method: 'GET',
          url: region.url + path + choice + '&timeoutMs=' + waitMs,
          headers,
          signal: deadline.signal,
        })
      } catch (cause) {
        deadline.throwIfStopped(call.what, { attempts })
        lastRefusal = unreachable(region, cause)
        step = nextStep(step, scope, 'unreachable', false)
        if (step < 0) throw lastRefusal
        continue
      }
      if (res.status === 200) return { body: res.body, level, attempts }
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

/** One write exchange: a `POST` of a JSON body to `path` at the leader of the call's region. */
export interface WriteCall {
  partition: number
  /** Path without query. */
  path: string
  body: string
  what: string
  options: Omit<WriteOptions, 'context'> | undefined
  /**
   * Also send the session's vector for the partition (`causeway-after`), so the leader first
   * covers what the session has read and written.
   */
  withVector?: boolean
}

/** A successful write: the reply body (checked by the caller). */
export interface WriteOutcome {
  body: unknown
}

/**
 * Sends a write with the dependency time its level picks; never retried (a failed send may or
 * may not have been applied). The caller records the reply in the session.
 */
export async function writeCall(parts: ClientParts, call: WriteCall): Promise<WriteOutcome> {
  const { options } = call
  parts.throwIfClosed()
  options?.signal?.throwIfAborted()
  const d = parts.defaults
  const level: WriteLevel = options?.write === undefined ? d.write : checkWrite(options.write)
  const durability =
    options?.durability === undefined ? d.durability : checkDurability(options.durability)
  const timeoutMs = parts.timeout(options?.timeoutMs)
  const region =
    options?.region === undefined ? parts.home : findRegion(parts.regions, options.region)
  const dt: Hlc = parts.session.writeDependency(level)
  const headers: Record<string, string> = {
    ...parts.headers,
    'content-type': 'application/json',
  }
  if (dt !== HLC_ZERO) headers[HEADER_DT] = dt
  if (call.withVector === true && level !== 'eventual') {
    const need = parts.session.readNeed(call.partition, 'session')
    const after = need && formatReadNeed(need)
    if (after !== undefined) headers[HEADER_AFTER] = after
  }
  const leaderWaitMs = Math.max(0, timeoutMs - replyReserve(timeoutMs))
  const url =
    region.url +
    call.path +
    `?level=${level}&durability=${durability}&timeoutMs=${Math.floor(leaderWaitMs)}`
  const deadline = new CallDeadline(timeoutMs, options?.signal, parts.closing)
  let res: TransportResponse
  try {
    res = await parts.transport.request({
      method: 'POST',
      url,
      headers,
      body: call.body,
      signal: deadline.signal,
    })
  } catch (cause) {
    deadline.throwIfStopped(`${call.what} (it may or may not have been applied)`)
    throw unreachable(region, cause, ' (the write may or may not have been applied)')
  } finally {
    deadline.dispose()
  }
  if (res.status !== 200) throw CausewayError.fromBody(res.body, res.status)
  return { body: res.body }
}

/** A gateway that answers but cannot serve now (shutting down, backend down): try elsewhere. */
export function isUnavailable(error: CausewayError): boolean {
  return error.code === 'SHUTTING_DOWN' || error.code === 'BACKEND_UNAVAILABLE'
}

/** The error of a call whose gateway could not be reached. */
export function unreachable(region: RegionRoute, cause: unknown, note = ''): CausewayError {
  const why = cause instanceof Error ? cause.message : String(cause)
  return new CausewayError(
    'NETWORK_ERROR',
    `cannot reach the gateway of region ${region.name} (${region.url}): ${why}${note}`,
    { region: region.id, url: region.url },
    { cause },
  )
}

/** The error a read throws after its last attempt: a refusal names how many attempts it made. */
export function finalRefusal(error: CausewayError, attempts: number): CausewayError {
  if (error.code !== 'SESSION_NOT_AVAILABLE') return error
  return new SessionNotAvailableError(
    `${error.message} (after ${attempts} attempt${attempts === 1 ? '' : 's'})`,
    { ...error.details, attempts },
  )
}
