/** Picking operations out of a session. */
import type { Operation, OperationRef } from '../history.js'

/** The operations of `refs` that succeeded and pass `is`. */
export function successful<T extends Operation>(
  refs: readonly OperationRef[],
  is: (op: Operation) => op is T,
): OperationRef<T>[] {
  return refs.filter((r): r is OperationRef<T> => r.operation.ok && is(r.operation))
}
