/**
 * Per-key monotonic reads (NuKV Definition 3.4): a read must see every version its session read
 * before. Replicas answer with the newest version they hold, so the read must return a version at
 * least as new, by `(ts, dc)`, as any the session read of that key earlier, at whatever level.
 * On a siblings key a read returns a set of versions: it must cover (hold or supersede) every
 * version its session read before (see `siblings.ts`).
 */
import { isRead, versionsRead, type History } from '../history.js'
import type { CheckResult } from '../violation.js'
import { promisesMonotonicReads, type CheckOptions } from './levels.js'
import { checkReadRule } from './ordering.js'

/** Reports every read that returned an older version of a key than its session had read. */
export function checkMonotonicReads(history: History, options: CheckOptions = {}): CheckResult {
  return checkReadRule(
    history,
    {
      check: 'monotonic-reads',
      isSource: isRead,
      promises: promisesMonotonicReads,
      sourceVerb: 'read by',
      siblingVersions: versionsRead,
    },
    options,
  )
}
