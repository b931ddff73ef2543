/**
 * The causal order of the versions of a siblings-namespace key, as a history shows it. A read of
 * such a key returns a set of versions and a causal context; a write that sends that context
 * supersedes every version the read returned and, transitively, everything those had superseded.
 * A write without a context (a blind write) supersedes nothing. So a version is *covered* by a
 * set of versions when it is in the set or superseded by something in it, and that is what the
 * sibling checks ask of reads and of the converged state.
 *
 * The model needs nothing of the implementation: a context is an opaque string that names what
 * the read (or write reply) returning it had seen. Two reads that return the same context saw the
 * same versions (equal causal histories hold the same maximal versions).
 */
import {
  isIndeterminateWrite,
  isRead,
  isWrite,
  versionOf,
  versionsRead,
  type History,
  type WriteOperation,
} from './history.js'
import { versionId, type Version } from './version.js'

/** The versions of one siblings key and what each write superseded. */
export class SiblingOrder {
  readonly key: string
  /** The versions each context names (what the read or write returning it had seen), by context. */
  readonly #seen = new Map<string, Set<string>>()
  /** The versions each acknowledged write superseded directly, by the write's version id. */
  readonly #saw = new Map<string, Set<string>>()
  readonly #ancestors = new Map<string, Set<string>>()
  #superseded: Set<string> | undefined
  /** Versions that a write whose outcome is unknown, sent with a context, may have superseded. */
  readonly maybeSuperseded = new Set<string>()
  /** Contexts writes sent that no read or write reply of the history returned. */
  readonly unknownContexts = new Set<string>()

  constructor(history: History, key: string) {
    this.key = key
    const ops = history.operations.filter((op) => op.key === key)
    for (const op of ops) {
      if (!isRead(op) || !op.ok || op.reply?.context === undefined) continue
      this.#see(op.reply.context, versionsRead(op).map(versionId))
    }
    // In history (settle) order: a context a write sent was returned before the write was made.
    const unsure: Set<string>[] = []
    for (const op of ops) {
      if (!isWrite(op)) continue
      const saw = this.#sawOf(op)
      // Not as a type guard: its false branch would narrow `op` away.
      const indeterminate: boolean = isIndeterminateWrite(op)
      if (indeterminate) {
        unsure.push(saw)
        continue
      }
      const version = versionOf(op)
      if (version === undefined) continue
      const id = versionId(version)
      this.#saw.set(id, saw)
      if (op.reply?.context !== undefined) this.#see(op.reply.context, [...saw, id])
    }
    // Only now: ancestors are read once every write's `saw` is known.
    for (const saw of unsure)
      for (const id of this.covered([...saw].map(parseId))) this.maybeSuperseded.add(id)
  }

  /** Every version `version` superseded, directly or through the versions it superseded. */
  ancestors(version: Version): ReadonlySet<string> {
    return this.#ancestorsOf(versionId(version))
  }

  /** `versions` and everything they superseded, as version ids. */
  covered(versions: readonly Version[]): Set<string> {
    const out = new Set<string>()
    for (const v of versions) {
      const id = versionId(v)
      out.add(id)
      for (const a of this.#ancestorsOf(id)) out.add(a)
    }
    return out
  }

  /** True when `version` is superseded by one of the acknowledged writes. */
  isSuperseded(version: Version): boolean {
    if (this.#superseded === undefined) {
      this.#superseded = new Set()
      for (const w of this.#saw.keys())
        for (const a of this.#ancestorsOf(w)) this.#superseded.add(a)
    }
    return this.#superseded.has(versionId(version))
  }

  #see(context: string, ids: readonly string[]): void {
    let seen = this.#seen.get(context)
    if (seen === undefined) this.#seen.set(context, (seen = new Set()))
    for (const id of ids) seen.add(id)
  }

  #sawOf(write: WriteOperation): Set<string> {
    if (write.context === undefined) return new Set()
    const seen = this.#seen.get(write.context)
    if (seen === undefined) {
      this.unknownContexts.add(write.context)
      return new Set()
    }
    return seen
  }

  #ancestorsOf(id: string): Set<string> {
    const known = this.#ancestors.get(id)
    if (known !== undefined) return known
    const out = new Set<string>()
    // Placed first, so a (malformed) cycle ends instead of recursing forever.
    this.#ancestors.set(id, out)
    for (const parent of this.#saw.get(id) ?? []) {
      out.add(parent)
      for (const a of this.#ancestorsOf(parent)) out.add(a)
    }
    return out
  }
}

/** The inverse of `versionId`. */
export function parseId(id: string): Version {
  const at = id.lastIndexOf('@')
  return { ts: id.slice(0, at), dc: Number(id.slice(at + 1)) }
}

/** The {@link SiblingOrder} of every key in `keys`. */
export function siblingOrders(history: History, keys: Iterable<string>): Map<string, SiblingOrder> {
  return new Map([...keys].map((key) => [key, new SiblingOrder(history, key)]))
}
