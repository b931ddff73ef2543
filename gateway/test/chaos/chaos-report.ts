/** The chaos suite's results as JSON and as the markdown of `docs/reliability.md`. */
import { cpus } from 'node:os'
import { ALLOWED_ERRORS } from './chaos-checks.js'
import type { ScenarioResult, Timing } from './run-scenario.js'
import { SHAPE } from './run-scenario.js'

/** A whole run of the suite. */
export interface ChaosReport {
  command: string
  mode: 'short' | 'full'
  date: string
  machine: string
  timing: Timing
  shape: typeof SHAPE
  scenarios: ScenarioResult[]
}

/** Describes the machine the way the benchmarks do: CPUs and Node. */
export function machine(): string {
  const list = cpus()
  return `${list.length} × ${list[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}`
}

function ms(value: number | null): string {
  if (value === null) return 'never'
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`
}

/** The table, one row per scenario. */
export function markdownTable(results: readonly ScenarioResult[]): string {
  const rows = [
    '| fault | operations | acknowledged writes (majority) | lost | violations | stale 200s | reused indices | diverged logs | time to recover | verdict |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ]
  for (const r of results) {
    const f = r.findings
    const verdict = r.passed ? 'pass' : r.knownFailure ? 'FAIL (known)' : 'FAIL'
    rows.push(
      `| \`${r.name}\`: ${r.fault} | ${f.operations} | ${f.acknowledgedWrites} (${f.majorityWrites}) | ${f.lost} | ${f.violations} | ${f.stale200s} | ${f.reusedIndices} | ${f.divergedLogs} | ${ms(f.recoverMs)} | ${verdict} |`,
    )
  }
  return rows.join('\n')
}

/** Why each failing scenario failed, with examples, and what each one's calls failed with. */
export function markdownDetails(results: readonly ScenarioResult[]): string {
  const out: string[] = []
  for (const r of results) {
    const f = r.findings
    const errors = Object.entries(f.errors)
      .map(([code, n]) => `${code} ×${n}`)
      .join(', ')
    out.push(`### \`${r.name}\``, '')
    out.push(
      `${r.fault}. Fault at ${ms(r.faultAtMs)} (${r.target}), healed at ${ms(r.healedAtMs)}; seed ${r.seed}; ${f.lostLeaderWrites} acknowledged \`leader\` write(s) missing after healing; failed calls: ${errors || 'none'}.`,
      '',
    )
    if (r.knownFailure) out.push(`Known to fail today: ${r.knownFailure}.`, '')
    if (r.reasons.length > 0) {
      out.push('Failed because:', '', ...r.reasons.map((reason) => `- ${reason}`), '')
      if (f.examples.length > 0)
        out.push('Examples:', '', ...f.examples.map((e) => `- ${e.replaceAll('|', '\\|')}`), '')
    }
  }
  return out.join('\n')
}

/** The whole of `docs/reliability.md`. */
export function reliabilityPage(report: ChaosReport): string {
  const failing = report.scenarios.filter((r) => !r.passed)
  return [
    '# Reliability: the chaos suite',
    '',
    `Produced by \`${report.command}\` on ${report.date} (${report.machine}). Every scenario starts a`,
    `fresh cluster of ${SHAPE.regions} regions × ${SHAPE.partitions} partitions × ${SHAPE.replicas} replicas (Redis: ${SHAPE.gatewaysPerRegion} gateway`,
    `processes per region behind a balancer), runs ${report.timing.clients} SDK sessions (session reads, session writes at`,
    "`durability: 'majority'` and `'leader'` mixed, clients moving between regions), injects the fault",
    `${report.timing.faultAtMs / 1000} s into the calls, heals it ${report.timing.outageMs / 1000} s later (a restart takes longer: its start-up`,
    `counts), goes on ${report.timing.afterHealMs / 1000} s after the healing, waits for the regions to converge and`,
    'reads every copy of every partition log. The harness is `gateway/test/chaos/` (see its',
    '`run-chaos.ts`); `npm run chaos -- --short` is the mode CI runs on every change. The Redis',
    'clusters run three Sentinels per region with the default settings: how a lost leader is',
    'replaced, and what each durability level promises, is in [failover.md](failover.md).',
    '',
    markdownTable(report.scenarios),
    '',
    `${report.scenarios.length - failing.length} of ${report.scenarios.length} scenarios pass.` +
      (failing.length === 0
        ? ''
        : ` Failing: ${failing.map((r) => `\`${r.name}\`${r.knownFailure ? ` (${r.knownFailure})` : ''}`).join('; ')}.`),
    '',
    'The same results, with every count, error code and example, are in `docs/reliability.json`. Run',
    'one scenario with `npm run chaos -- --only NAME` (`--list` names them; `--short` runs shorter).',
    '',
    '## What the columns mean',
    '',
    '- **operations**: calls the sessions made (failed ones included).',
    "- **acknowledged writes (majority)**: writes answered 200, and how many of them asked `durability: 'majority'`.",
    '- **lost**: acknowledged majority writes missing after healing from some copy of their log (every replica of every region on Redis; every region through its change feed on the embedded cluster), or replaced there by another write.',
    '- **violations**: answers that broke a guarantee: the four session guarantees (monotonic reads, read-your-writes, monotonic writes, writes-follow-reads, each call held to its level) and convergence (every region ends on the newest acknowledged write of each key, nothing invented), checked by `@causeway/history`.',
    '- **stale 200s**: the reads among the violations: a 200 with a version older than the session had seen or written.',
    '- **reused indices**: log positions (partition, origin, idx) that named two different writes, in replies or in any copy of the log.',
    '- **diverged logs**: logs (partition, origin) whose copies differ between replicas or regions after healing.',
    '- **time to recover**: from the fault to the first write called after it and acknowledged in the region (and partition) it hit.',
    `- **verdict**: pass when every count is 0, the regions converged, writes resumed, and every failed call failed with an allowed typed error (${ALLOWED_ERRORS.join(', ')}); a 200 that breaks a guarantee is never allowed.`,
    '',
    '## Scenarios',
    '',
    markdownDetails(report.scenarios),
  ].join('\n')
}
