/**
 * The workload driver: N concurrent logical clients, each with its own client (its own session),
 * reading, writing and deleting a few shared keys in regions picked at random, every call
 * recorded; then the converged state of every key in every region.
 */
import type { Durability, ReadLevel, WriteLevel } from '@causeway/core'
import { readFinalState, type ReadFinalStateOptions } from './final-state.js'
import { isWrite, newestAcknowledged, versionOf, type History, type Operation } from './history.js'
import { SiblingOrder } from './sibling-order.js'
import { versionId, type Version } from './version.js'
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
   * The namespace of the keys it makes (`<namespace>:<run>:<i>`): name a siblings namespace to
   * run the workload on siblings.
   * @default 'history'
   */
  namespace?: string
  /**
   * Chance that a put or delete of a key whose last read by the client returned a causal context
   * (siblings namespaces) sends that context, superseding what was read; otherwise the write is
   * blind. Writes with a context are what collapses siblings.
   * @default 0.5
   */
  contextProbability?: number
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
   * How long a client waits after a failed call before its next one, in ms, as an application
   * backs off: a region that is down for seconds then costs a few calls, not thousands.
   * @default 0
   */
  pauseAfterFailureMs?: number
  /**
   * Clients stop starting calls once this aborts (and after `durationMs` in any case): a fault
   * injector ends the calls a while after it healed what it broke.
   */
  signal?: AbortSignal
  /**
   * Levels of the calls; a list means one picked at random per call.
   * @default { read: 'session', write: 'session' }
   */
  level?: {
    read?: ReadLevel | readonly ReadLevel[]
    write?: WriteLevel | readonly WriteLevel[]
  }
  /**
   * Durability of the writes; a list means one picked at random per write.
   * @default the client's (not sent)
   */
  durability?: Durability | readonly Durability[]
  /**
   * Chance, before each call, that the client moves to another region picked at random.
   * @default 0.3
   */
  switchRegionProbability?: number
  /**
   * A pause between one call of a client and its next, ms (up to twice this, at random), so a
   * run spans the cluster's shipping delays rather than finishing inside them.
   * @default 0
   */
  pauseMs?: number
  /**
   * Relative weights of gets, puts and deletes.
   * @default { get: 5, put: 4, delete: 1 }
   */
  mix?: { get?: number; put?: number; delete?: number }
  /**
   * The weights of a client while it is in region `d`, by region id, in place of `mix` (regions
   * left out use `mix`): e.g. writers in one region and readers in another, which is how an
   * anomaly across regions shows.
   * @default `mix` everywhere
   */
  regionMix?: readonly ({ get?: number; put?: number; delete?: number } | undefined)[]
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
  const pauseMs = options.pauseMs ?? 0
  const regions = options.regions
  const readLevels = asList(options.level?.read ?? 'session')
  const writeLevels = asList(options.level?.write ?? 'session')
  const durabilities = options.durability === undefined ? [] : asList(options.durability)
  const baseMix = { ...DEFAULT_MIX, ...options.mix }
  const mixes = Array.from({ length: options.regions }, (_, d) => {
    const own = options.regionMix?.[d]
    return own === undefined ? baseMix : { ...DEFAULT_MIX, ...own }
  })
  const keys = Array.isArray(options.keys)
    ? [...(options.keys as readonly string[])]
    : freshKeys(
        typeof options.keys === 'number' ? options.keys : 4,
        seed,
        options.namespace ?? 'history',
      )
  const contextProbability = options.contextProbability ?? 0.5
  const pauseAfterFailureMs = options.pauseAfterFailureMs ?? 0
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
        // The context of this client's last read of each key (siblings namespaces).
        const contexts = new Map<string, string>()
        for (
          let n = 0;
          n < opsPerClient && now() - start < durationMs && !options.signal?.aborted;
          n++
        ) {
          if (n > 0 && pauseMs > 0)
            await new Promise((resolve) => setTimeout(resolve, pauseMs * (0.5 + random())))
          if (regions > 1 && random() < switchProbability)
            region = (region + 1 + Math.floor(random() * (regions - 1))) % regions
          const key = pick(keys)
          const timeout = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }
          const mix = mixes[region]!
          const r = random() * (mix.get + mix.put + mix.delete)
          const known = contexts.get(key)
          const context =
            known !== undefined && random() < contextProbability ? { context: known } : {}
          // Failures are in the history; the workload goes on, after a pause if asked.
          let failures = 0
          const failed = () => {
            failures++
            return undefined
          }
          if (r < mix.get) {
            const read = await session
              .get(key, { read: pick(readLevels), region, ...timeout })
              .catch(failed)
            if (read?.context !== undefined) contexts.set(key, read.context)
          } else {
            const durability = durabilities.length === 0 ? {} : { durability: pick(durabilities) }
            const write = {
              write: pick(writeLevels),
              region,
              ...timeout,
              ...durability,
              ...context,
            }
            await (
              r < mix.get + mix.put
                ? session.put(key, `c${i}#${n}`, write)
                : session.delete(key, write)
            ).catch(failed)
          }
          if (failures > 0 && pauseAfterFailureMs > 0)
            await new Promise((resolve) => setTimeout(resolve, pauseAfterFailureMs))
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
      siblingsSettled: (key, versions) => coversAcknowledged(recorder.operations, key, versions),
      now,
    })
    const failures: Record<string, number> = {}
    for (const op of recorder.operations)
      if (!op.ok) failures[op.error!.code] = (failures[op.error!.code] ?? 0) + 1
    return {
      history: recorder.history(state.final, state.finalSiblings),
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

function freshKeys(count: number, seed: number, namespace: string): string[] {
  const run = `${seed.toString(36)}.${Date.now().toString(36)}`
  return Array.from({ length: count }, (_, i) => `${namespace}:${run}:${i}`)
}

/** Whether `versions` of a siblings key hold or supersede every acknowledged write of it. */
function coversAcknowledged(
  operations: readonly Operation[],
  key: string,
  versions: readonly Version[],
): boolean {
  const covered = new SiblingOrder({ operations }, key).covered(versions)
  return operations.every((op) => {
    if (op.key !== key || !isWrite(op)) return true
    const version = versionOf(op)
    return version === undefined || covered.has(versionId(version))
  })
}
