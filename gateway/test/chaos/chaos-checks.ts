/**
 * What a chaos scenario's run is judged by, from its recorded history and the partition logs every
 * replica (or every region) held after healing. Pure: no I/O, so the harness tests plant faults in
 * hand-made histories and logs and check that each is caught.
 *
 * - **violations**: the session guarantees (`@causeway/history`'s four checks, each call held to
 *   its own level) and convergence (every region ends on the newest acknowledged write, nothing
 *   invented); every one is a 200 that broke a promise.
 * - **stale 200s**: the reads among them (a read answered 200 with a version older than its
 *   session had seen or written).
 * - **lost**: acknowledged `durability: 'majority'` writes missing from some copy of their
 *   partition's log after healing: the entry at their `(origin, idx)` is absent or is another write.
 * - **reused indices**: log positions `(partition, origin, idx)` that named two different writes
 *   (in replies to clients or in any copy of the log).
 * - **diverged**: logs `(partition, origin)` whose copies differ between replicas or regions.
 * - **time to recover**: from the fault to the first write that was called after it and
 *   acknowledged in the region (and partition) the fault hit.
 *
 * Typed errors are allowed outcomes (see {@link ALLOWED_ERRORS}); any other error code fails the
 * scenario, so a fault that makes the service refuse work it should take is seen too.
 */
import { ERROR_CODES, partitionOf } from '@causeway/core'
import {
  checkHistory,
  isRead,
  isWrite,
  type CheckName,
  type History,
  type Violation,
  type WriteOperation,
} from '@causeway/history'

/** One entry of a copy of a partition log, as far as the checks need it. */
export interface LoggedEntry {
  idx: number
  ts: string
  key: string
}

/** One copy of the log of one origin region in one partition: one replica's, or one region's. */
export interface LogCopy {
  region: number
  /** Which copy within the region (`replica 0`, `feed`): for reports. */
  copy: string
  partition: number
  origin: number
  entries: readonly LoggedEntry[]
}

/** Where and when the fault hit, on the history's clock (`performance.now()`). */
export interface FaultWindow {
  /** When the fault was injected. */
  injectedAt: number
  /** When it was healed (the killed process restarted, the link restored), if it was. */
  healedAt?: number
  /** The region it hit (recovery is measured there). */
  region: number
  /** The partition it hit, when it hit one. */
  partition?: number
}

/**
 * Error codes a faulty cluster may answer with: the typed refusals (503: no replica could serve
 * the session, the backend or the gateway is away; 504: the SDK's deadline; 409 EPOCH_MISMATCH).
 */
export const ALLOWED_ERRORS: readonly string[] = Object.entries(ERROR_CODES)
  .filter(([code, status]) => status === 503 || status === 504 || code === 'EPOCH_MISMATCH')
  .map(([code]) => code)
  .sort()

const SESSION_CHECKS: readonly CheckName[] = [
  'monotonic-reads',
  'read-your-writes',
  'monotonic-writes',
  'writes-follow-reads',
]

/** What the checks found in one run. */
export interface Findings {
  operations: number
  acknowledgedWrites: number
  /** Acknowledged writes asked at `durability: 'majority'`. */
  majorityWrites: number
  /** Majority writes missing from some copy of their log. */
  lost: number
  /** Acknowledged `leader` writes missing from some copy (allowed by that level; reported). */
  lostLeaderWrites: number
  /** Session-guarantee and convergence violations. */
  violations: number
  /** Violations by check. */
  violationsByCheck: Partial<Record<CheckName, number>>
  /** Reads answered 200 that broke a session guarantee. */
  stale200s: number
  reusedIndices: number
  divergedLogs: number
  /** Whether the regions agreed on every key's winner after healing. */
  converged: boolean
  /** ms from the fault to the first write after it acknowledged where it hit; null: none. */
  recoverMs: number | null
  /** Failed calls by error code. */
  errors: Record<string, number>
  /** Failed calls whose code is not in {@link ALLOWED_ERRORS}. */
  unexpectedErrors: Record<string, number>
  /** Up to five examples of each kind of problem, for people. */
  examples: string[]
}

/** Everything the checks look at. */
export interface RunRecord {
  history: History
  /** From the workload: whether the regions converged before its deadline. */
  converged: boolean
  logs: readonly LogCopy[]
  partitions: number
  fault: FaultWindow
}

/** Runs every check of the module comment over one run. */
export function checkRun(run: RunRecord): Findings {
  const { history, logs, partitions, fault } = run
  const examples: string[] = []
  const example = (kind: string, text: string) => {
    if (examples.filter((e) => e.startsWith(kind)).length < 5) examples.push(`${kind}: ${text}`)
  }

  const report = checkHistory(history)
  const violationsByCheck: Partial<Record<CheckName, number>> = {}
  for (const [name, result] of Object.entries(report.results))
    if (result.violations.length > 0)
      violationsByCheck[name as CheckName] = result.violations.length
  for (const v of report.violations) example('violation', `[${v.check}/${v.kind}] ${v.message}`)
  const stale = new Set<number>()
  for (const v of report.violations) if (isStaleRead(v, history)) stale.add(v.later!.index)

  const writes = history.operations.filter(
    (op): op is WriteOperation & { reply: NonNullable<WriteOperation['reply']> } =>
      isWrite(op) && op.ok && op.reply !== undefined,
  )

  // Every copy of every (partition, origin) log, and what each holds at each idx.
  const copies = new Map<string, LogCopy[]>()
  for (const log of logs) {
    const id = `${log.partition}/${log.origin}`
    copies.set(id, [...(copies.get(id) ?? []), log])
  }
  const byIdx = new Map<LogCopy, Map<number, LoggedEntry>>()
  for (const log of logs) byIdx.set(log, new Map(log.entries.map((e) => [e.idx, e])))

  let lost = 0
  let lostLeaderWrites = 0
  for (const op of writes) {
    const p = partitionOf(op.key, partitions)
    const held = copies.get(`${p}/${op.reply.dc}`) ?? []
    const missing = held.filter((copy) => {
      const entry = byIdx.get(copy)!.get(op.reply.idx)
      return entry === undefined || entry.ts !== op.reply.ts || entry.key !== op.key
    })
    if (held.length > 0 && missing.length === 0) continue
    if (op.durability === 'majority') {
      lost++
      example(
        'lost',
        `${op.key} ${op.reply.dc}:${op.reply.idx} (${op.reply.ts}, majority) missing from ${held.length === 0 ? 'every copy (no log read)' : missing.map((c) => `region ${c.region} ${c.copy}`).join(', ')}`,
      )
    } else lostLeaderWrites++
  }

  // Every write each position was said to hold, by replies and by the logs.
  const named = new Map<string, Set<string>>()
  const name = (position: string, ts: string, key: string) => {
    let set = named.get(position)
    if (set === undefined) named.set(position, (set = new Set()))
    set.add(`${ts} ${key}`)
  }
  for (const op of writes)
    name(`${partitionOf(op.key, partitions)}/${op.reply.dc}/${op.reply.idx}`, op.reply.ts, op.key)
  for (const log of logs)
    for (const e of log.entries) name(`${log.partition}/${log.origin}/${e.idx}`, e.ts, e.key)
  let reusedIndices = 0
  for (const [position, writesThere] of named) {
    if (writesThere.size < 2) continue
    reusedIndices++
    example(
      'reused',
      `position ${position} (partition/origin/idx) named ${[...writesThere].join(' and ')}`,
    )
  }

  let divergedLogs = 0
  for (const [id, list] of copies) {
    const texts = list.map((c) => c.entries.map((e) => `${e.idx} ${e.ts} ${e.key}`).join('\n'))
    if (texts.every((t) => t === texts[0])) continue
    divergedLogs++
    example(
      'diverged',
      `log ${id} (partition/origin): ${list.map((c) => `region ${c.region} ${c.copy} has ${c.entries.length} entries up to idx ${c.entries.at(-1)?.idx ?? 0}`).join('; ')}`,
    )
  }

  const errors: Record<string, number> = {}
  const unexpectedErrors: Record<string, number> = {}
  for (const op of history.operations) {
    if (op.ok) continue
    const code = op.error?.code ?? 'UNKNOWN'
    errors[code] = (errors[code] ?? 0) + 1
    if (!ALLOWED_ERRORS.includes(code)) unexpectedErrors[code] = (unexpectedErrors[code] ?? 0) + 1
  }

  let recoveredAt = Infinity
  for (const op of writes) {
    if (op.invokedAt < fault.injectedAt || op.region !== fault.region) continue
    if (fault.partition !== undefined && partitionOf(op.key, partitions) !== fault.partition)
      continue
    recoveredAt = Math.min(recoveredAt, op.completedAt)
  }

  return {
    operations: history.operations.length,
    acknowledgedWrites: writes.length,
    majorityWrites: writes.filter((op) => op.durability === 'majority').length,
    lost,
    lostLeaderWrites,
    violations: report.violations.length,
    violationsByCheck,
    stale200s: stale.size,
    reusedIndices,
    divergedLogs,
    converged: run.converged,
    recoverMs: Number.isFinite(recoveredAt) ? recoveredAt - fault.injectedAt : null,
    errors,
    unexpectedErrors,
    examples,
  }
}

/** A session-guarantee violation committed by a successful read. */
function isStaleRead(v: Violation, history: History): boolean {
  if (!SESSION_CHECKS.includes(v.check) || v.later === undefined) return false
  const op = history.operations[v.later.index]
  return op !== undefined && isRead(op) && op.ok
}

/** Why a run fails, one reason a line; empty when it passes. */
export function failureReasons(f: Findings): string[] {
  const reasons: string[] = []
  if (f.lost > 0) reasons.push(`${f.lost} acknowledged majority write(s) lost`)
  if (f.violations > 0)
    reasons.push(
      `${f.violations} guarantee violation(s) (${Object.entries(f.violationsByCheck)
        .map(([check, n]) => `${check} ${n}`)
        .join(', ')})`,
    )
  if (f.reusedIndices > 0) reasons.push(`${f.reusedIndices} log position(s) reused`)
  if (f.divergedLogs > 0) reasons.push(`${f.divergedLogs} log(s) diverged`)
  if (!f.converged) reasons.push('the regions did not converge')
  if (f.recoverMs === null) reasons.push('no write was acknowledged where the fault hit after it')
  const unexpected = Object.entries(f.unexpectedErrors)
  if (unexpected.length > 0)
    reasons.push(
      `errors outside the allowed ones: ${unexpected.map(([c, n]) => `${c} ×${n}`).join(', ')}`,
    )
  if (f.acknowledgedWrites === 0) reasons.push('no write was acknowledged at all')
  return reasons
}
