/**
 * Per-key monotonic reads (NuKV Definition 3.4): a read must see every version its session read
 * before. Replicas answer with the newest version they hold, so the read must return a version at
 * least as new, by `(ts, dc)`, as any the session read of that key earlier, at whatever level.
 * On a siblings key a read returns a set of versions: it must cover (hold or supersede) every
 * version its session read before (see `siblings.ts`).
 */
import {
  isRead,
  siblingKeys,
  versionOf,
  versionsRead,
  type History,
  type ReadOperation,
} from '../history.js'
import { SiblingOrder } from '../sibling-order.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion } from '../version.js'
import { describeOperation, type CheckResult } from '../violation.js'
import { promisesMonotonicReads, type CheckOptions } from './levels.js'
import { successful } from './select.js'
import { formatVersions, uncovered } from './siblings.js'

/** Reports every read that returned an older version of a key than its session had read. */
export function checkMonotonicReads(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = {
    check: 'monotonic-reads',
    violations: [],
    checked: 0,
    crossRegion: 0,
  }
  const siblings = siblingKeys(history)
  const orders = new Map<string, SiblingOrder>()
  for (const session of keySessions(history)) {
    const reads = successful(session.operations, isRead)
    const targets = reads.filter((r) => promisesMonotonicReads(r.operation, options))
    if (siblings.has(session.key)) {
      let order = orders.get(session.key)
      if (order === undefined)
        orders.set(session.key, (order = new SiblingOrder(history, session.key)))
      const { misses, checked } = uncovered(order, reads, targets, versionsRead)
      result.checked += checked.length
      result.crossRegion += checked.filter(
        (c) => c.source.operation.region !== c.target.operation.region,
      ).length
      for (const { target, source, version } of misses)
        result.violations.push({
          check: 'monotonic-reads',
          kind: 'stale-read',
          key: session.key,
          client: session.client,
          earlier: source,
          later: target,
          required: version,
          observed: versionOf(target.operation),
          message: `${describeOperation(target)} returned ${formatVersions(versionsRead(target.operation))}, which neither holds nor supersedes ${formatVersion(version)} read by ${describeOperation(source)}`,
        })
      continue
    }
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
