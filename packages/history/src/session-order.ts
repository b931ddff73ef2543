/**
 * Sessions and their order: the guarantees are per client and per key (NuKV section 3), so the
 * checks look at one (client, key) at a time and ask, for each operation, what the session had
 * already read or written when it was called.
 */
import {
  precedes,
  type ClientId,
  type History,
  type Operation,
  type OperationRef,
} from './history.js'
import { compareVersions, type Version } from './version.js'

/** The operations of one client on one key, in history order. */
export interface KeySession {
  client: ClientId
  key: string
  operations: OperationRef[]
}

/** Splits a history into one {@link KeySession} per client and key. */
export function keySessions(history: History): KeySession[] {
  const byClient = new Map<ClientId, Map<string, KeySession>>()
  history.operations.forEach((operation, index) => {
    let byKey = byClient.get(operation.client)
    if (byKey === undefined) byClient.set(operation.client, (byKey = new Map()))
    let session = byKey.get(operation.key)
    if (session === undefined)
      byKey.set(
        operation.key,
        (session = { client: operation.client, key: operation.key, operations: [] }),
      )
    session.operations.push({ index, operation })
  })
  return [...byClient.values()].flatMap((byKey) => [...byKey.values()])
}

/** What a session had seen when an operation was called: its newest version, and who made it. */
export interface Requirement<S extends Operation, T extends Operation> {
  target: OperationRef<T>
  /** The preceding source operation with the newest version. */
  source: OperationRef<S>
  version: Version
}

/**
 * For each target, the newest version among the sources that {@link precedes | precede} it,
 * with the source that carries it; targets no source precedes are left out. Sorting both sides
 * once keeps this O(n log n) per session, so long benchmark histories check quickly.
 */
export function newestPreceding<S extends Operation, T extends Operation>(
  sources: readonly OperationRef<S>[],
  targets: readonly OperationRef<T>[],
  versionOf: (op: S) => Version | undefined,
): Requirement<S, T>[] {
  const bySettled = sources
    .filter((s) => versionOf(s.operation) !== undefined)
    .sort((a, b) => a.operation.completedAt - b.operation.completedAt || a.index - b.index)
  const byCall = [...targets].sort(
    (a, b) => a.operation.invokedAt - b.operation.invokedAt || a.index - b.index,
  )
  const out: Requirement<S, T>[] = []
  let next = 0
  let newest: { source: OperationRef<S>; version: Version } | undefined
  for (const target of byCall) {
    for (; next < bySettled.length; next++) {
      const source = bySettled[next]!
      if (!precedes(source, target)) break
      const version = versionOf(source.operation)!
      if (newest === undefined || compareVersions(version, newest.version) > 0)
        newest = { source, version }
    }
    if (newest !== undefined) out.push({ target, ...newest })
  }
  return out.sort((a, b) => a.target.index - b.target.index)
}
