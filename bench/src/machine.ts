/** Facts about the machine a run measured on, printed next to its numbers. */
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, release, totalmem } from 'node:os'

/** The machine and the tools of a run. */
export interface MachineFacts {
  cpu: string
  cores: number
  memoryGiB: number
  os: string
  node: string
  k6?: string
  redis?: string
  /** 1-minute load average when the run started and ended. */
  loadStart: number
  loadEnd?: number
}

function version(command: string, args: string[]): string | undefined {
  try {
    return execFileSync(command, args, { encoding: 'utf8', timeout: 10_000 }).trim().split('\n')[0]
  } catch {
    return undefined
  }
}

/** Facts known at the start of a run (`k6` is the binary's path, when found). */
export function machineFacts(k6: string | undefined): MachineFacts {
  const facts: MachineFacts = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `Linux ${release()}`,
    node: process.version,
    loadStart: loadavg()[0]!,
  }
  const k6Version = k6 && version(k6, ['version'])
  if (k6Version) facts.k6 = k6Version.replace(/^k6 /, '')
  const redis = version('redis-server', ['--version'])
  if (redis) facts.redis = /v=(\S+)/.exec(redis)?.[1] ?? redis
  return facts
}

/** Whether other work competed for the CPU (load average above half the cores). */
export function wasBusy(facts: MachineFacts): boolean {
  return Math.max(facts.loadStart, facts.loadEnd ?? 0) > facts.cores / 2
}

/** One line of facts for the report. */
export function describeMachine(facts: MachineFacts): string {
  const tools = [
    `Node ${facts.node}`,
    facts.k6 && `k6 ${facts.k6}`,
    facts.redis && `Redis ${facts.redis}`,
  ]
  const load = `load average ${facts.loadStart.toFixed(2)} at start, ${facts.loadEnd?.toFixed(2) ?? '?'} at end`
  const busy = wasBusy(facts)
    ? ` — **the machine was busy** (other work was running: ${load}), so absolute numbers are pessimistic; ratios within the run still compare like with like`
    : ` (${load})`
  return (
    `${facts.cores} cores (${facts.cpu}), ${facts.memoryGiB} GiB, ${facts.os}; ` +
    `${tools.filter(Boolean).join(', ')}${busy}.`
  )
}
