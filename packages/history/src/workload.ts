/**
 * The workload driver: N concurrent logical clients, each with its own client (its own session),
 * reading, writing and deleting a few shared keys in regions picked at random, every call
 * recorded; then the converged state of every key in every region.
 */
import type { ReadLevel, WriteLevel } from '@causeway/core'
import { readFinalState, type ReadFinalStateOptions } from './final-state.js'
import { newestAcknowledged, type History } from './history.js'
import type { KvClient } from './kv-client.js'
import { seededRandom } from './prng.js'
import { HistoryRecorder } from './recorder.js'

/** Options of {@link runWorkload}. */
export interface WorkloadOptions {
  /**
   * Makes one client; called once per logical client (each gets its own session) and once for
   * the final reads. `connect` from `@causeway/client` fits.
   */
  connect: (options: { url: string }) => Promise<KvClient>
  /** Gateway URL(s); clients take them in turn. */
  url: string | readonly string[]
  /** Number of regions; ids are `0 .. regions - 1`. */
  regions: number
  /**
   * Number of concurrent logical clients.
   * @default 4
   */
  clients?: number
  /**
   * The keys, or how many to make (fresh names for each run, so runs never share keys).
   * @default 4
   */
  keys?: number | readonly string[]
  /**
   * Calls per client, at most.
   * @default 50
   */
  opsPerClient?: number
  /**
   * Clients stop starting calls after this many ms.
   * @default 5_000
   */
  durationMs?: number
  /**
   * Levels of the calls; a list means one picked at random per call.
   * @default { read: 'session', write: 'session' }
   */
  level?: {
    read?: ReadLevel | readonly ReadLevel[]
    write?: WriteLevel | readonly WriteLevel[]
  }
  /**
   * Chance, before each call, that the client moves to another region picked at random.
   * @default 0.3
   */
  switchRegionProbability?: number
  /**
   * Relative weights of gets, puts and deletes.
   * @default { get: 5, put: 4, delete: 1 }
   */
  mix?: { get?: number; put?: number; delete?: number }
  /**
   * Seed of every random choice (the timing of a real cluster is not replayable, the choices are).
   * @default a random seed, reported in the result
   */
  seed?: number
  /**
   * Deadline of each call, passed to the client.
   * @default the client's own
   */
  timeoutMs?: number
  /** How the final state is awaited. @default readFinalState's defaults */
  convergence?: Pick<ReadFinalStateOptions, 'timeoutMs' | 'intervalMs' | 'stablePolls'>
  /** Monotonic clock of the history. @default performance.now */
  now?: () => number
}

/** What {@link runWorkload} recorded. */
export interface WorkloadResult {
  /** Every call, and the final state. */
  history: History
  keys: string[]
  seed: number
  /** Whether the regions converged before the convergence timeout. */
  converged: boolean
  /** How many calls failed, by error code. */
  failures: Record<string, number>
  /** Time spent on the calls, and on waiting for convergence, in ms. */
  elapsedMs: { calls: number; convergence: number }
}

const DEFAULT_MIX = { get: 5, put: 4, delete: 1 }

/**
 * Runs the workload and returns its history, bounded by `opsPerClient` and `durationMs` (and by
 * the convergence timeout). Failed calls are recorded, not thrown; a failed `connect` is thrown.
 */
export async function runWorkload(options: WorkloadOptions): Promise<WorkloadResult> {
  const now = options.now ?? (() => performance.now())
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32)
  const urls = typeof options.url === 'string' ? [options.url] : options.url
  const clients = options.clients ?? 4
  const opsPerClient = options.opsPerClient ?? 50
  const durationMs = options.durationMs ?? 5_000
  const switchProbability = options.switchRegionProbability ?? 0.3
  const regions = options.regions
  const readLevels = asList(options.level?.read ?? 'session')
  const writeLevels = asList(options.level?.write ?? 'session')
  const mix = { ...DEFAULT_MIX, ...options.mix }
  const keys = Array.isArray(options.keys)
    ? [...(options.keys as readonly string[])]
    : freshKeys(typeof options.keys === 'number' ? options.keys : 4, seed)
  if (urls.length === 0 || regions < 1 || keys.length === 0 || clients < 1)
    throw new RangeError('runWorkload needs a url, a region, a key and a client')

  const recorder = new HistoryRecorder({ now })
  const start = now()
  const runs = await Promise.allSettled(
    Array.from({ length: clients }, async (_, i) => {
      const db = await options.connect({ url: urls[i % urls.length]! })
      try {
        const session = recorder.wrap(`c${i}`, db)
        // Each client draws from its own stream, so its choices do not depend on interleaving.
        const random = seededRandom(seed ^ Math.imul(i + 1, 0x9e3779b9))
        const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
        let region = i % regions
        for (let n = 0; n < opsPerClient && now() - start < durationMs; n++) {
          if (regions > 1 && random() < switchProbability)
            region = (region + 1 + Math.floor(random() * (regions - 1))) % regions
          const key = pick(keys)
          const timeout = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }
          const r = random() * (mix.get + mix.put + mix.delete)
          // Failures are in the history; the workload goes on.
          await (
            r < mix.get
              ? session.get(key, { read: pick(readLevels), region, ...timeout })
              : r < mix.get + mix.put
                ? session.put(key, `c${i}#${n}`, { write: pick(writeLevels), region, ...timeout })
                : session.delete(key, { write: pick(writeLevels), region, ...timeout })
          ).catch(() => undefined)
        }
      } finally {
        await db.close?.()
      }
    }),
  )
  const callsMs = now() - start
  const refused = runs.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (refused) throw refused.reason

  const observer = await options.connect({ url: urls[0]! })
  try {
    const state = await readFinalState({
      ...options.convergence,
      db: observer,
      keys,
      regions,
      atLeast: newestAcknowledged(recorder.operations),
      now,
    })
    const failures: Record<string, number> = {}
    for (const op of recorder.operations)
      if (!op.ok) failures[op.error!.code] = (failures[op.error!.code] ?? 0) + 1
    return {
      history: recorder.history(state.final),
      keys,
      seed,
      converged: state.converged,
      failures,
      elapsedMs: { calls: callsMs, convergence: state.elapsedMs },
    }
  } finally {
    await observer.close?.()
  }
}

function asList<T extends string>(level: T | readonly T[]): readonly T[] {
  return typeof level === 'string' ? [level] : level
}

function freshKeys(count: number, seed: number): string[] {
  const run = `${seed.toString(36)}.${Date.now().toString(36)}`
  return Array.from({ length: count }, (_, i) => `history:${run}:${i}`)
}
