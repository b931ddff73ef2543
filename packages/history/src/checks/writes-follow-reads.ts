/**
 * Per-key writes-follow-reads (NuKV Definition 3.7): once a region holds a write, no read there
 * may return a version its session had read before writing. With last-writer-wins by `(ts, dc)`
 * that means a write must get a newer version than every version of the key its session had
 * read, and, on the converged state, no region may end on a version a session read before
 * writing a newer one.
 */
import { isRead, type History } from '../history.js'
import type { CheckResult } from '../violation.js'
import { promisesWritesFollowReads, type CheckOptions } from './levels.js'
import { checkWriteRule } from './ordering.js'

/** Reports writes ordered before what their session had read, and final states that show it. */
export function checkWritesFollowReads(history: History, options: CheckOptions = {}): CheckResult {
  return checkWriteRule(
    history,
    {
      check: 'writes-follow-reads',
      isSource: isRead,
      promises: promisesWritesFollowReads,
      sourceVerb: 'read by',
    },
    options,
  )
}
