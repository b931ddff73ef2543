/**
 * Causal consistency across keys (the causal shipping mode, Eunomia). Causality is the order of
 * the history's operations under three rules (thesis section 3.3.1): the order of one session's
 * calls, a read after the write whose version it returned ("read from"), and transitivity. A read
 * must return, for its key, a version at least as new as every write of that key in its causal
 * past; a write must get a version newer than every write of its key in its causal past (so that,
 * last writer winning, it wins over what it causally follows everywhere).
 *
 * The anomaly this catches and the per-key session checks cannot: a client reads `y`, whose
 * writer had written (or read) `x` before writing `y`, and then reads an older `x`. Such a read is
 * reported as a `stale-read` of check `causal`, with `crossKey: true` when no version of the key
 * its own session had read or written explains the requirement (it came through other keys).
 *
 * The causal past is computed along the graph of those rules (a call after every call of its session
 * that settled before it was made, a read after the write of each version it returned), in a
 * topological order: each operation carries, per key, the newest write of that key in its past. A
 * history whose reads return versions from their own causal future has no such order: the
 * operations on such a cycle are reported (`causal-cycle`).
 * Operations that failed are left out (a write that may have taken effect is only known through
 * the reads that returned its version, which name no reply to match). Keys of siblings
 * namespaces are left to the siblings checks.
 */
import {
  isRead,
  isWrite,
  precedes,
  siblingKeys,
  versionOf,
  versionsRead,
  type ClientId,
  type History,
  type Operation,
  type OperationRef,
  type ReadOperation,
  type WriteOperation,
} from '../history.js'
import { compareVersions, formatVersion, versionId, type Version } from '../version.js'
import { describeOperation, type CheckResult, type Violation } from '../violation.js'
import type { CheckOptions } from './levels.js'

/** Whether `op` promised causality (its level is `causal`, or `asIfCausal`). */
export function promisesCausal(op: Operation, options: CheckOptions): boolean {
  return options.asIfCausal === true || op.level === 'causal'
}

/** The newest write of a key in an operation's causal past. */
interface Requirement {
  version: Version
  writer: Node
}

interface Node {
  ref: OperationRef
  client: number
  /** Operations that must come before it. */
  before: Node[]
  after: Node[]
  /**
   * Once computed: per key, the newest write of it in the causal past of the operation and the
   * operation itself (shared with a predecessor's when nothing changed).
   */
  newest: Map<string, Requirement> | undefined
}

/**
 * Reports reads that returned a version older than a write of their key in their causal past,
 * writes not newer than one in theirs, and causal cycles.
 */
export function checkCausal(history: History, options: CheckOptions = {}): CheckResult {
  const result: CheckResult = { check: 'causal', violations: [], checked: 0, crossRegion: 0 }
  const siblings = siblingKeys(history)
  const clients = new Map<ClientId, number>()
  const sessions: Node[][] = []
  const writers = new Map<string, Node>()
  history.operations.forEach((operation, index) => {
    if (!operation.ok) return
    let c = clients.get(operation.client)
    if (c === undefined) {
      c = clients.size
      clients.set(operation.client, c)
      sessions.push([])
    }
    sessions[c]!.push({
      ref: { index, operation },
      client: c,
      before: [],
      after: [],
      newest: undefined,
    })
  })
  for (const nodes of sessions) {
    nodes.sort(
      (a, b) => a.ref.operation.invokedAt - b.ref.operation.invokedAt || a.ref.index - b.ref.index,
    )
    linkSession(nodes)
    for (const node of nodes) {
      const version = isWrite(node.ref.operation) ? versionOf(node.ref.operation) : undefined
      if (version !== undefined) writers.set(versionId(version), node)
    }
  }
  // Read from: a read comes after the write of every version it returned.
  for (const nodes of sessions)
    for (const node of nodes) {
      if (!isRead(node.ref.operation)) continue
      for (const version of versionsRead(node.ref.operation)) {
        const writer = writers.get(versionId(version))
        if (writer !== undefined && writer !== node) link(writer, node)
      }
    }

  for (const node of topological(sessions.flat())) {
    const op = node.ref.operation
    const past = pastOf(node)
    node.newest = past
    const version = isWrite(op) ? versionOf(op) : undefined
    if (version !== undefined && !siblings.has(op.key)) {
      const known = past.get(op.key)
      if (known === undefined || compareVersions(version, known.version) > 0) {
        node.newest = new Map(past)
        node.newest.set(op.key, { version, writer: node })
      }
    }
    if (siblings.has(op.key) || !promisesCausal(op, options)) continue
    const required = past.get(op.key)
    if (required === undefined) continue
    result.checked++
    if (required.writer.ref.operation.region !== op.region) result.crossRegion++
    if (isRead(op)) {
      const observed = versionOf(op)
      if (compareVersions(observed, required.version) >= 0) continue
      result.violations.push(
        staleRead(node, required, observed, sessionExplains(node, sessions, required.version)),
      )
    } else if (version !== undefined && compareVersions(version, required.version) <= 0) {
      result.violations.push({
        check: 'causal',
        kind: 'unordered-write',
        key: op.key,
        client: op.client,
        earlier: required.writer.ref,
        later: node.ref,
        required: required.version,
        observed: version,
        message: `${describeOperation(node.ref)} got ${formatVersion(version)}, not newer than ${formatVersion(required.version)} written by ${describeOperation(required.writer.ref)} in its causal past`,
      })
    }
  }
  for (const node of sessions.flat())
    if (node.newest === undefined)
      result.violations.push({
        check: 'causal',
        kind: 'causal-cycle',
        key: node.ref.operation.key,
        client: node.ref.operation.client,
        later: node.ref,
        message: `${describeOperation(node.ref)} is on a cycle of the causal order: it depends on an operation that depends on it (a read returned a version from its own causal future)`,
      })
  return result
}

function link(from: Node, to: Node): void {
  from.after.push(to)
  to.before.push(from)
}

/**
 * Session order: each call comes after every call of its session that settled before it was made
 * (`precedes`), linked without the edges transitivity gives (sequential calls get one each).
 * Calls of a session that overlap stay unordered.
 */
function linkSession(nodes: readonly Node[]): void {
  const prefixMaxCompleted: number[] = []
  let max = -Infinity
  for (const node of nodes)
    prefixMaxCompleted.push((max = Math.max(max, node.ref.operation.completedAt)))
  nodes.forEach((node, j) => {
    let latestLinked = -Infinity
    for (let i = j - 1; i >= 0; i--) {
      // Every call up to i settled before a linked one was made: all are in its past already.
      if (prefixMaxCompleted[i]! < latestLinked) break
      const earlier = nodes[i]!
      if (!precedes(earlier.ref, node.ref)) continue
      if (earlier.ref.operation.completedAt < latestLinked) continue
      link(earlier, node)
      latestLinked = Math.max(latestLinked, earlier.ref.operation.invokedAt)
    }
  })
}

// Kahn's algorithm: a topological order of the nodes not on a cycle.
function topological(nodes: readonly Node[]): Node[] {
  const waiting = new Map<Node, number>()
  const ready: Node[] = []
  for (const node of nodes) {
    waiting.set(node, node.before.length)
    if (node.before.length === 0) ready.push(node)
  }
  const order: Node[] = []
  while (ready.length > 0) {
    const node = ready.pop()!
    order.push(node)
    for (const after of node.after) {
      const left = waiting.get(after)! - 1
      waiting.set(after, left)
      if (left === 0) ready.push(after)
    }
  }
  return order
}

// The newest write of each key in the node's causal past: the newest among its predecessors'.
function pastOf(node: Node): Map<string, Requirement> {
  const [first, ...rest] = node.before
  if (first === undefined) return new Map()
  if (rest.length === 0) return first.newest!
  const merged = new Map(first.newest!)
  for (const before of rest)
    for (const [key, req] of before.newest!) {
      const known = merged.get(key)
      if (known === undefined || compareVersions(req.version, known.version) > 0)
        merged.set(key, req)
    }
  return merged
}

// Whether the session itself had read or written a version of the key at least `required`
// before the call (then the per-key guarantees already require it; otherwise only causality does).
function sessionExplains(node: Node, sessions: readonly Node[][], required: Version): boolean {
  const key = node.ref.operation.key
  for (const earlier of sessions[node.client]!) {
    if (earlier === node) break
    const op = earlier.ref.operation
    if (op.key !== key || !precedes(earlier.ref, node.ref)) continue
    const versions = isRead(op) ? versionsRead(op) : [versionOf(op)]
    if (versions.some((v) => v !== undefined && compareVersions(v, required) >= 0)) return true
  }
  return false
}

function staleRead(
  node: Node,
  required: Requirement,
  observed: Version | undefined,
  explained: boolean,
): Violation {
  const read = node.ref as OperationRef<ReadOperation>
  const writer = required.writer.ref as OperationRef<WriteOperation>
  return {
    check: 'causal',
    kind: 'stale-read',
    key: read.operation.key,
    client: read.operation.client,
    earlier: writer,
    later: read,
    required: required.version,
    observed,
    crossKey: !explained,
    message: `${describeOperation(read)} returned ${formatVersion(observed)}, older than ${formatVersion(required.version)} written by ${describeOperation(writer)} in its causal past${explained ? '' : ' (known to it only through other keys)'}`,
  }
}
