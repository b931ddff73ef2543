/**
 * The session guarantees and convergence on keys of siblings namespaces, where a read returns a
 * set of versions (see `sibling-order.ts`):
 *
 * - monotonic reads: a read covers every version its session had read before (each is in the
 *   read's set or superseded by a version in it);
 * - read-your-writes: a read covers every write of the key its session had acknowledged;
 * - convergence: every region ends on the same set, and that set is exactly the acknowledged
 *   versions no acknowledged write superseded (none lost, no false conflict); no read or final
 *   set holds a version beside one that superseded it; every sibling carries the value its
 *   write wrote.
 *
 * Monotonic writes and writes-follow-reads are about the versions writes get (their HLC order),
 * which siblings namespaces leave unchanged: their checks apply as they are.
 */
import {
  isRead,
  precedes,
  versionOf,
  versionsRead,
  type History,
  type Operation,
  type OperationRef,
  type ReadOperation,
  type WriteOperation,
} from '../history.js'
import { jsonEqual } from '../json-equal.js'
import type { SiblingOrder } from '../sibling-order.js'
import { formatVersion, versionId, type Version } from '../version.js'
import { describeOperation, type Violation } from '../violation.js'

/** A version a target read should have covered, and the operation that required it. */
export interface SiblingMiss<S extends Operation> {
  target: OperationRef<ReadOperation>
  source: OperationRef<S>
  version: Version
}

/**
 * For each target read, the versions of preceding sources (reads or writes of its session) that
 * it does not cover, leaving out those a write of unknown outcome may have superseded. Also
 * returns how many (target, source) pairs had a requirement.
 */
export function uncovered<S extends Operation>(
  order: SiblingOrder,
  sources: readonly OperationRef<S>[],
  targets: readonly OperationRef<ReadOperation>[],
  versionsOf: (op: S) => Version[],
): { misses: SiblingMiss<S>[]; checked: { target: OperationRef; source: OperationRef }[] } {
  const misses: SiblingMiss<S>[] = []
  const checked: { target: OperationRef; source: OperationRef }[] = []
  for (const target of targets) {
    const covered = order.covered(versionsRead(target.operation))
    const reported = new Set<string>()
    let last: OperationRef<S> | undefined
    for (const source of sources) {
      if (!precedes(source, target)) continue
      const versions = versionsOf(source.operation)
      if (versions.length === 0) continue
      last = source
      for (const version of versions) {
        const id = versionId(version)
        if (covered.has(id) || order.maybeSuperseded.has(id) || reported.has(id)) continue
        reported.add(id)
        misses.push({ target, source, version })
      }
    }
    if (last !== undefined) checked.push({ target, source: last })
  }
  return { misses, checked }
}

/** The versions of a read as a list for messages: `[ts@dc, ...]`. */
export function formatVersions(versions: readonly Version[]): string {
  return `[${versions.map(formatVersion).join(', ')}]`
}

/** A read or final set that holds a version beside one that superseded it. */
function supersededPairs(order: SiblingOrder, versions: readonly Version[]): [Version, Version][] {
  const out: [Version, Version][] = []
  for (const newer of versions) {
    const ancestors = order.ancestors(newer)
    for (const older of versions) if (ancestors.has(versionId(older))) out.push([older, newer])
  }
  return out
}

/** What the convergence check knows of a key's writes (see `convergence.ts`). */
export interface SiblingFacts {
  written: Map<string, OperationRef<WriteOperation>>
  /** Versions seen that no acknowledged write made, with where (reported by the caller). */
  unknown: Map<string, { version: Version; seenBy?: OperationRef; region?: number }>
}

/** Convergence of one siblings key; pushes violations, returns how many final states it checked. */
export function checkSiblingConvergence(
  history: History,
  order: SiblingOrder,
  facts: SiblingFacts,
  push: (v: Omit<Violation, 'check'>) => void,
): number {
  const key = order.key
  history.operations.forEach((operation, index) => {
    if (operation.key !== key || !isRead(operation) || !operation.ok) return
    const ref = { index, operation }
    const read = versionsRead(operation)
    for (const sibling of operation.reply?.siblings ?? []) {
      const id = versionId(sibling)
      const writer = facts.written.get(id)
      if (writer === undefined) {
        if (!facts.unknown.has(id))
          facts.unknown.set(id, { version: { ts: sibling.ts, dc: sibling.dc }, seenBy: ref })
        continue
      }
      const w = writer.operation
      const mismatch =
        w.op === 'delete'
          ? !sibling.deleted
          : sibling.deleted || (Object.hasOwn(w, 'value') && !jsonEqual(sibling.value, w.value))
      if (mismatch)
        push({
          kind: 'value-mismatch',
          key,
          client: operation.client,
          earlier: writer,
          later: ref,
          observed: sibling,
          message: `${describeOperation(ref)} returned ${sibling.deleted ? 'a tombstone' : JSON.stringify(sibling.value)} for ${formatVersion(sibling)}, which ${describeOperation(writer)} wrote as ${w.op === 'delete' ? 'a tombstone' : JSON.stringify(w.value)}`,
        })
    }
    for (const [older, newer] of supersededPairs(order, read))
      push({
        kind: 'superseded-sibling',
        key,
        client: operation.client,
        later: ref,
        observed: older,
        required: newer,
        message: `${describeOperation(ref)} returned ${formatVersion(older)} beside ${formatVersion(newer)}, which superseded it (a false conflict)`,
      })
  })

  const sets = history.finalSiblings?.[key]
  if (sets === undefined) {
    if (history.finalSiblings !== undefined && facts.written.size > 0)
      push({
        kind: 'missing-final-state',
        key,
        message: `no final siblings for a key with acknowledged writes`,
      })
    return 0
  }
  const ids = sets.map((set) => set.map(versionId).sort().join(','))
  if (ids.some((x) => x !== ids[0]))
    push({
      kind: 'diverged',
      key,
      message: `regions ended on different siblings: ${sets.map(formatVersions).join(' / ')}`,
    })
  // What every region must end on: the acknowledged versions nothing acknowledged superseded.
  const maximal = [...facts.written.values()]
    .map((ref) => versionOf(ref.operation)!)
    .filter((v) => !order.isSuperseded(v))
  sets.forEach((set, region) => {
    const present = new Set(set.map(versionId))
    for (const version of set) {
      const id = versionId(version)
      if (!facts.written.has(id) && !facts.unknown.has(id))
        facts.unknown.set(id, { version, region })
      if (order.isSuperseded(version))
        push({
          kind: 'superseded-sibling',
          key,
          region,
          observed: version,
          message: `region ${region} ended on ${formatVersion(version)}, which an acknowledged write superseded (a false conflict)`,
        })
    }
    for (const version of maximal) {
      const id = versionId(version)
      if (present.has(id) || order.maybeSuperseded.has(id)) continue
      const writer = facts.written.get(id)
      push({
        kind: 'lost-write',
        key,
        region,
        required: version,
        ...(writer && { earlier: writer }),
        message: `region ${region} ended on ${formatVersions(set)} without ${formatVersion(version)}${writer ? ` of ${describeOperation(writer)}` : ''}, which no acknowledged write superseded`,
      })
    }
  })
  return sets.length
}
