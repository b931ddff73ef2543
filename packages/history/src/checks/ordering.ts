/**
 * The shape the four session guarantees share (NuKV Definitions 3.4–3.7): per client and key,
 * each target operation must reach the newest version among the source operations that
 * {@link precedes | preceded} it in its session. Reads must return at least that version (or, on
 * a siblings key, cover each required version); writes must get a strictly newer one, and on
 * the converged state no region may end on a version a later write of the session superseded.
 * Each check in this folder is one {@link ReadRule} or {@link WriteRule}.
 */
import {
  finalWinners,
  isRead,
  isWrite,
  precedes,
  siblingKeys,
  versionOf,
  versionsRead,
  type History,
  type Operation,
  type OperationRef,
  type ReadOperation,
  type WriteOperation,
} from '../history.js'
import { SiblingOrder } from '../sibling-order.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion, sameVersion, versionId, type Version } from '../version.js'
import { describeOperation, type CheckName, type CheckResult } from '../violation.js'
import type { CheckOptions } from './levels.js'
import { successful } from './select.js'
import { formatVersions, uncovered } from './siblings.js'

/** What a rule compares, whatever its targets are. */
interface Rule<S extends Operation, T extends Operation> {
  check: CheckName
  /** Which successful operations of a session set requirements. */
  isSource: (op: Operation) => op is S
  /** Whether a target promised the guarantee (by its level, or `asIfSession`). */
  promises: (op: T, options: CheckOptions) => boolean
  /** How messages name what a source did with the version: `read by`, `written by`. */
  sourceVerb: string
}

/** A guarantee on reads: monotonic reads, read-your-writes. */
export interface ReadRule<S extends Operation> extends Rule<S, ReadOperation> {
  /** The versions a source requires a later read on a siblings key to cover. */
  siblingVersions: (op: S) => Version[]
}

/** A guarantee on writes: monotonic writes, writes-follow-reads. */
export type WriteRule<S extends Operation> = Rule<S, WriteOperation>

function emptyResult(check: CheckName): CheckResult {
  return { check, violations: [], checked: 0, crossRegion: 0 }
}

function countCrossRegion(
  result: CheckResult,
  pairs: readonly { source: OperationRef; target: OperationRef }[],
): void {
  result.checked += pairs.length
  result.crossRegion += pairs.filter(
    (p) => p.source.operation.region !== p.target.operation.region,
  ).length
}

/** Reports every read that returned an older version than its session required. */
export function checkReadRule<S extends Operation>(
  history: History,
  rule: ReadRule<S>,
  options: CheckOptions,
): CheckResult {
  const result = emptyResult(rule.check)
  const siblings = siblingKeys(history)
  const orders = new Map<string, SiblingOrder>()
  for (const session of keySessions(history)) {
    const sources = successful(session.operations, rule.isSource)
    const targets = successful(session.operations, isRead).filter((r) =>
      rule.promises(r.operation, options),
    )
    const base = { check: rule.check, kind: 'stale-read', key: session.key } as const
    if (siblings.has(session.key)) {
      let order = orders.get(session.key)
      if (order === undefined)
        orders.set(session.key, (order = new SiblingOrder(history, session.key)))
      const { misses, checked } = uncovered(order, sources, targets, rule.siblingVersions)
      countCrossRegion(result, checked)
      for (const { target, source, version } of misses)
        result.violations.push({
          ...base,
          client: session.client,
          earlier: source,
          later: target,
          required: version,
          observed: versionOf(target.operation),
          message: `${describeOperation(target)} returned ${formatVersions(versionsRead(target.operation))}, which neither holds nor supersedes ${formatVersion(version)} ${rule.sourceVerb} ${describeOperation(source)}`,
        })
      continue
    }
    const required = newestPreceding<S, ReadOperation>(sources, targets, versionOf)
    countCrossRegion(result, required)
    for (const { target, source, version } of required) {
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) >= 0) continue
      result.violations.push({
        ...base,
        client: session.client,
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} returned ${formatVersion(observed)}, older than ${formatVersion(version)} ${rule.sourceVerb} ${describeOperation(source)}`,
      })
    }
  }
  return result
}

/**
 * Reports every write that did not get a newer version than its session required, and every
 * region whose converged state ended on a version that a later write of the session superseded.
 */
export function checkWriteRule<S extends Operation>(
  history: History,
  rule: WriteRule<S>,
  options: CheckOptions,
): CheckResult {
  const result = emptyResult(rule.check)
  for (const session of keySessions(history)) {
    const sources = successful(session.operations, rule.isSource)
    const targets = successful(session.operations, isWrite).filter((w) =>
      rule.promises(w.operation, options),
    )
    const base = { check: rule.check, key: session.key, client: session.client } as const
    const required = newestPreceding<S, WriteOperation>(sources, targets, versionOf)
    countCrossRegion(result, required)
    for (const { target, source, version } of required) {
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) > 0) continue
      result.violations.push({
        ...base,
        kind: 'unordered-write',
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} got ${formatVersion(observed)}, not newer than ${formatVersion(version)} ${rule.sourceVerb} ${describeOperation(source)}`,
      })
    }

    const winners = history.final && finalWinners(history.final, session.key)
    if (winners === undefined) continue
    // One report per version and region, however often the session read or wrote that version.
    const reported = new Set<string>()
    for (const earlier of sources) {
      const version = versionOf(earlier.operation)
      if (version === undefined || reported.has(versionId(version))) continue
      if (!winners.some((w) => sameVersion(w, version))) continue
      const later = targets.find((t) => precedes(earlier, t))
      if (later === undefined) continue
      reported.add(versionId(version))
      winners.forEach((winner, region) => {
        if (!sameVersion(winner, version)) return
        result.violations.push({
          ...base,
          kind: 'final-state',
          earlier,
          later,
          required: versionOf(later.operation),
          observed: winner,
          region,
          winners,
          message: `region ${region} ended on ${formatVersion(winner)}, ${rule.sourceVerb} ${describeOperation(earlier)} before ${describeOperation(later)} wrote a newer version`,
        })
      })
    }
  }
  return result
}
