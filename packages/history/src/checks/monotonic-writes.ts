/**
 * Per-key monotonic writes (NuKV Definition 3.6): once a region holds a write, no read there may
 * return an earlier write of the same session. With last-writer-wins by `(ts, dc)` that means a
 * write must get a newer version than every write of the key its session had acknowledged, and,
 * on the converged state, no region may end on a write its session later superseded.
 */
import {
  finalWinners,
  isWrite,
  precedes,
  versionOf,
  type History,
  type WriteOperation,
} from '../history.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion, sameVersion } from '../version.js'
import { describeOperation, type CheckResult } from '../violation.js'
import { promisesMonotonicWrites, type CheckOptions } from './levels.js'
import { successful } from './select.js'

/** Reports writes ordered before their session's earlier writes, and final states that show it. */
export function checkMonotonicWrites(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = {
    check: 'monotonic-writes',
    violations: [],
    checked: 0,
    crossRegion: 0,
  }
  for (const session of keySessions(history)) {
    const writes = successful(session.operations, isWrite)
    const targets = writes.filter((w) => promisesMonotonicWrites(w.operation, options))
    for (const { target, source, version } of newestPreceding<WriteOperation, WriteOperation>(
      writes,
      targets,
      versionOf,
    )) {
      result.checked++
      if (source.operation.region !== target.operation.region) result.crossRegion++
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) > 0) continue
      result.violations.push({
        check: 'monotonic-writes',
        kind: 'unordered-write',
        key: session.key,
        client: session.client,
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} got ${formatVersion(observed)}, not newer than ${formatVersion(version)} of ${describeOperation(source)}`,
      })
    }

    const winners = history.final && finalWinners(history.final, session.key)
    if (winners === undefined) continue
    for (const earlier of writes) {
      const version = versionOf(earlier.operation)
      if (!winners.some((w) => sameVersion(w, version))) continue
      const later = targets.find((t) => precedes(earlier, t))
      if (later === undefined) continue
      winners.forEach((winner, region) => {
        if (!sameVersion(winner, version)) return
        result.violations.push({
          check: 'monotonic-writes',
          kind: 'final-state',
          key: session.key,
          client: session.client,
          earlier,
          later,
          required: versionOf(later.operation),
          observed: winner,
          region,
          winners,
          message: `region ${region} ended on ${formatVersion(winner)} of ${describeOperation(earlier)}, which ${describeOperation(later)} superseded`,
        })
      })
    }
  }
  return result
}
