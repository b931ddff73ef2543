/**
 * Per-key read-your-writes (NuKV Definition 3.5): a read must see every write of the key its
 * session had acknowledged when the read was called, so it returns a version at least as new,
 * by `(ts, dc)`, as the newest of them. A write still in flight when the read was called is
 * concurrent with it and sets no requirement. On a siblings key the read must cover each of
 * them instead (see `siblings.ts`).
 */
import {
  isRead,
  isWrite,
  siblingKeys,
  versionOf,
  type History,
  type ReadOperation,
  type WriteOperation,
  versionsRead,
} from '../history.js'
import { keySessions, newestPreceding } from '../session-order.js'
import { compareVersions, formatVersion } from '../version.js'
import { describeOperation, type CheckResult } from '../violation.js'
import { SiblingOrder } from '../sibling-order.js'
import { promisesReadYourWrites, type CheckOptions } from './levels.js'
import { successful } from './select.js'
import { formatVersions, uncovered } from './siblings.js'

/** Reports every read that missed a write its session had already been acknowledged. */
export function checkReadYourWrites(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = {
    check: 'read-your-writes',
    violations: [],
    checked: 0,
    crossRegion: 0,
  }
  const siblings = siblingKeys(history)
  const orders = new Map<string, SiblingOrder>()
  for (const session of keySessions(history)) {
    const writes = successful(session.operations, isWrite)
    const targets = successful(session.operations, isRead).filter((r) =>
      promisesReadYourWrites(r.operation, options),
    )
    if (siblings.has(session.key)) {
      let order = orders.get(session.key)
      if (order === undefined)
        orders.set(session.key, (order = new SiblingOrder(history, session.key)))
      const { misses, checked } = uncovered(order, writes, targets, (w) => [versionOf(w)!])
      result.checked += checked.length
      result.crossRegion += checked.filter(
        (c) => c.source.operation.region !== c.target.operation.region,
      ).length
      for (const { target, source, version } of misses)
        result.violations.push({
          check: 'read-your-writes',
          kind: 'stale-read',
          key: session.key,
          client: session.client,
          earlier: source,
          later: target,
          required: version,
          observed: versionOf(target.operation),
          message: `${describeOperation(target)} returned ${formatVersions(versionsRead(target.operation))}, which neither holds nor supersedes ${formatVersion(version)} written by ${describeOperation(source)}`,
        })
      continue
    }
    for (const { target, source, version } of newestPreceding<WriteOperation, ReadOperation>(
      writes,
      targets,
      versionOf,
    )) {
      result.checked++
      if (source.operation.region !== target.operation.region) result.crossRegion++
      const observed = versionOf(target.operation)
      if (compareVersions(observed, version) >= 0) continue
      result.violations.push({
        check: 'read-your-writes',
        kind: 'stale-read',
        key: session.key,
        client: session.client,
        earlier: source,
        later: target,
        required: version,
        observed,
        message: `${describeOperation(target)} returned ${formatVersion(observed)}, older than ${formatVersion(version)} written by ${describeOperation(source)}`,
      })
    }
  }
  return result
}
