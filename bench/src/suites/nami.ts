/**
 * Suite `nami`: the evaluation of the Nami paper (section 4) on Causeway transactions. The banking
 * app: 30,000 accounts with a 1 KB description, workers each running money-movement transactions
 * one after the other (five transfers between random accounts: ten accounts read and written,
 * about 10 KB), for 1, 5, 10, 20, 30 and 40 workers. Table 2: throughput and median latency of
 *
 * - Causeway, embedded (`causeway dev`, LevelDB in the harness's backend, 4 partitions, one
 *   replica each: the paper's "3 nodes, no replication"; and three replicas each);
 * - Causeway on Redis (`causeway dev --backend redis`: 4 partitions of a leader and a Redis replica,
 *   the transaction log on a server of its own with a replica, `WAIT` for a majority, AOF
 *   `appendfsync everysec`);
 * - the baseline: the same transactions as Redis `WATCH`/`MULTI`/`EXEC` optimistic transactions
 *   straight from ioredis on one redis-server (the paper's RocksDB OptimisticTransactionDB on one
 *   node), with the persistence of the cluster's servers (AOF everysec) and without.
 *
 * Table 3: with and without the applier's commit cache (throughput, p50/p95/p99). Every workload
 * runs in a driver process of its own (`nami/bank-driver.ts`, the SDK over undici), against a
 * cluster started for the measurement; after each system's sweep the balances are summed at one
 * snapshot (they must be 0).
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startChild } from '../child-server.js'
import {
  type ClusterConfig,
  type ClusterProcess,
  FROM_SOURCE,
  startCluster,
} from '../cluster-process.js'
import type { DriverResult } from '../nami/bank-driver.js'
import { freePort } from '../ports.js'
import { treeCpuSeconds } from '../process-cpu.js'
import { fixed, table, whole } from '../report/markdown.js'
import type { Suite, SuiteContext } from '../suite.js'

/** A system the suite measures. */
type System = 'embedded' | 'embedded-r3' | 'redis' | 'redis-watch' | 'redis-watch-memory'

/** One measured point. */
export interface NamiRow {
  system: System
  cache: boolean
  workers: number
  throughput: number
  p50: number
  p95: number
  p99: number
  /** Conflicts per applied transaction (attempts / transactions - 1). */
  conflictRate: number
  transactions: number
  failed: number
  /** The driver's own CPU over the run, seconds. */
  driverCpuS: number
  /**
   * CPU of the system under test (its process and every child: gateways, replicas, Redis servers)
   * per applied transaction, ms; absent where it cannot be read (no `/proc`).
   */
  serverCpuMsPerTx?: number
}

/** What the suite records. */
export interface NamiResults {
  accounts: number
  descriptionBytes: number
  movements: number
  seconds: number
  workers: number[]
  embeddedBackend: 'memory' | 'disk'
  redisAvailable: boolean
  rows: NamiRow[]
  /** The sum of the balances after each system's runs (0 when no money was lost or made). */
  sums: Partial<Record<string, number>>
  /** Cores of the machine (for the CPU ceiling). */
  cores: number
}

const TITLES: Record<System, string> = {
  embedded: 'Causeway embedded (4 partitions × 1 replica)',
  'embedded-r3': 'Causeway embedded (4 partitions × 3 replicas)',
  redis: 'Causeway on Redis (4 partitions × 2, log × 2, WAIT majority)',
  'redis-watch': 'Redis WATCH/MULTI/EXEC (one server, AOF everysec)',
  'redis-watch-memory': 'Redis WATCH/MULTI/EXEC (one server, no persistence)',
}

const driverScript = fileURLToPath(
  new URL(`../nami/bank-driver.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url),
)

/** Runs the driver with `args`; resolves to the JSON line it prints. */
export function runDriver(args: string[]): Promise<Record<string, unknown>> {
  const flags = import.meta.url.endsWith('.ts') ? FROM_SOURCE : []
  const child = spawn(process.execPath, [...flags, driverScript, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString()).slice(-4000)))
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? ''
      if (code !== 0 || line === '')
        return reject(new Error(`the nami driver exited with ${code}:\n${err}`))
      resolve(JSON.parse(line) as Record<string, unknown>)
    })
  })
}

function redisAvailable(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

interface Plan {
  accounts: number
  descriptionBytes: number
  movements: number
  seconds: number
  /** Unrecorded load before each system's sweep, seconds. */
  warmupS: number
  workers: number[]
  /** Worker counts of the commit-cache comparison. */
  cacheWorkers: number[]
}

function planOf(quick: boolean): Plan {
  return quick
    ? {
        accounts: 2000,
        descriptionBytes: 1000,
        movements: 5,
        seconds: 2,
        warmupS: 2,
        workers: [1, 10],
        cacheWorkers: [10],
      }
    : {
        accounts: 30_000,
        descriptionBytes: 1000,
        movements: 5,
        seconds: 10,
        warmupS: 8,
        workers: [1, 5, 10, 20, 30, 40],
        cacheWorkers: [10, 30],
      }
}

/** The target of the driver for one system: `--url` or `--redis`. */
interface Target {
  args: string[]
  /** The process (tree) serving the workload, whose CPU is measured. */
  pid: number
  stop(): Promise<void>
}

async function causewayTarget(config: ClusterConfig): Promise<Target> {
  const cluster: ClusterProcess = await startCluster(config, { startTimeoutMs: 120_000 })
  return {
    args: ['--target', 'causeway', '--url', cluster.urls[0]!],
    pid: cluster.pid,
    stop: () => cluster.stop(),
  }
}

async function redisWatchTarget(persistent: boolean): Promise<Target> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'causeway-nami-redis-'))
  const persistence = persistent
    ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--dir', dir]
    : ['--appendonly', 'no']
  const server = await startChild(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence],
    (line) => (/Ready to accept connections/.test(line) ? `127.0.0.1:${port}` : undefined),
  )
  return {
    args: ['--target', 'redis-watch', '--redis', `redis://127.0.0.1:${port}`],
    pid: server.pid,
    async stop() {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function row(system: System, cache: boolean, r: DriverResult, serverCpuS?: number): NamiRow {
  return {
    system,
    cache,
    workers: r.workers,
    throughput: r.throughput,
    p50: r.p50,
    p95: r.p95,
    p99: r.p99,
    conflictRate: r.transactions > 0 ? r.attempts / r.transactions - 1 : 0,
    transactions: r.transactions,
    failed: r.failed,
    driverCpuS: r.cpuS,
    ...(serverCpuS !== undefined && r.transactions > 0
      ? { serverCpuMsPerTx: (serverCpuS * 1000) / r.transactions }
      : {}),
  }
}

/** The `nami` suite. */
export const namiSuite: Suite<NamiResults> = {
  name: 'nami',
  title: 'Nami transactions: the banking app on Causeway (embedded, Redis) and Redis WATCH/MULTI',
  estimateS: (quick) => (quick ? 60 : 1200),
  async measure(ctx: SuiteContext): Promise<NamiResults> {
    const plan = planOf(ctx.quick)
    const embeddedBackend = ctx.backend === 'disk' ? 'disk' : 'memory'
    const withRedis = redisAvailable()
    const results: NamiResults = {
      accounts: plan.accounts,
      descriptionBytes: plan.descriptionBytes,
      movements: plan.movements,
      seconds: plan.seconds,
      workers: plan.workers,
      embeddedBackend,
      redisAvailable: withRedis,
      rows: [],
      sums: {},
      cores: cpus().length,
    }
    const bank = [
      '--accounts',
      String(plan.accounts),
      '--description',
      String(plan.descriptionBytes),
      '--movements',
      String(plan.movements),
    ]
    const embedded = (replicas: number, cache: boolean): ClusterConfig => ({
      backend: embeddedBackend,
      regions: 1,
      partitions: 4,
      replicas,
      // memory-level keeps every log entry in the heap: a sweep's tens of thousands of 10 KB
      // transactions (log, partitions' logs, versions) need more than the default old space.
      ...(embeddedBackend === 'memory' ? { nodeFlags: ['--max-old-space-size=8192'] } : {}),
      extraArgs: ['--transactional', 'acct', ...(cache ? [] : ['--commit-cache', '0'])],
    })
    const redis = (cache: boolean): ClusterConfig => ({
      backend: 'redis',
      regions: 1,
      partitions: 4,
      replicas: 2,
      // Durable by replication (WAIT for a majority), as the baseline is by its AOF: everysec.
      extraArgs: [
        '--transactional',
        'acct',
        '--appendfsync',
        'everysec',
        ...(cache ? [] : ['--commit-cache', '0']),
      ],
    })
    const systems: {
      system: System
      cache: boolean
      workers: number[]
      start(): Promise<Target>
    }[] = [
      {
        system: 'embedded',
        cache: true,
        workers: plan.workers,
        start: () => causewayTarget(embedded(1, true)),
      },
      {
        system: 'embedded',
        cache: false,
        workers: plan.cacheWorkers,
        start: () => causewayTarget(embedded(1, false)),
      },
    ]
    if (!ctx.quick)
      systems.push({
        system: 'embedded-r3',
        cache: true,
        workers: plan.workers,
        start: () => causewayTarget(embedded(3, true)),
      })
    if (withRedis) {
      systems.push({
        system: 'redis',
        cache: true,
        workers: plan.workers,
        start: () => causewayTarget(redis(true)),
      })
      if (!ctx.quick)
        systems.push({
          system: 'redis',
          cache: false,
          workers: plan.cacheWorkers,
          start: () => causewayTarget(redis(false)),
        })
      systems.push({
        system: 'redis-watch',
        cache: true,
        workers: plan.workers,
        start: () => redisWatchTarget(true),
      })
      if (!ctx.quick)
        systems.push({
          system: 'redis-watch-memory',
          cache: true,
          workers: plan.workers,
          start: () => redisWatchTarget(false),
        })
    }
    for (const s of systems) {
      ctx.log(`${TITLES[s.system]}${s.cache ? '' : ', without the commit cache'}: setting up`)
      const target = await s.start()
      try {
        await runDriver([...target.args, ...bank, '--setup'])
        // Warm up (the JIT, connections, caches) at the busiest point, unrecorded.
        await runDriver([
          ...target.args,
          ...bank,
          '--workers',
          String(Math.max(...s.workers)),
          '--seconds',
          String(plan.warmupS),
        ])
        for (const workers of s.workers) {
          const cpuBefore = treeCpuSeconds(target.pid)
          const r = (await runDriver([
            ...target.args,
            ...bank,
            '--workers',
            String(workers),
            '--seconds',
            String(plan.seconds),
          ])) as unknown as DriverResult
          const cpuAfter = treeCpuSeconds(target.pid)
          const serverCpuS =
            cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined
          results.rows.push(row(s.system, s.cache, r, serverCpuS))
          ctx.log(
            `  ${workers} workers: ${r.throughput.toFixed(1)} tx/s, p50 ${r.p50.toFixed(1)} ms, conflicts ${(r.attempts - r.transactions).toString()}`,
          )
        }
        const check = (await runDriver([
          ...target.args,
          ...bank,
          '--workers',
          '1',
          '--seconds',
          '0',
          '--check',
        ])) as unknown as DriverResult
        results.sums[`${s.system}${s.cache ? '' : '-no-cache'}`] = check.sum ?? Number.NaN
      } finally {
        await target.stop()
      }
    }
    return results
  },
  report(results, quick) {
    const at = (system: System, cache: boolean, workers: number) =>
      results.rows.find((r) => r.system === system && r.cache === cache && r.workers === workers)
    const systems = (
      ['embedded', 'embedded-r3', 'redis', 'redis-watch', 'redis-watch-memory'] as const
    ).filter((s) => results.rows.some((r) => r.system === s && r.cache))
    const parts: string[] = []
    parts.push(
      `The banking app (Nami section 4.1): ${results.accounts.toLocaleString('en')} accounts of ` +
        `${results.descriptionBytes} B descriptions, transactions of ${results.movements} transfers ` +
        `(${results.movements * 2} accounts read and written), ${results.seconds} s per point after an unrecorded warm-up, each ` +
        `worker one transaction after the other (\`runTransaction\`: a conflict is retried, and its ` +
        `latency counts). Embedded clusters in ${results.embeddedBackend === 'disk' ? 'LevelDB on disk (fsync on every commit)' : 'memory-level'}; the Redis servers (cluster and baseline) with AOF \`appendfsync everysec\`, so neither fsyncs every write; the cluster's commits also wait (\`WAIT\`) for a majority of the transaction log's servers.` +
        (quick ? ' **Quick run**: fewer accounts and points, not comparable with a full run.' : ''),
    )
    parts.push("#### Throughput and median latency (the paper's Table 2)")
    parts.push(
      table(
        ['workers', ...systems.map((s) => TITLES[s])],
        results.workers.map((w) => [
          String(w),
          ...systems.map((s) => {
            const r = at(s, true, w)
            return r ? `${whole(r.throughput)} tx/s, p50 ${fixed(r.p50, 1)} ms` : ''
          }),
        ]),
      ),
    )
    parts.push('#### Conflict rate (conflicts per applied transaction)')
    parts.push(
      table(
        ['workers', ...systems.map((s) => TITLES[s])],
        results.workers.map((w) => [
          String(w),
          ...systems.map((s) => {
            const r = at(s, true, w)
            return r ? fixed(r.conflictRate, 3) : ''
          }),
        ]),
      ),
    )
    const cacheRows = results.rows.filter((r) => !r.cache)
    if (cacheRows.length > 0) {
      parts.push("#### With and without the commit cache (the paper's Table 3)")
      parts.push(
        table(
          ['system', 'workers', 'cache', 'throughput', 'p50', 'p95', 'p99'],
          cacheRows.flatMap((off) => {
            const on = at(off.system, true, off.workers)
            return [on, off]
              .filter((r): r is NamiRow => r !== undefined)
              .map((r) => [
                TITLES[r.system],
                String(r.workers),
                r.cache ? 'with' : 'without',
                `${whole(r.throughput)} tx/s`,
                `${fixed(r.p50, 1)} ms`,
                `${fixed(r.p95, 1)} ms`,
                `${fixed(r.p99, 1)} ms`,
              ])
          }),
        ),
      )
    }
    const cpuRows = results.rows.filter((r) => r.cache && r.serverCpuMsPerTx !== undefined)
    const perTx = (r: NamiRow) => (r.serverCpuMsPerTx ?? 0) + (r.driverCpuS * 1000) / r.transactions
    if (cpuRows.length > 0) {
      parts.push('#### CPU per transaction')
      parts.push(
        `CPU seconds (user + system) per applied transaction of the system under test (every ` +
          `process of the cluster, or the baseline's redis-server) and of the driver, and the ` +
          `throughput the ${results.cores} cores would allow if they ran nothing else ` +
          `(${results.cores} s / (system + driver)). On a shared machine this moves much less ` +
          `with the neighbours' load than the throughput does.`,
      )
      parts.push(
        table(
          ['workers', ...systems.map((s) => TITLES[s])],
          results.workers.map((w) => [
            String(w),
            ...systems.map((s) => {
              const r = at(s, true, w)
              return r?.serverCpuMsPerTx !== undefined && r.transactions > 0
                ? `${fixed(r.serverCpuMsPerTx, 2)} + ${fixed((r.driverCpuS * 1000) / r.transactions, 2)} ms (${whole((results.cores * 1000) / perTx(r))} tx/s)`
                : ''
            }),
          ]),
        ),
      )
    }
    const goals: string[] = []
    const best = Math.max(
      0,
      ...results.rows.filter((r) => r.system === 'embedded' && r.cache).map((r) => r.throughput),
    )
    const embeddedCpu = cpuRows.filter((r) => r.system === 'embedded')
    const ceiling = Math.max(0, ...embeddedCpu.map((r) => (results.cores * 1000) / perTx(r)))
    goals.push(
      `- Embedded, best throughput: **${whole(best)} tx/s** (goal: at least 1,300)` +
        (embeddedCpu.length > 0
          ? `; by CPU per transaction, ${results.cores} idle cores would allow about ${whole(ceiling)} tx/s.`
          : '.'),
    )
    const redis10 = at('redis', true, 10)
    for (const base of ['redis-watch', 'redis-watch-memory'] as const) {
      const b = at(base, true, 10)
      if (redis10 && b)
        goals.push(
          `- Redis at 10 workers: ${whole(redis10.throughput)} tx/s against ${whole(b.throughput)} for ${TITLES[base]}: **${fixed(redis10.throughput / b.throughput, 2)}×** (goal: at least 0.3×).`,
        )
    }
    const sums = Object.entries(results.sums).map(([s, sum]) => `${s} ${String(sum)}`)
    goals.push(
      `- Balances summed at the end of each system's runs: ${sums.join(', ')} (all must be 0).`,
    )
    parts.push('#### Goals')
    parts.push(goals.join('\n'))
    return { markdown: parts.join('\n\n'), charts: [] }
  },
}
