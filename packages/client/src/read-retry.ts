/**
 * The retry policy of a read (DESIGN.md, "The protocol") and how it spends the call's deadline.
 * When a replica cannot cover the session before its wait ends (`SESSION_NOT_AVAILABLE`), the
 * read is asked again of the region's leader (it has applied everything its region received)
 * and, with `fallback: 'home'`, of the home region; then the last error is thrown. Every attempt
 * sends the same read vector: only where it is sent changes.
 *
 * The whole `timeoutMs` is spent, whoever answered first:
 *
 * - a margin of 10% of the budget (at most 200 ms) is kept for the last reply to travel back:
 *   replicas may wait until `end` = start + budget − margin, and no later;
 * - a read that may fall back home gives its own region the first half of that time and the
 *   home region the rest; any other read gives its region all of it;
 * - an attempt's replica may wait until the end of its region's share (a forced follower half of
 *   what is left, so the leader gets the rest), and a refusal that leaves time in the share is
 *   asked again of the leader, with what is left;
 * - a region that cannot be reached (network error, 5xx, or no reply by the end of its share
 *   plus the margin) is left for the home region at once.
 *
 * With the default 5 s: a read in the home region may wait 4.8 s; a read in another region
 * waits there up to 2.4 s and at home up to what is left of the 4.8 s.
 */
import type { ReplicaChoice } from '@causeway/core'

/** Where a read goes when its region cannot serve it in time: the home region, or nowhere. */
export type ReadFallback = 'home' | 'none'

/** The values of {@link ReadFallback}. */
export const READ_FALLBACKS: readonly ReadFallback[] = ['home', 'none']

/** What a read may try; fixed for the whole call. */
export interface ReadRetryScope {
  /** Retries are enabled (`retry: true`); without them the read is one request. */
  retry: boolean
  /** The replica choice of the first attempt. */
  replica: ReplicaChoice
  /** The read may move to the home region: `fallback: 'home'` and its region is another one. */
  toHome: boolean
}

/** One attempt of a read: where it goes and how long its replica may wait. */
export interface ReadAttempt {
  /** Sent to the home region rather than the call's region. */
  home: boolean
  replica: ReplicaChoice
  /** How long the serving replica may wait for the session (the request's `timeoutMs`). */
  waitMs: number
  /**
   * When to give up on a reply (`Date.now()` ms) so the home region still has its share;
   * undefined when only the call's deadline bounds it.
   */
  cutoffAt: number | undefined
}

/** Why an attempt failed. */
export type AttemptFailure = 'session' | 'unreachable'

/**
 * The most requests a read sends to one region: the first, the leader, and the leader again
 * when it refused before its wait could have ended (a gateway that waited less than asked).
 */
const MAX_ATTEMPTS_PER_REGION = 3

/** A retry in the same region needs at least this much of the region's share left to wait. */
const MIN_RETRY_WAIT_MS = 10

/** Time kept back from the replicas' waits so the last reply can still arrive in time. */
export function replyReserve(timeoutMs: number): number {
  return Math.min(200, Math.max(MIN_REPLY_RESERVE_MS, Math.floor(timeoutMs / 10)), timeoutMs)
}

/**
 * The least room kept for a reply: a tenth of a short budget (10 ms of 100) is less than one busy
 * event-loop turn, and the replica's refusal would then arrive after the deadline as a `TIMEOUT`.
 */
const MIN_REPLY_RESERVE_MS = 30

/**
 * The attempts of one read, in order, and how long each may wait. Pure: the caller passes the
 * time, as `Date.now()` milliseconds.
 */
export class ReadRetryPlan {
  readonly #scope: ReadRetryScope
  readonly #margin: number
  /** The last moment a replica may wait until. */
  readonly #end: number
  /** The end of the current region's share. */
  #regionEnd: number
  #home = false
  #inRegion = 0

  constructor(scope: ReadRetryScope, startMs: number, timeoutMs: number) {
    this.#scope = scope
    this.#margin = replyReserve(timeoutMs)
    this.#end = startMs + timeoutMs - this.#margin
    this.#regionEnd =
      scope.retry && scope.toHome ? startMs + Math.floor((timeoutMs - this.#margin) / 2) : this.#end
  }

  /** The attempt as asked: the call's region and replica choice. */
  first(nowMs: number): ReadAttempt {
    const { replica, retry } = this.#scope
    // A forced follower that cannot cover leaves the leader the other half of the share.
    const split = retry && replica === 'follower'
    return this.#attempt(nowMs, replica, split)
  }

  /** The attempt after one that failed for `why`, or undefined when the read must give up. */
  next(nowMs: number, why: AttemptFailure): ReadAttempt | undefined {
    const s = this.#scope
    if (!s.retry) return undefined
    if (
      why === 'session' &&
      this.#inRegion < MAX_ATTEMPTS_PER_REGION &&
      this.#regionEnd - nowMs >= MIN_RETRY_WAIT_MS
    ) {
      return this.#attempt(nowMs, 'leader', false)
    }
    // Home gets what is left; with nothing left to wait it could not do better than the refusal.
    if (this.#home || !s.toHome || this.#end - nowMs <= 0) return undefined
    this.#home = true
    this.#inRegion = 0
    this.#regionEnd = this.#end
    return this.#attempt(nowMs, 'any', false)
  }

  #attempt(nowMs: number, replica: ReplicaChoice, split: boolean): ReadAttempt {
    this.#inRegion++
    const left = Math.max(0, this.#regionEnd - nowMs)
    const waitMs = split ? Math.floor(left / 2) : left
    // A region that may still hand over to home must answer by the end of its share.
    const cutoffAt =
      this.#scope.retry && this.#scope.toHome && !this.#home
        ? this.#regionEnd + this.#margin
        : undefined
    return { home: this.#home, replica, waitMs, cutoffAt }
  }
}
