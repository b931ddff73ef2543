/**
 * Reading the state a cluster converged to: every key in every region, with eventual reads,
 * polled until the regions agree.
 */
import type { FinalSiblings, FinalState } from './history.js'
import type { KvClient } from './kv-client.js'
import { compareVersions, sameVersion, versionId, type Version } from './version.js'

/** Options of {@link readFinalState}. */
export interface ReadFinalStateOptions {
  /** The client the final reads go through (not one of the recorded sessions). */
  db: KvClient
  keys: readonly string[]
  /** Number of regions; ids are `0 .. regions - 1`. */
  regions: number
  /**
   * The newest acknowledged version of each key. Regions that agree on something older are not
   * done yet: a lagging follower can show an agreement that shipping has not finished.
   * @default no floor
   */
  atLeast?: ReadonlyMap<string, Version>
  /**
   * For keys of siblings namespaces: whether a set of versions all regions agree on is final
   * (e.g. it covers every acknowledged write). Regions that agree on a set it refuses are not
   * done yet.
   * @default any agreement is final
   */
  siblingsSettled?: (key: string, versions: readonly Version[]) => boolean
  /**
   * How long to wait for convergence before returning what was last read.
   * @default 10_000
   */
  timeoutMs?: number
  /**
   * Pause between two polls, in ms.
   * @default 50
   */
  intervalMs?: number
  /**
   * How many polls in a row must show the converged state.
   * @default 2
   */
  stablePolls?: number
  /** The clock of `timeoutMs`. @default performance.now */
  now?: () => number
}

/** What {@link readFinalState} saw. */
export interface FinalStateResult {
  /** For each key, the winner each region returned last (a failed read keeps the one before). */
  final: FinalState
  /**
   * For each key of a siblings namespace (one whose reads return versions), the versions each
   * region returned last, sorted by `(ts, dc)`; such keys are left out of `final`.
   */
  finalSiblings: FinalSiblings
  /** Whether every region agreed on every key, at or above `atLeast`, before the timeout. */
  converged: boolean
  polls: number
  elapsedMs: number
}

/**
 * Polls every key in every region until all regions agree on every key, at or above `atLeast`,
 * for `stablePolls` polls in a row, or until `timeoutMs`. A state that never converges is still
 * returned, so the convergence check can say what is wrong with it.
 */
export async function readFinalState(options: ReadFinalStateOptions): Promise<FinalStateResult> {
  const now = options.now ?? (() => performance.now())
  const timeoutMs = options.timeoutMs ?? 10_000
  const intervalMs = options.intervalMs ?? 50
  const stablePolls = options.stablePolls ?? 2
  const { db, keys, regions } = options
  const start = now()
  const final: Record<string, (Version | undefined)[]> = Object.fromEntries(
    keys.map((k) => [k, new Array<Version | undefined>(regions).fill(undefined)]),
  )
  const sets: Record<string, Version[][]> = {}
  let polls = 0
  let inARow = 0
  for (;;) {
    polls++
    const reads = keys.flatMap((key) =>
      Array.from({ length: regions }, async (_, region) => {
        try {
          const r = await db.get(key, { read: 'eventual', region })
          final[key]![region] =
            r.ts === undefined || r.dc === undefined ? undefined : { ts: r.ts, dc: r.dc }
          if (r.versions !== undefined) {
            sets[key] ??= Array.from({ length: regions }, () => [])
            sets[key][region] = r.versions
              .map(({ ts, dc }) => ({ ts, dc }))
              .sort((a, b) => compareVersions(a, b))
          }
          return true
        } catch {
          return false
        }
      }),
    )
    const allRead = (await Promise.all(reads)).every(Boolean)
    const settled =
      allRead &&
      keys.every((key) => {
        const set = sets[key]
        if (set !== undefined) {
          const ids = set.map((s) => s.map(versionId).join(','))
          return (
            ids.every((id) => id === ids[0]) && (options.siblingsSettled?.(key, set[0]!) ?? true)
          )
        }
        const winners = final[key]!
        return (
          winners.every((w) => sameVersion(w, winners[0])) &&
          compareVersions(winners[0], options.atLeast?.get(key)) >= 0
        )
      })
    inARow = settled ? inARow + 1 : 0
    const elapsedMs = now() - start
    if (inARow >= stablePolls || elapsedMs + intervalMs > timeoutMs) {
      for (const key of Object.keys(sets)) delete final[key]
      return {
        final,
        finalSiblings: sets,
        converged: inARow >= stablePolls,
        polls,
        elapsedMs,
      }
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
