/** Runs every check over a history and gathers one report. */
import { validateHistory, type History } from './history.js'
import { checkCausal } from './checks/causal.js'
import { checkConvergence } from './checks/convergence.js'
import type { CheckOptions } from './checks/levels.js'
import { checkMonotonicReads } from './checks/monotonic-reads.js'
import { checkMonotonicWrites } from './checks/monotonic-writes.js'
import { checkReadYourWrites } from './checks/read-your-writes.js'
import { checkWritesFollowReads } from './checks/writes-follow-reads.js'
import {
  CHECK_NAMES,
  formatViolation,
  type CheckName,
  type CheckResult,
  type Violation,
} from './violation.js'

/** Options of {@link checkHistory}. */
export interface CheckHistoryOptions extends CheckOptions {
  /**
   * The checks to run.
   * @default every one of CHECK_NAMES
   */
  checks?: readonly CheckName[]
}

/** What {@link checkHistory} found. */
export interface CheckReport {
  /** True when no check found a violation. */
  ok: boolean
  /** Every violation, check by check, in history order within each. */
  violations: Violation[]
  /** Each check's own result (only the checks that ran). */
  results: Partial<Record<CheckName, CheckResult>>
}

const CHECKS: Record<CheckName, (history: History, options: CheckOptions) => CheckResult> = {
  'monotonic-reads': checkMonotonicReads,
  'read-your-writes': checkReadYourWrites,
  'monotonic-writes': checkMonotonicWrites,
  'writes-follow-reads': checkWritesFollowReads,
  convergence: checkConvergence,
  causal: checkCausal,
}

/**
 * Validates `history` (a malformed one throws a `TypeError`) and runs the checks on it. Each
 * operation is held to the guarantees its own level promises, or, with `asIfSession`, to all.
 */
export function checkHistory(history: History, options: CheckHistoryOptions = {}): CheckReport {
  validateHistory(history)
  const results: Partial<Record<CheckName, CheckResult>> = {}
  for (const name of options.checks ?? CHECK_NAMES) results[name] = CHECKS[name](history, options)
  const violations = Object.values(results).flatMap((r) => r.violations)
  return { ok: violations.length === 0, violations, results }
}

/**
 * A report as text: one line per check with its counts, then the first `limit` violations.
 * Meant as the message of a failing assertion.
 */
export function formatReport(report: CheckReport, limit = 20): string {
  const lines = Object.values(report.results).map(
    (r) =>
      `${r.check}: ${r.violations.length} violation(s) in ${r.checked} checked (${r.crossRegion} across regions)`,
  )
  lines.push(...report.violations.slice(0, limit).map(formatViolation))
  if (report.violations.length > limit)
    lines.push(`... and ${report.violations.length - limit} more`)
  return lines.join('\n')
}
