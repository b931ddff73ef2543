/**
 * Suite `profile`: where the gateway spends its CPU on the hot path. The cluster runs under
 * `node --cpu-prof` while k6 drives the 50:50 session workload; the profile is read back and
 * its self time summed per function and per component (Fastify, the gateway, core, LevelDB,
 * Node's HTTP, GC, ...).
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ClusterConfig, startCluster } from '../cluster-process.js'
import { type ScenarioResult, runPlan } from '../k6-runner.js'
import { fixed, table, whole } from '../report/markdown.js'
import type { Suite, SuiteContext } from '../suite.js'

interface CpuProfile {
  nodes: {
    id: number
    callFrame: { functionName: string; url: string; lineNumber: number }
    children?: number[]
  }[]
  samples: number[]
  timeDeltas: number[]
}

/** Self time of one function or component. */
export interface CostRow {
  name: string
  where: string
  ms: number
  /** Share of the non-idle time. */
  share: number
}

/** What the suite records. */
export interface ProfileResults {
  cluster: ClusterConfig
  load: ScenarioResult
  vus: number
  /** How many processes were profiled (the gateway processes of a Redis deployment). */
  processes?: number
  /** Profiled time that was not idle, ms. */
  busyMs: number
  idleMs: number
  functions: CostRow[]
  components: CostRow[]
}

/** The component a profiled function belongs to, from its script URL. */
export function componentOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'GC'
    if (functionName === '(idle)') return 'idle'
    if (functionName === '(program)') return 'V8/native (program)'
    return 'native'
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pkg) return pkg[1]!
  if (url.startsWith('node:')) {
    const mod = url.slice(5).split('/')
    return `node:${mod[0] === 'internal' ? (mod[1] ?? 'internal').replace(/\.js$/, '') : mod[0]}`
  }
  const own = /\/(gateway|packages\/core|packages\/client)\/(?:dist|src)\/(.*)$/.exec(url)
  if (own)
    return own[1] === 'gateway'
      ? `gateway/${own[2]!.split('/')[0]!.replace(/\.[jt]s$/, '')}`
      : `@causeway/${own[1]!.split('/')[1]}`
  return url
}

/** Self time per function and per component, from a V8 CPU profile. */
export function summariseProfile(
  profile: CpuProfile,
  top = 15,
): Omit<ProfileResults, 'cluster' | 'load' | 'vus'> {
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) =>
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
  )
  const byFunction = new Map<string, { name: string; where: string; us: number }>()
  const byComponent = new Map<string, number>()
  let idle = 0
  let busy = 0
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0
    if (us === 0) continue
    const { functionName, url, lineNumber } = node.callFrame
    const component = componentOf(url, functionName)
    if (component === 'idle') {
      idle += us
      continue
    }
    busy += us
    byComponent.set(component, (byComponent.get(component) ?? 0) + us)
    const file = url
      .replace(/^.*\/node_modules\//, '')
      .replace(/^file:\/\/.*?\/(gateway|packages)\//, '$1/')
    const where = url ? `${file}:${lineNumber + 1}` : ''
    const key = `${functionName}@${where}`
    const entry = byFunction.get(key) ?? { name: functionName || '(anonymous)', where, us: 0 }
    entry.us += us
    byFunction.set(key, entry)
  }
  const rows = (entries: { name: string; where: string; us: number }[]): CostRow[] =>
    entries
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ name: e.name, where: e.where, ms: e.us / 1000, share: e.us / busy }))
  return {
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    functions: rows([...byFunction.values()]),
    components: rows([...byComponent.entries()].map(([name, us]) => ({ name, where: '', us }))),
  }
}

/**
 * One profile of several processes' profiles (their nodes renumbered apart), so the time of the
 * gateway processes of a Redis deployment sums as one.
 */
export function mergeProfiles(profiles: readonly CpuProfile[]): CpuProfile {
  const merged: CpuProfile = { nodes: [], samples: [], timeDeltas: [] }
  let offset = 0
  for (const p of profiles) {
    let top = 0
    for (const node of p.nodes) {
      merged.nodes.push({
        ...node,
        id: node.id + offset,
        ...(node.children ? { children: node.children.map((c) => c + offset) } : {}),
      })
      top = Math.max(top, node.id)
    }
    merged.samples.push(...p.samples.map((id) => id + offset))
    merged.timeDeltas.push(...p.timeDeltas)
    offset += top + 1
  }
  return merged
}

async function run(ctx: SuiteContext): Promise<ProfileResults> {
  const dir = await mkdtemp(join(tmpdir(), 'causeway-prof-'))
  const cluster: ClusterConfig = {
    backend: ctx.backend,
    regions: 2,
    partitions: 4,
    replicas: 3,
    nodeFlags: ['--cpu-prof', '--cpu-prof-dir', dir],
  }
  const vus = 32
  const durationS = ctx.quick ? 3 : 15
  try {
    ctx.log(`cluster under --cpu-prof; k6: 50:50 session workload, ${vus} VUs, ${durationS} s`)
    const dev = await startCluster(cluster)
    let load: ScenarioResult
    try {
      ;[load] = (await runPlan([
        {
          name: 'profiled',
          exec: 'mixed',
          vus,
          durationS,
          env: {
            CAUSEWAY_URL: dev.urls[0]!,
            WRITE_RATIO: '0.5',
            READ_LEVEL: 'session',
            WRITE_LEVEL: 'session',
            WARMUP_S: '0',
          },
        },
      ])) as [ScenarioResult]
    } finally {
      await dev.stop()
    }
    // The cluster's process, or (Redis) its gateway processes: `causeway dev` passes its Node
    // flags on to them, and each writes `CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile`.
    const files = (await readdir(dir)).filter((f) =>
      dev.gatewayPids.some((pid) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.`)),
    )
    if (files.length !== dev.gatewayPids.length)
      throw new Error(`node --cpu-prof wrote ${files.length} of the profiles in ${dir}`)
    const profiles = await Promise.all(
      files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as CpuProfile),
    )
    return {
      cluster,
      load,
      vus,
      processes: files.length,
      ...summariseProfile(mergeProfiles(profiles)),
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function report(r: ProfileResults): string {
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`
  const what =
    r.cluster.backend === 'redis'
      ? `The ${r.processes ?? r.cluster.regions} gateway processes of a Redis deployment (${r.cluster.regions} regions × ${r.cluster.partitions} partitions × ${r.cluster.replicas} replicas, each replica its own redis-server; their profiles summed)`
      : `The whole cluster (one Node process: both regions' gateways, ${r.cluster.partitions} partitions × ${r.cluster.replicas} replicas × ${r.cluster.regions} regions, ${r.cluster.backend})`
  return [
    `${what} ` +
      `profiled with \`node --cpu-prof\` while ${r.vus} k6 VUs ran the 50:50 session workload ` +
      `(${whole(r.load.throughput)} calls/s, ${fixed(r.load.latency.avg)} ms average). ` +
      `${r.processes && r.processes > 1 ? 'The processes were' : 'The process was'} busy ${whole(r.busyMs)} ms of the profile and idle ${whole(r.idleMs)} ms. Shares are of the busy time, self time only.`,
    '',
    '**By component:**',
    '',
    table(
      ['component', 'self ms', 'share'],
      r.components.map((c) => [c.name, whole(c.ms), pct(c.share)]),
    ),
    '',
    '**Top functions:**',
    '',
    table(
      ['function', 'where', 'self ms', 'share'],
      r.functions.map((f) => [
        `\`${f.name}\``,
        f.where ? `\`${f.where}\`` : '',
        whole(f.ms),
        pct(f.share),
      ]),
    ),
  ].join('\n')
}

export const profileSuite: Suite<ProfileResults> = {
  name: 'profile',
  title: 'Gateway hot path: CPU profile under load',
  estimateS: (quick) => (quick ? 12 : 30),
  measure: run,
  report: (results) => ({ markdown: report(results), charts: [] }),
}
