/**
 * Per-key monotonic writes (NuKV Definition 3.6): once a region holds a write, no read there may
 * return an earlier write of the same session. With last-writer-wins by `(ts, dc)` that means a
 * write must get a newer version than every write of the key its session had acknowledged, and,
 * on the converged state, no region may end on a write its session later superseded.
 */
import { isWrite, type History } from '../history.js'
import type { CheckResult } from '../violation.js'
import { promisesMonotonicWrites, type CheckOptions } from './levels.js'
import { checkWriteRule } from './ordering.js'

/** Reports writes ordered before their session's earlier writes, and final states that show it. */
export function checkMonotonicWrites(history: History, options: CheckOptions = {}): CheckResult {
  return checkWriteRule(
    history,
    {
      check: 'monotonic-writes',
      isSource: isWrite,
      promises: promisesMonotonicWrites,
      sourceVerb: 'written by',
    },
    options,
  )
}
