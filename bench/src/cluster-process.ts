/**
 * Starts the cluster a suite measures as a child process on loopback (`causeway dev`, the
 * command users run), waits until every region's gateway listens, and stops it again. A backend
 * is a parameter: the embedded cluster in memory or on disk, or the Redis deployment
 * (`--backend redis`: redis-servers and gateway processes).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Where the cluster keeps its data. */
export type Backend = 'memory' | 'disk' | 'redis'

/** The cluster configuration of a measurement. */
export interface ClusterConfig {
  backend: Backend
  regions: number
  partitions: number
  replicas: number
  /** One-way delay between regions, ms (`--wan-delay`). @default 0 */
  wanDelayMs?: number
  /** Follower apply delay, ms (`--replica-lag`). @default 0 */
  replicaLagMs?: number
  /** The "without HLC" ablation (`--without-hlc`). @default false */
  withoutHlc?: boolean
  /** How partitions ship to other regions (`--shipping`). @default 'fifo' */
  shipping?: 'fifo' | 'causal'
  /** Causal shipping: the stabiliser's period theta, ms (`--theta`). @default the CLI's */
  thetaMs?: number
  /** Causal shipping: an idle partition's heartbeat interval Delta, ms (`--delta`). @default the CLI's */
  deltaMs?: number
  /** Largest value the gateways accept, bytes of JSON (`--max-value-bytes`). @default 1 MiB */
  maxValueBytes?: number
  /** Extra flags for `node` (e.g. `--cpu-prof`). @default [] */
  nodeFlags?: string[]
  /** Extra `causeway dev` arguments (e.g. `--transactional acct`). @default [] */
  extraArgs?: string[]
  /**
   * Another checkout of Causeway whose built CLI (`<checkout>/gateway/dist/cli.js`, so run `npm
   * ci && npm run build` there first) runs the cluster instead of this one: the baseline of a
   * before/after comparison (`npm run bench -- gateway --baseline <checkout>`).
   * @default this checkout
   */
  checkout?: string
}

/** A running cluster. */
export interface ClusterProcess {
  /** Base URL of each region's gateway, by region id. */
  urls: string[]
  /** The process id (to find its profile, for instance). */
  pid: number
  /** The Redis deployment's cluster config file (`--backend redis` only). */
  configPath?: string
  /** The process ids of its gateway processes (`--backend redis` only; else the one process). */
  gatewayPids: number[]
  /** Stops it gracefully (SIGTERM), killing it if it does not exit in time. */
  stop(): Promise<void>
}

const repo = (p: string): string => fileURLToPath(new URL(`../../${p}`, import.meta.url))

/**
 * Node flags that run a TypeScript source of this repository: tsx, with the `@causeway/*`
 * packages resolved to their sources too (the `@causeway/source` condition of their exports).
 */
export const FROM_SOURCE = ['--conditions=@causeway/source', '--import', 'tsx']

/**
 * How to run the `causeway` CLI: the built one when this module is built (`npm run bench` builds
 * first), the TypeScript sources when it runs from its own (the tests), so a test never runs a
 * build that is missing or older than the sources.
 */
export function causewayCommand(checkout?: string): string[] {
  if (checkout !== undefined) return [join(checkout, 'gateway/dist/cli.js')]
  if (import.meta.url.endsWith('.ts')) return [...FROM_SOURCE, repo('gateway/src/cli.ts')]
  return [repo('gateway/dist/cli.js')]
}

/** The `causeway dev` arguments for a configuration (`--port 0`: the OS picks free ports). */
export function devArgs(config: ClusterConfig, dataDir: string | undefined): string[] {
  if (config.backend === 'redis') return redisDevArgs(config)
  const args = [
    'dev',
    '--regions',
    String(config.regions),
    '--partitions',
    String(config.partitions),
    '--replicas',
    String(config.replicas),
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--log-level',
    'silent',
    '--wan-delay',
    String(config.wanDelayMs ?? 0),
    '--replica-lag',
    String(config.replicaLagMs ?? 0),
  ]
  if (config.backend === 'memory') args.push('--memory')
  else args.push('--data', dataDir!)
  return [...args, ...commonArgs(config)]
}

/** The flags both backends take the same way. */
function commonArgs(config: ClusterConfig): string[] {
  const args: string[] = []
  if (config.withoutHlc) args.push('--without-hlc')
  if (config.maxValueBytes !== undefined)
    args.push('--max-value-bytes', String(config.maxValueBytes))
  if (config.shipping !== undefined) args.push('--shipping', config.shipping)
  if (config.thetaMs !== undefined) args.push('--theta', String(config.thetaMs))
  if (config.deltaMs !== undefined) args.push('--delta', String(config.deltaMs))
  args.push(...(config.extraArgs ?? []))
  return args
}

/**
 * `causeway dev --backend redis`: a redis-server per replica and a gateway process per region
 * (data in a temporary directory it removes), with the WAN delay and the ablation; followers are
 * Redis replicas, so there is no injected replica lag.
 */
function redisDevArgs(config: ClusterConfig): string[] {
  if (config.replicaLagMs) throw new Error('causeway dev --backend redis has no --replica-lag')
  const args = [
    'dev',
    '--backend',
    'redis',
    '--regions',
    String(config.regions),
    '--partitions',
    String(config.partitions),
    '--replicas',
    String(config.replicas),
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--log-level',
    'silent',
    '--wan-delay',
    String(config.wanDelayMs ?? 0),
  ]
  return [...args, ...commonArgs(config)]
}

const REGION_LINE = /^region (\d+) \(([^)]*)\) (http:\/\/\S+)$/
// `causeway dev --backend redis` names each gateway process it starts.
const GATEWAY_LINE = /^gateway \d+\.\d+ \S+ pid (\d+)$/

/** Starts `causeway dev` for `config`; resolves once every region's URL is printed. */
export async function startCluster(
  config: ClusterConfig,
  options: { startTimeoutMs?: number; cwd?: string } = {},
): Promise<ClusterProcess> {
  const dataDir =
    config.backend === 'disk' ? await mkdtemp(join(tmpdir(), 'causeway-bench-')) : undefined
  const child = spawn(
    process.execPath,
    [...(config.nodeFlags ?? []), ...causewayCommand(config.checkout), ...devArgs(config, dataDir)],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.cwd ?? config.checkout ?? repo('.') },
  )
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000)
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const cleanup = async (): Promise<void> => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  }
  try {
    const { urls, configPath, gatewayPids } = await readUrls(
      child,
      config.regions,
      options.startTimeoutMs ?? 60_000,
      () => stderr,
    )
    let stopping: Promise<void> | undefined
    return {
      urls,
      ...(configPath === undefined ? {} : { configPath }),
      pid: child.pid!,
      gatewayPids: gatewayPids.length > 0 ? gatewayPids : [child.pid!],
      stop: () =>
        (stopping ??= (async () => {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGTERM')
            const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
            await exited
            clearTimeout(timer)
          }
          await cleanup()
        })()),
    }
  } catch (error) {
    child.kill('SIGKILL')
    await exited
    await cleanup()
    throw error
  }
}

function readUrls(
  child: ChildProcess,
  regions: number,
  timeoutMs: number,
  stderr: () => string,
): Promise<{ urls: string[]; configPath?: string; gatewayPids: number[] }> {
  return new Promise((resolve, reject) => {
    const urls: string[] = []
    const gatewayPids: number[] = []
    let configPath: string | undefined
    let buffered = ''
    const fail = (why: string): void => {
      clearTimeout(timer)
      reject(new Error(`causeway dev ${why}:\n${stderr()}`))
    }
    const timer = setTimeout(() => fail(`printed no URLs within ${timeoutMs} ms`), timeoutMs)
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(`exited with ${signal ?? code} before listening`)
    child.once('exit', onExit)
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      let nl: number
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim()
        buffered = buffered.slice(nl + 1)
        const m = REGION_LINE.exec(line)
        if (m) urls[Number(m[1])] = m[3]!
        const g = GATEWAY_LINE.exec(line)
        if (g) gatewayPids.push(Number(g[1]))
        if (line.startsWith('config ')) configPath = line.slice('config '.length)
      }
      if (urls.filter(Boolean).length === regions) {
        clearTimeout(timer)
        child.off('exit', onExit)
        resolve(
          configPath === undefined ? { urls, gatewayPids } : { urls, configPath, gatewayPids },
        )
      }
    })
  })
}
