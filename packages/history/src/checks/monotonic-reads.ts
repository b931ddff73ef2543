/**
 * Per-key monotonic reads (NuKV Definition 3.4): a read must see every version its session read
 * before. Replicas answer with the newest version they hold, so the read must return a version at
 * least as new, by `(ts, dc)`, as any the session read of that key earlier, at whatever level.
 */
import { isRead, versionOf, type History, type ReadOperation } from '../history.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion } from '../version.js'
import { describeOperation, type CheckResult } from '../violation.js'
import { promisesMonotonicReads, type CheckOptions } from './levels.js'
import { successful } from './select.js'

/** Reports every read that returned an older version of a key than its session had read. */
export function checkMonotonicReads(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = {
    check: 'monotonic-reads',
    violations: [],
    checked: 0,
    crossRegion: 0,
  }
  for (const session of keySessions(history)) {
    const reads = successful(session.operations, isRead)
    const targets = reads.filter((r) => promisesMonotonicReads(r.operation, options))
    for (const { target, source, version } of newestPreceding<ReadOperation, ReadOperation>(
      reads,
      targets,
      versionOf,
    )) {
      result.checked++
      if (source.operation.region !== target.operation.region) result.crossRegion++
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) >= 0) continue
      result.violations.push({
        check: 'monotonic-reads',
        kind: 'stale-read',
        key: session.key,
        client: session.client,
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} returned ${formatVersion(observed)}, older than ${formatVersion(version)} read by ${describeOperation(source)}`,
      })
    }
  }
  return result
}
