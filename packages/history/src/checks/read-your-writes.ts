/**
 * Per-key read-your-writes (NuKV Definition 3.5): a read must see every write of the key its
 * session had acknowledged when the read was called, so it returns a version at least as new,
 * by `(ts, dc)`, as the newest of them. A write still in flight when the read was called is
 * concurrent with it and sets no requirement. On a siblings key the read must cover each of
 * them instead (see `siblings.ts`).
 */
import { isWrite, versionOf, type History } from '../history.js'
import type { CheckResult } from '../violation.js'
import { promisesReadYourWrites, type CheckOptions } from './levels.js'
import { checkReadRule } from './ordering.js'

/** Reports every read that missed a write its session had already been acknowledged. */
export function checkReadYourWrites(history: History, options: CheckOptions = {}): CheckResult {
  return checkReadRule(
    history,
    {
      check: 'read-your-writes',
      isSource: isWrite,
      promises: promisesReadYourWrites,
      sourceVerb: 'written by',
      siblingVersions: (w) => [versionOf(w)!],
    },
    options,
  )
}
