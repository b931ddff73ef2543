/**
 * Convergence and provenance, across sessions: every region ends on the same winner, which is
 * the newest acknowledged write of the key (none lost), and every version anyone read or any
 * region ended on was written by some client (none invented), with the value it was written with.
 *
 * A write that failed with an indeterminate error (a timeout, a lost connection) may still have
 * made a version the history cannot name; such versions are accepted, at most one per such write
 * and only from the region it was sent to.
 *
 * Keys of siblings namespaces end on a set of versions: see `siblings.ts` for what is checked.
 */
import {
  finalWinners,
  isIndeterminateWrite,
  isRead,
  isWrite,
  siblingKeys,
  versionOf,
  type History,
  type OperationRef,
  type WriteOperation,
} from '../history.js'
import { jsonEqual } from '../json-equal.js'
import { compareVersions, formatVersion, sameVersion, versionId, type Version } from '../version.js'
import { describeOperation, type CheckResult, type Violation } from '../violation.js'
import { SiblingOrder } from '../sibling-order.js'
import { checkSiblingConvergence } from './siblings.js'

/** A version seen (read, or ended on) that no acknowledged write made, with where it was seen. */
interface UnknownVersion {
  version: Version
  seenBy?: OperationRef
  region?: number
}

interface KeyFacts {
  /** Acknowledged writes by version. */
  written: Map<string, OperationRef<WriteOperation>>
  newest: OperationRef<WriteOperation> | undefined
  /** Writes that may have taken effect unacknowledged, by the region they were sent to. */
  indeterminate: Map<number, number>
  unknown: Map<string, UnknownVersion>
}

/** Reports divergent, lost, invented and corrupted versions. */
export function checkConvergence(history: History): CheckResult {
  const result: CheckResult = { check: 'convergence', violations: [], checked: 0, crossRegion: 0 }
  const facts = new Map<string, KeyFacts>()
  const factsOf = (key: string): KeyFacts => {
    let f = facts.get(key)
    if (f === undefined)
      facts.set(
        key,
        (f = {
          written: new Map(),
          newest: undefined,
          indeterminate: new Map(),
          unknown: new Map(),
        }),
      )
    return f
  }
  const push = (v: Omit<Violation, 'check'>) =>
    result.violations.push({ check: 'convergence', ...v })

  history.operations.forEach((operation, index) => {
    const f = factsOf(operation.key)
    if (isIndeterminateWrite(operation))
      f.indeterminate.set(operation.region, (f.indeterminate.get(operation.region) ?? 0) + 1)
    const version = versionOf(operation)
    if (!isWrite(operation) || version === undefined) return
    const ref = { index, operation }
    const twin = f.written.get(versionId(version))
    if (twin !== undefined)
      push({
        kind: 'duplicate-version',
        key: operation.key,
        earlier: twin,
        later: ref,
        observed: version,
        message: `${describeOperation(ref)} and ${describeOperation(twin)} both got ${formatVersion(version)}`,
      })
    else f.written.set(versionId(version), ref)
    if (f.newest === undefined || compareVersions(version, versionOf(f.newest.operation)) > 0)
      f.newest = ref
  })

  const siblings = siblingKeys(history)
  history.operations.forEach((operation, index) => {
    const version = versionOf(operation)
    if (!isRead(operation) || version === undefined || siblings.has(operation.key)) return
    const f = factsOf(operation.key)
    const ref = { index, operation }
    const writer = f.written.get(versionId(version))
    if (writer === undefined) {
      if (!f.unknown.has(versionId(version)))
        f.unknown.set(versionId(version), { version, seenBy: ref })
      return
    }
    const w = writer.operation
    const found = operation.reply?.found === true
    const mismatch =
      w.op === 'delete'
        ? found
        : !found || (Object.hasOwn(w, 'value') && !jsonEqual(operation.reply?.value, w.value))
    if (mismatch)
      push({
        kind: 'value-mismatch',
        key: operation.key,
        client: operation.client,
        earlier: writer,
        later: ref,
        observed: version,
        message: `${describeOperation(ref)} returned ${found ? JSON.stringify(operation.reply?.value) : 'not found'} for ${formatVersion(version)}, which ${describeOperation(writer)} wrote as ${w.op === 'delete' ? 'a tombstone' : JSON.stringify(w.value)}`,
      })
  })

  const final = history.final
  const keys = new Set([...facts.keys(), ...Object.keys(final ?? {})])
  for (const key of siblings) keys.add(key)
  for (const key of keys) {
    const f = factsOf(key)
    if (siblings.has(key)) {
      result.checked += checkSiblingConvergence(history, new SiblingOrder(history, key), f, push)
      reportUnknown(key, f, push)
      continue
    }
    const newest = f.newest && versionOf(f.newest.operation)
    const winners = final && finalWinners(final, key)
    if (final !== undefined && winners === undefined && newest !== undefined)
      push({
        kind: 'missing-final-state',
        key,
        required: newest,
        message: `no final state for a key whose newest acknowledged write is ${formatVersion(newest)}`,
      })
    if (winners !== undefined) {
      result.checked++
      if (winners.some((w) => !sameVersion(w, winners[0])))
        push({
          kind: 'diverged',
          key,
          winners,
          message: `regions ended on different winners`,
        })
      winners.forEach((winner, region) => {
        if (
          winner !== undefined &&
          !f.written.has(versionId(winner)) &&
          !f.unknown.has(versionId(winner))
        )
          f.unknown.set(versionId(winner), { version: winner, region })
        if (compareVersions(winner, newest) >= 0) return
        push({
          kind: 'lost-write',
          key,
          region,
          winners,
          required: newest,
          observed: winner,
          ...(f.newest && { earlier: f.newest }),
          message: `region ${region} ended on ${formatVersion(winner)}, older than ${formatVersion(newest)} acknowledged to ${f.newest ? describeOperation(f.newest) : 'a client'}`,
        })
      })
    }
    reportUnknown(key, f, push)
  }
  return result
}

/** Versions nobody wrote, beyond what indeterminate writes to their region could explain. */
function reportUnknown(
  key: string,
  f: KeyFacts,
  push: (v: Omit<Violation, 'check'>) => void,
): void {
  const byRegion = new Map<number, UnknownVersion[]>()
  for (const u of f.unknown.values())
    byRegion.set(u.version.dc, [...(byRegion.get(u.version.dc) ?? []), u])
  for (const [dc, unknown] of byRegion) {
    if (unknown.length <= (f.indeterminate.get(dc) ?? 0)) continue
    for (const u of unknown)
      push({
        kind: 'unknown-version',
        key,
        observed: u.version,
        ...(u.seenBy && { later: u.seenBy, client: u.seenBy.operation.client }),
        ...(u.region !== undefined && { region: u.region }),
        message: `${u.seenBy ? describeOperation(u.seenBy) + ' read' : `region ${u.region} ended on`} ${formatVersion(u.version)}, which no acknowledged write made${f.indeterminate.get(dc) ? ` (and more unknown versions than the ${f.indeterminate.get(dc)} unacknowledged writes to region ${dc} can explain)` : ''}`,
      })
  }
}
