/**
 * The retry policy of a read (DESIGN.md, "The protocol"): when a replica cannot cover the
 * session before its wait ends (`SESSION_NOT_AVAILABLE`), try the leader of the same region,
 * then the home region, then throw. Every attempt sends the same read vector; only where it is
 * sent changes. The call's deadline is shared between the attempts:
 *
 * - a reserve of 10% of the budget (at most 200 ms) is kept for the last reply to travel back;
 * - an attempt with later attempts possible may make the replica wait half of what is left, the
 *   last possible attempt all of it;
 * - a later attempt is skipped when nothing is left, and the last error is thrown.
 *
 * With the default 5 s and three possible attempts a replica waits at most 2.4 s, the leader
 * 1.2 s and the home region 1.2 s (less whatever the round trips took).
 */

/** The attempt as asked: the call's region and replica choice. */
export const STEP_FIRST = 0
/** The leader of the same region: it has applied everything its region has received. */
export const STEP_LEADER = 1
/** The home region, replica `any`: where the session's own writes usually live. */
export const STEP_HOME = 2

/** What a read may still try; fixed for the whole call. */
export interface ReadRetryScope {
  /** Retries are enabled for this call. */
  retry: boolean
  /** The first attempt forced the leader (`replica: 'leader'`). */
  askedLeader: boolean
  /** The call's region is not the home region. */
  awayFromHome: boolean
}

function allowed(step: number, s: ReadRetryScope): boolean {
  if (step === STEP_LEADER) return s.retry && !s.askedLeader
  if (step === STEP_HOME) return s.retry && s.awayFromHome
  return false
}

/**
 * The step after `step`, or -1 when the read must give up.
 * @param cause why `step` failed: the replica could not cover the session in time, or the
 *   region's gateway could not be reached (then its leader cannot be either).
 * @param leaderServed the failed attempt was already served by the region's leader
 */
export function nextStep(
  step: number,
  s: ReadRetryScope,
  cause: 'session' | 'unreachable',
  leaderServed: boolean,
): number {
  if (step < STEP_LEADER && cause === 'session' && !leaderServed && allowed(STEP_LEADER, s)) {
    return STEP_LEADER
  }
  if (step < STEP_HOME && allowed(STEP_HOME, s)) return STEP_HOME
  return -1
}

/** How many attempts may still follow `step` (an upper bound: some may be skipped). */
export function stepsAfter(step: number, s: ReadRetryScope): number {
  let n = 0
  if (step < STEP_LEADER && allowed(STEP_LEADER, s)) n++
  if (step < STEP_HOME && allowed(STEP_HOME, s)) n++
  return n
}

/** Time kept back from the replicas' waits so the last reply can still arrive in time. */
export function replyReserve(timeoutMs: number): number {
  return Math.min(200, Math.floor(timeoutMs / 10))
}

/**
 * How long the replica of this attempt may wait for the session, in ms: half of what is left
 * when more attempts may follow, all of it for the last one.
 */
export function waitShare(remainingMs: number, reserveMs: number, later: number): number {
  const left = Math.max(0, remainingMs - reserveMs)
  return later > 0 ? Math.floor(left / 2) : left
}
