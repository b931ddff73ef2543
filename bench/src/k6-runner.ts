/**
 * Runs k6 for the harness: finds the binary, writes a plan of scenarios run one after the other
 * (`bench/k6/plan.js` turns it into k6 scenarios), and reads each scenario's numbers back from
 * k6's summary.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The k6 version the harness is documented and tested with. */
export const K6_VERSION = 'v1.8.1'
const INSTALL = `go install go.k6.io/k6@${K6_VERSION}`

/** The harness's k6 script. */
export const PLAN_SCRIPT = fileURLToPath(new URL('../k6/plan.js', import.meta.url))

/** Where the `go` tool installs binaries, or undefined when there is no `go`. */
function goBin(): string | undefined {
  try {
    const gopath = execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8', timeout: 10_000 })
    return gopath.trim() ? join(gopath.trim().split(delimiter)[0]!, 'bin') : undefined
  } catch {
    return undefined
  }
}

/**
 * The k6 binary: `K6` from the environment, else `k6` on PATH, else `$(go env GOPATH)/bin/k6`
 * (where `go install` puts it), else `~/go/bin/k6`. Throws, saying how to install it, when none
 * exists.
 */
export function findK6(
  env: NodeJS.ProcessEnv = process.env,
  where: { goBin?: () => string | undefined; home?: string } = {},
): string {
  const candidates: string[] = []
  if (env.K6) candidates.push(env.K6)
  for (const dir of (env.PATH ?? '').split(delimiter)) if (dir) candidates.push(join(dir, 'k6'))
  const fromGo = (where.goBin ?? goBin)()
  if (fromGo) candidates.push(join(fromGo, 'k6'))
  candidates.push(join(where.home ?? homedir(), 'go', 'bin', 'k6'))
  const found = candidates.find((path) => existsSync(path))
  if (found) return found
  throw new Error(
    `k6 not found (looked at $K6, PATH and $(go env GOPATH)/bin). Install it with:\n  ${INSTALL}\n` +
      'or set K6=/path/to/k6. See bench/README.md.',
  )
}

/** One scenario of a plan: `vus` virtual users running `exec` for `durationS` seconds. */
export interface PlannedScenario {
  /** Unique; letters, digits and `_` only (k6 scenario names). */
  name: string
  /** The k6 function: `mixed` (the SDK workload) or `raw` (plain HTTP). */
  exec: 'mixed' | 'raw'
  vus: number
  durationS: number
  /** Environment of the scenario (see `bench/k6/lib/workload.js`). */
  env: Record<string, string>
}

/** What one scenario measured (only its recorded window, after warm-up). */
export interface ScenarioResult {
  name: string
  ops: number
  /** Operations per second over the recorded window. */
  throughput: number
  latency: LatencyStats
  get?: LatencyStats
  put?: LatencyStats
  /** Share of calls that failed. */
  failed: number
  /** Mean wait of the serving replica for the session, ms. */
  readWaitMs?: number
  /** Mean wait of a put at its leader for its dependencies ("without HLC" ablation only), ms. */
  writeWaitMs?: number
  retries: number
  errors: number
}

/** Latency of calls, in ms. */
export interface LatencyStats {
  avg: number
  p50: number
  p90: number
  p99: number
  max: number
  count: number
}

/**
 * Seconds between the end of one scenario and the start of the next. Calls still in flight at
 * a scenario's end finish during the next one's warm-up, which is not recorded.
 */
const GAP_S = 0.5

/** How long a plan takes, in seconds. */
export function planSeconds(scenarios: readonly PlannedScenario[]): number {
  return scenarios.reduce((sum, s) => sum + s.durationS + GAP_S, 0)
}

/** The plan file `plan.js` reads: the scenarios with their start times. */
export function planFile(scenarios: readonly PlannedScenario[]): object {
  const names = new Set<string>()
  let startS = 0
  return {
    scenarios: scenarios.map((s) => {
      if (!/^[A-Za-z0-9_]+$/.test(s.name) || names.has(s.name)) {
        throw new Error(`scenario name ${JSON.stringify(s.name)} must be unique, [A-Za-z0-9_]+`)
      }
      names.add(s.name)
      const planned = { ...s, startS }
      startS += s.durationS + GAP_S
      return planned
    }),
  }
}

interface K6Summary {
  metrics: Record<string, { values: Record<string, number> } | undefined>
}

function latency(summary: K6Summary, key: string): LatencyStats | undefined {
  const v = summary.metrics[key]?.values
  if (!v || !v.count) return undefined
  return {
    avg: v.avg!,
    p50: v.med!,
    p90: v['p(90)']!,
    p99: v['p(99)']!,
    max: v.max!,
    count: v.count,
  }
}

/** Reads each scenario's numbers from k6's summary. */
export function scenarioResults(
  summary: K6Summary,
  scenarios: readonly PlannedScenario[],
): ScenarioResult[] {
  return scenarios.map((s) => {
    const only = `scenario:${s.name}`
    const all = latency(summary, `causeway_op_duration{${only}}`)
    const ops = summary.metrics[`causeway_ops{${only}}`]?.values.count ?? 0
    const warmupS = Number(s.env.WARMUP_S ?? 0)
    const result: ScenarioResult = {
      name: s.name,
      ops,
      throughput: ops / Math.max(1e-9, s.durationS - warmupS),
      latency: all ?? { avg: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN, count: 0 },
      failed: summary.metrics[`causeway_op_failed{${only}}`]?.values.rate ?? 0,
      retries: summary.metrics[`causeway_read_retries{${only}}`]?.values.count ?? 0,
      errors: summary.metrics[`causeway_errors{${only}}`]?.values.count ?? 0,
    }
    const get = latency(summary, `causeway_op_duration{${only},op:get}`)
    const put = latency(summary, `causeway_op_duration{${only},op:put}`)
    if (get) result.get = get
    if (put) result.put = put
    const wait = summary.metrics[`causeway_read_wait{${only}}`]?.values
    if (wait?.count) result.readWaitMs = wait.avg
    const writeWait = summary.metrics[`causeway_write_wait{${only}}`]?.values
    if (writeWait?.count) result.writeWaitMs = writeWait.avg
    return result
  })
}

/** Options of {@link runPlan}. */
export interface RunPlanOptions {
  /** Path of the k6 binary. @default findK6() */
  k6?: string
  /** Called with each line k6 prints (errors, warnings). @default writes to stderr */
  onOutput?: (line: string) => void
}

/**
 * Runs the scenarios with k6, one after the other, and returns what each measured. Rejects if
 * k6 fails (a threshold never fails here: the plan's thresholds only expose sub-metrics).
 */
export async function runPlan(
  scenarios: readonly PlannedScenario[],
  options: RunPlanOptions = {},
): Promise<ScenarioResult[]> {
  const k6 = options.k6 ?? findK6()
  const dir = await mkdtemp(join(tmpdir(), 'causeway-k6-'))
  const onOutput = options.onOutput ?? ((line: string) => process.stderr.write(`  k6: ${line}\n`))
  try {
    const plan = join(dir, 'plan.json')
    const summaryPath = join(dir, 'summary.json')
    await writeFile(plan, JSON.stringify(planFile(scenarios)))
    const args = [
      'run',
      '--quiet',
      '--no-usage-report',
      // No REST API listener: nothing to clash with, nothing extra listening.
      '--address',
      '',
      '-e',
      `PLAN=${plan}`,
      '-e',
      `SUMMARY=${summaryPath}`,
      PLAN_SCRIPT,
    ]
    // k6 initialises every VU (each parses the bundle) before the first scenario, slowly on a
    // busy machine: the bound is generous, it only catches a k6 that hangs.
    const limitS = planSeconds(scenarios) * 1.5 + 300
    await new Promise<void>((resolve, reject) => {
      const child = spawn(k6, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      const timer = setTimeout(() => child.kill('SIGKILL'), limitS * 1000)
      let tail = ''
      const lines = (chunk: Buffer): void => {
        for (const line of chunk.toString().split('\n')) {
          if (!line.trim()) continue
          tail = (tail + line + '\n').slice(-4000)
          onOutput(line)
        }
      }
      child.stdout.on('data', lines)
      child.stderr.on('data', lines)
      child.on('error', reject)
      child.on('exit', (code, signal) => {
        clearTimeout(timer)
        if (code === 0) resolve()
        else reject(new Error(`k6 exited with ${signal ?? code}:\n${tail}`))
      })
    })
    const summary = JSON.parse(await readFile(summaryPath, 'utf8')) as K6Summary
    return scenarioResults(summary, scenarios)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function median(values: number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (finite.length === 0) return NaN
  const mid = finite.length >> 1
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2
}

function medianLatency(all: (LatencyStats | undefined)[]): LatencyStats | undefined {
  const present = all.filter((l): l is LatencyStats => l !== undefined)
  if (present.length === 0) return undefined
  return {
    avg: median(present.map((l) => l.avg)),
    p50: median(present.map((l) => l.p50)),
    p90: median(present.map((l) => l.p90)),
    p99: median(present.map((l) => l.p99)),
    max: Math.max(...present.map((l) => l.max)),
    count: present.reduce((sum, l) => sum + l.count, 0),
  }
}

/**
 * One result from the rounds of the same scenario (run interleaved with the others): the median
 * of each statistic, so one round disturbed by other work on the machine does not decide it.
 * Counts (calls, retries, errors) are summed.
 */
export function combineRounds(name: string, rounds: readonly ScenarioResult[]): ScenarioResult {
  if (rounds.length === 1) return { ...rounds[0]!, name }
  const result: ScenarioResult = {
    name,
    ops: rounds.reduce((sum, r) => sum + r.ops, 0),
    throughput: median(rounds.map((r) => r.throughput)),
    latency: medianLatency(rounds.map((r) => r.latency))!,
    failed: median(rounds.map((r) => r.failed)),
    retries: rounds.reduce((sum, r) => sum + r.retries, 0),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
  }
  const get = medianLatency(rounds.map((r) => r.get))
  const put = medianLatency(rounds.map((r) => r.put))
  if (get) result.get = get
  if (put) result.put = put
  const waits = rounds.map((r) => r.readWaitMs).filter((w): w is number => w !== undefined)
  if (waits.length > 0) result.readWaitMs = median(waits)
  const writeWaits = rounds.map((r) => r.writeWaitMs).filter((w): w is number => w !== undefined)
  if (writeWaits.length > 0) result.writeWaitMs = median(writeWaits)
  return result
}

/**
 * Runs `rounds` rounds of a group of scenarios that are compared with each other, alternating
 * their order (A B C, C B A, A B C, ...) so drift and bursts of other work spread over all of
 * them, and combines each scenario's rounds with {@link combineRounds}. Names get `_r<round>`.
 */
export function interleave(
  groups: readonly (readonly PlannedScenario[])[],
  rounds: number,
): { plan: PlannedScenario[]; combine(results: ScenarioResult[]): ScenarioResult[][] } {
  const plan: PlannedScenario[] = []
  const at: number[][][] = groups.map((g) => g.map(() => []))
  groups.forEach((group, g) => {
    for (let round = 0; round < rounds; round++) {
      const order = group.map((_, i) => i)
      if (round % 2 === 1) order.reverse()
      for (const i of order) {
        at[g]![i]!.push(plan.length)
        plan.push({ ...group[i]!, name: `${group[i]!.name}_r${round}` })
      }
    }
  })
  return {
    plan,
    combine: (results) =>
      groups.map((group, g) =>
        group.map((s, i) =>
          combineRounds(
            s.name,
            at[g]![i]!.map((k) => results[k]!),
          ),
        ),
      ),
  }
}
