/**
 * One chaos scenario, start to end: a fresh cluster, concurrent SDK sessions recording a history
 * (`@causeway/history`'s workload: session reads, session writes at `durability: 'majority'` and
 * `'leader'` mixed, clients moving between regions), the fault injected mid-run and healed after
 * the outage, the regions left to converge, every copy of every partition log read, and the
 * checks of `chaos-checks.ts`.
 */
import { connect } from '@causeway/client'
import { partitionOf } from '@causeway/core'
import { runWorkload, type KvClient, type WorkloadResult } from '@causeway/history'
import { checkRun, failureReasons, type Findings, type LogCopy } from './chaos-checks.js'
import { EmbeddedChaosCluster } from './embedded-chaos-cluster.js'
import { readFeedLogs } from './feed-logs.js'
import { RedisChaosCluster } from './redis-chaos-cluster.js'
import type { Injected, Scenario } from './scenarios.js'

/** How long and how hard a scenario runs. */
export interface Timing {
  /** Concurrent sessions. */
  clients: number
  /** When the fault is injected, from the start of the calls, in ms. */
  faultAtMs: number
  /** How long the fault lasts before it is healed. */
  outageMs: number
  /** How long the sessions go on once the fault is healed (the restart done). */
  afterHealMs: number
  /** Calls per session, at most (the duration bounds them first). */
  opsPerClient: number
}

/** The short mode (CI, every change) and the full run. */
export const TIMINGS: Record<'short' | 'full', Timing> = {
  // 8 s after the healing: a lost leader is replaced in about 4 s from the fault, and the goal
  // is under 10 s; at 4 s a CI run once ended before the first write after a failover.
  short: { clients: 6, faultAtMs: 2_000, outageMs: 2_000, afterHealMs: 8_000, opsPerClient: 4_000 },
  full: {
    clients: 8,
    faultAtMs: 6_000,
    outageMs: 5_000,
    afterHealMs: 12_000,
    opsPerClient: 10_000,
  },
}

/** The shape of every scenario's cluster. */
export const SHAPE = { regions: 2, partitions: 2, replicas: 3, gatewaysPerRegion: 2 }

/** A scenario's outcome. */
export interface ScenarioResult {
  name: string
  fault: string
  backend: Scenario['backend']
  knownFailure?: string
  seed: number
  target: string
  /** ms from the start of the calls: the fault, and its healing. */
  faultAtMs: number
  healedAtMs: number
  findings: Findings
  passed: boolean
  reasons: string[]
  /** Wall time of the whole scenario (cluster start and stop included), in ms. */
  elapsedMs: number
}

const KEYS_PER_PARTITION = 3

/**
 * Longest the sessions go on past `afterHealMs` waiting for the first write acknowledged where the
 * fault hit: the judge's "time to recover" needs one, and on a loaded machine a failover took
 * longer than the fixed `afterHealMs` (the sessions ended first and the run failed as "no write
 * acknowledged after the fault", twice in fifteen CI runs). A run that does not recover within it
 * still fails.
 */
const RECOVERY_DEADLINE_MS = 90_000

/**
 * The writes the sessions got acknowledged, as they complete (the history is only returned at the
 * end): when each was called, the region that answered it and its key.
 */
class AcknowledgedWrites {
  readonly #writes: { invokedAt: number; region: number; key: string }[] = []

  /** `db`, recording each acknowledged put and delete. */
  wrap(db: KvClient): KvClient {
    const record = async <T extends { region?: number }>(
      key: string,
      region: number,
      call: () => Promise<T>,
    ): Promise<T> => {
      const invokedAt = performance.now()
      const reply = await call()
      this.#writes.push({ invokedAt, region: reply.region ?? region, key })
      return reply
    }
    return {
      get: (key, options) => db.get(key, options),
      put: (key, value, options) => record(key, options.region, () => db.put(key, value, options)),
      delete: (key, options) => record(key, options.region, () => db.delete(key, options)),
      close: () => db.close?.(),
    }
  }

  /** Whether a write called after `fault` was acknowledged where it hit (as the judge counts). */
  recoveredFrom(fault: Injected, partitions: number): boolean {
    return this.#writes.some(
      (w) =>
        w.invokedAt >= fault.at &&
        w.region === fault.region &&
        (fault.partition === undefined || partitionOf(w.key, partitions) === fault.partition),
    )
  }
}

/** Runs `scenario`; never throws for what the cluster does, only for a harness failure. */
export async function runScenario(
  scenario: Scenario,
  timing: Timing,
  seed: number,
  log: (line: string) => void,
): Promise<ScenarioResult> {
  const started = performance.now()
  const prefix = `chaos:${scenario.name}:${seed.toString(36)}:`
  const keys = keysFor(prefix, SHAPE.partitions, KEYS_PER_PARTITION)
  const cluster = await startCluster(scenario, log)
  try {
    log(`${scenario.name}: running ${timing.clients} sessions`)
    const callsStart = performance.now()
    const end = new AbortController()
    const acknowledged = new AcknowledgedWrites()
    const workload = runWorkload({
      connect: async ({ url }) => acknowledged.wrap(await connect({ url })),
      url: cluster.urls,
      regions: SHAPE.regions,
      clients: timing.clients,
      keys,
      opsPerClient: timing.opsPerClient,
      // The end comes `afterHealMs` after the healing; this only bounds a heal that never ends.
      durationMs:
        timing.faultAtMs + timing.outageMs + timing.afterHealMs + RECOVERY_DEADLINE_MS + 120_000,
      signal: end.signal,
      switchRegionProbability: 0.3,
      level: { read: 'session', write: 'session' },
      durability: ['majority', 'leader'],
      seed,
      timeoutMs: 4_000,
      pauseAfterFailureMs: 100,
      // A deadline, not a verdict on speed: the regions converge once shipping resumes, which a
      // loaded machine may take longer than 20 s to show.
      convergence: { timeoutMs: 60_000 },
    })
    // A failed workload must not leave the fault timeline waiting on it.
    workload.catch(() => undefined)
    await sleep(timing.faultAtMs)
    const injected = await (scenario.backend === 'redis'
      ? scenario.inject(cluster as RedisChaosCluster)
      : scenario.inject(cluster as EmbeddedChaosCluster))
    log(`${scenario.name}: fault: ${injected.target}`)
    await sleep(timing.outageMs)
    await injected.heal()
    const healedAt = performance.now()
    log(`${scenario.name}: healed after ${Math.round(healedAt - injected.at)} ms`)
    await sleep(timing.afterHealMs)
    // Not before a write called after the fault was acknowledged where it hit (or the deadline).
    const recoveryDeadline = performance.now() + RECOVERY_DEADLINE_MS
    while (
      !acknowledged.recoveredFrom(injected, SHAPE.partitions) &&
      performance.now() < recoveryDeadline
    )
      await sleep(200)
    end.abort()
    const result = await workload
    log(
      `${scenario.name}: ${result.history.operations.length} calls; converged ${result.converged} in ${Math.round(result.elapsedMs.convergence)} ms`,
    )
    const findings = await judge(cluster, result, injected, prefix)
    const reasons = failureReasons(findings)
    return {
      name: scenario.name,
      fault: scenario.fault,
      backend: scenario.backend,
      ...(scenario.knownFailure ? { knownFailure: scenario.knownFailure } : {}),
      seed,
      target: injected.target,
      faultAtMs: injected.at - callsStart,
      healedAtMs: healedAt - callsStart,
      findings,
      passed: reasons.length === 0,
      reasons,
      elapsedMs: performance.now() - started,
    }
  } finally {
    await cluster.close()
  }
}

/**
 * Reads every log and checks the run; while logs are lost or diverged (or cannot be read), reads
 * them again (a follower still catching up is not a loss), for at most 20 s.
 */
async function judge(
  cluster: RedisChaosCluster | EmbeddedChaosCluster,
  result: WorkloadResult,
  injected: Injected,
  prefix: string,
): Promise<Findings> {
  const deadline = performance.now() + 20_000
  for (;;) {
    let logs: LogCopy[]
    try {
      logs =
        cluster instanceof RedisChaosCluster
          ? await cluster.readLogs()
          : await readFeedLogs(cluster.urls, prefix)
    } catch (error) {
      // A server still loading its data after a restart answers -LOADING: read again.
      if (performance.now() > deadline) throw error
      await sleep(1_000)
      continue
    }
    const findings = checkRun({
      history: result.history,
      converged: result.converged,
      logs,
      partitions: SHAPE.partitions,
      fault: {
        injectedAt: injected.at,
        region: injected.region,
        ...(injected.partition === undefined ? {} : { partition: injected.partition }),
      },
    })
    const settled = findings.lost === 0 && findings.divergedLogs === 0
    if (settled || performance.now() > deadline) return findings
    await sleep(1_000)
  }
}

/** `count` keys in each partition, all starting with `prefix`. */
export function keysFor(prefix: string, partitions: number, count: number): string[] {
  const keys: string[] = []
  const per = new Array<number>(partitions).fill(0)
  for (let i = 0; keys.length < partitions * count && i < 100_000; i++) {
    const key = `${prefix}${i}`
    const p = partitionOf(key, partitions)
    if (per[p]! < count) {
      per[p]!++
      keys.push(key)
    }
  }
  return keys
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * The scenario's cluster; a start that fails is tried again (twice): ports are picked free ahead
 * of the processes that bind them, and on a shared machine another process may take one first.
 */
async function startCluster(
  scenario: Scenario,
  log: (line: string) => void,
): Promise<RedisChaosCluster | EmbeddedChaosCluster> {
  for (let attempt = 1; ; attempt++) {
    log(`${scenario.name}: starting the cluster`)
    try {
      return await startOnce(scenario, log)
    } catch (error) {
      if (attempt >= 3) throw error
      log(`${scenario.name}: the cluster did not start (${String(error)}); again`)
    }
  }
}

function startOnce(
  scenario: Scenario,
  log: (line: string) => void,
): Promise<RedisChaosCluster | EmbeddedChaosCluster> {
  return scenario.backend === 'redis'
    ? RedisChaosCluster.start({
        regions: SHAPE.regions,
        partitions: SHAPE.partitions,
        replicas: SHAPE.replicas,
        gateways: SHAPE.gatewaysPerRegion,
        ...(scenario.clockOffsetMs ? { clockOffsetMs: scenario.clockOffsetMs } : {}),
        log: (line) => log(`${scenario.name}: ${line}`),
      })
    : EmbeddedChaosCluster.start({
        regions: SHAPE.regions,
        partitions: SHAPE.partitions,
        replicas: SHAPE.replicas,
        log: (line) => log(`${scenario.name}: ${line}`),
      })
}
