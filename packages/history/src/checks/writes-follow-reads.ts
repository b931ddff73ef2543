/**
 * Per-key writes-follow-reads (NuKV Definition 3.7): once a region holds a write, no read there
 * may return a version its session had read before writing. With last-writer-wins by `(ts, dc)`
 * that means a write must get a newer version than every version of the key its session had
 * read, and, on the converged state, no region may end on a version a session read before
 * writing a newer one.
 */
import {
  finalWinners,
  isRead,
  isWrite,
  precedes,
  versionOf,
  type History,
  type ReadOperation,
  type WriteOperation,
} from '../history.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion, sameVersion, versionId } from '../version.js'
import { describeOperation, type CheckResult } from '../violation.js'
import { promisesWritesFollowReads, type CheckOptions } from './levels.js'
import { successful } from './select.js'

/** Reports writes ordered before what their session had read, and final states that show it. */
export function checkWritesFollowReads(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = {
    check: 'writes-follow-reads',
    violations: [],
    checked: 0,
    crossRegion: 0,
  }
  for (const session of keySessions(history)) {
    const reads = successful(session.operations, isRead)
    const targets = successful(session.operations, isWrite).filter((w) =>
      promisesWritesFollowReads(w.operation, options),
    )
    for (const { target, source, version } of newestPreceding<ReadOperation, WriteOperation>(
      reads,
      targets,
      versionOf,
    )) {
      result.checked++
      if (source.operation.region !== target.operation.region) result.crossRegion++
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) > 0) continue
      result.violations.push({
        check: 'writes-follow-reads',
        kind: 'unordered-write',
        key: session.key,
        client: session.client,
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} got ${formatVersion(observed)}, not newer than ${formatVersion(version)} read by ${describeOperation(source)}`,
      })
    }

    const winners = history.final && finalWinners(history.final, session.key)
    if (winners === undefined) continue
    // One report per version read and region, however often the session read that version.
    const reported = new Set<string>()
    for (const read of reads) {
      const version = versionOf(read.operation)
      if (version === undefined || reported.has(versionId(version))) continue
      if (!winners.some((w) => sameVersion(w, version))) continue
      const later = targets.find((t) => precedes(read, t))
      if (later === undefined) continue
      reported.add(versionId(version))
      winners.forEach((winner, region) => {
        if (!sameVersion(winner, version)) return
        result.violations.push({
          check: 'writes-follow-reads',
          kind: 'final-state',
          key: session.key,
          client: session.client,
          earlier: read,
          later,
          required: versionOf(later.operation),
          observed: winner,
          region,
          winners,
          message: `region ${region} ended on ${formatVersion(winner)}, read by ${describeOperation(read)} before ${describeOperation(later)} wrote a newer version`,
        })
      })
    }
  }
  return result
}
