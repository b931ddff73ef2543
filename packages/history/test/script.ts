/**
 * A terse way to write histories by hand: each call appends one operation. Intervals default to
 * a sequence that never overlaps (`[10, 15]`, `[20, 25]`, ...); pass `at` to make ops overlap.
 */
import { hlcFrom, type ReadLevel, type WriteLevel } from '@causeway/core'
import type { FinalState, History, Operation, Version } from '../src/index.js'

/** Version `ms` milliseconds into the HLC epoch, from region `dc`. */
export function v(ms: number, dc = 0): Version {
  return { ts: hlcFrom(ms, 0), dc }
}

interface Common {
  at?: [number, number]
  /** Region the call went to; defaults to the version's dc (or 0). */
  region?: number
  /** Makes the call fail with this code. */
  error?: string
}

export function script() {
  let clock = 0
  const operations: Operation[] = []
  const span = (at?: [number, number]) => {
    if (at) return { invokedAt: at[0], completedAt: at[1] }
    clock += 10
    return { invokedAt: clock, completedAt: clock + 5 }
  }
  const outcome = (error: string | undefined) =>
    error === undefined ? { ok: true } : { ok: false, error: { code: error } }

  return {
    operations,
    /** A put that got `version` (or failed with `o.error`). */
    put(
      client: string,
      key: string,
      version: Version,
      o: Common & { level?: WriteLevel; value?: unknown } = {},
    ): number {
      operations.push({
        client,
        op: 'put',
        key,
        region: o.region ?? version.dc,
        level: o.level ?? 'session',
        value: o.value ?? `${client}@${version.ts}`,
        ...span(o.at),
        ...outcome(o.error),
        ...(o.error === undefined && { reply: { ...version, idx: 1 } }),
      } as Operation)
      return operations.length - 1
    },
    /** A delete that got tombstone `version`. */
    del(
      client: string,
      key: string,
      version: Version,
      o: Common & { level?: WriteLevel } = {},
    ): number {
      operations.push({
        client,
        op: 'delete',
        key,
        region: o.region ?? version.dc,
        level: o.level ?? 'session',
        ...span(o.at),
        ...outcome(o.error),
        ...(o.error === undefined && { reply: { ...version, idx: 1 } }),
      } as Operation)
      return operations.length - 1
    },
    /**
     * A get that returned `version` (`undefined`: nothing). `found` defaults to whether a version
     * was returned, `value` to what `put` writes by default for that version.
     */
    get(
      client: string,
      key: string,
      version: Version | undefined,
      o: Common & { level?: ReadLevel; found?: boolean; value?: unknown; writer?: string } = {},
    ): number {
      const found = o.found ?? version !== undefined
      const value = o.value ?? (version && `${o.writer ?? client}@${version.ts}`)
      operations.push({
        client,
        op: 'get',
        key,
        region: o.region ?? version?.dc ?? 0,
        level: o.level ?? 'session',
        ...span(o.at),
        ...outcome(o.error),
        ...(o.error === undefined && {
          reply: {
            found,
            ...(found && { value }),
            ...(version && { ts: version.ts, dc: version.dc }),
          },
        }),
      } as Operation)
      return operations.length - 1
    },
    history(final?: FinalState): History {
      return final === undefined ? { operations } : { operations, final }
    },
  }
}
