/**
 * `causeway dev --backend redis`: the real deployment, on one machine. Starts a `redis-server`
 * per replica (AOF on; followers `--replicaof` their leader, with a replication password no
 * leader has until a gateway has checked it, `cluster/redis-failover.ts`) on free loopback ports,
 * with `sentinel` three `redis-sentinel`s per region watching the region's partition leaders,
 * writes the cluster config, runs `causeway gateway --config` processes for every region (N per
 * region behind a round-robin TCP balancer when N > 1) and stops it all, gateways first, on
 * `close()`.
 *
 * The Redis servers stay in this process's process group, so a Ctrl-C in the terminal stops them
 * too, and on Linux the kernel stops them when this process dies in any way (`setpriv
 * --pdeathsig`); gateway processes get their own group and exit when their IPC channel to this
 * process closes (see below).
 *
 * Data lives under `dataDir` (kept, with the cluster id and secret in its config, so a restart
 * continues the same cluster) or in a temporary directory removed on close. Ports of the Redis
 * servers and of gateways behind a balancer are picked afresh on every start.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { hasTransactions, type Limits, type Namespaces } from '@causeway/core'
import {
  CONFIG_FORMAT,
  parseClusterConfig,
  sentinelMasterName,
  type ClusterConfig,
  type ClusterConfigFile,
  type ShippingConfig,
} from '../config/cluster-config.js'
import type { HttpLimits } from '../http/http-limits.js'
import { freePort, startRedisProcess, type RedisProcess } from './redis-process.js'
import { startSentinelProcess, type SentinelProcess } from './sentinel-process.js'
import { startTcpBalancer, type TcpBalancer } from './tcp-balancer.js'

/** The config file `causeway dev --backend redis` writes in its data directory. */
export const DEV_CONFIG_FILE = 'redis-cluster.json'

/** Options of {@link startRedisDevCluster}. */
export interface RedisDevClusterOptions {
  regions: number
  partitions: number
  /** Replicas per partition in each region: one leader, the rest its Redis replicas. */
  replicas: number
  /**
   * Gateway processes per region.
   * @default 1
   */
  gateways?: number
  /**
   * Base port: region `d`'s URL is on `port + d` (its gateway, or its balancer when it has
   * several); 0 puts everything on free ports.
   * @default 7070
   */
  port?: number
  /**
   * Interface the gateways (and balancers) listen on; Redis always listens on 127.0.0.1.
   * @default '127.0.0.1'
   */
  host?: string
  /**
   * Keep the cluster here (Redis data and the config); a temporary directory, removed on close,
   * when undefined.
   */
  dataDir?: string
  /**
   * The servers' AOF fsync policy.
   * @default 'always'
   */
  appendfsync?: 'always' | 'everysec'
  /** @default ['r0', 'r1', ...] */
  regionNames?: string[]
  /** Limits that differ from the defaults. */
  limits?: Partial<Limits>
  /** Shipping options that differ from the defaults (e.g. a shorter lease in tests). */
  shipping?: Partial<ShippingConfig>
  /**
   * Key namespaces and their conflict mode, written to the config.
   * @default {} (every key last-writer-wins)
   */
  namespaces?: Namespaces
  /**
   * Transactions the applier's commit cache indexes (the config's `transactions.commitCache`);
   * `false`: none.
   * @default 10000
   */
  commitCache?: number | false
  /**
   * Emulated one-way delay of shipping between regions, in ms (written to the config's
   * `benchmark.wanDelayMs`; every shipping request and its answer take that long extra).
   * @default 0
   */
  wanDelayMs?: number
  /**
   * Each partition's one-way data delay, by partition (the config's
   * `benchmark.partitionWanDelaysMs`; labels keep `wanDelayMs`).
   * @default `wanDelayMs` for every partition
   */
  partitionWanDelaysMs?: number[]
  /**
   * The NuKV "without HLC" ablation (the config's `benchmark.withoutHlc`): writes wait at the
   * leader for their dependency vector instead of being stamped past their HLC dependency.
   * @default false
   */
  withoutHlc?: boolean
  /**
   * Milliseconds added to each region's wall clock, by region id (the config's
   * `benchmark.clockOffsetsMs`), to run regions whose clocks disagree on one machine. Dev and
   * tests only.
   * @default none (every region reads the real clock)
   */
  clockOffsetsMs?: number[]
  /**
   * How long a write whose `causeway-dt` is more than `limits.maxSkewMs` ahead of every region
   * clock known waits for a later one, in ms (the config's `clock.skewWaitMs`).
   * @default 2000
   */
  skewWaitMs?: number
  /**
   * The URL the other regions ship to for each gateway (the config's `regions[].gateways`), given
   * the gateway's own URL: the chaos suite puts a TCP proxy there that it can cut. Clients still
   * reach the gateways directly.
   * @default the gateway's own URL
   */
  shippingVia?: (gateway: { region: number; index: number; url: string }) => Promise<string>
  /**
   * Time limits and the connection cap of the gateways, written to the config's `http`.
   * @default the gateway's defaults
   */
  http?: HttpLimits
  /**
   * The gateways' rate limit, written to the config's `rateLimit`. Off by default here so that
   * tests and benchmarks on one machine are never refused; a production config has one.
   * @default { max: 0 } (off)
   */
  rateLimit?: { max: number; windowMs?: number }
  /**
   * Log level of the gateway processes.
   * @default 'warn'
   */
  logLevel?: string
  /**
   * Origins whose web pages may call the gateways (CORS; their `--cors-origin`). A development
   * cluster lets pages of any origin call it.
   * @default ['*']
   */
  corsOrigins?: readonly string[]
  /**
   * Bearer tokens the client routes require, written to the config's `auth.apiKeys`.
   * @default none: the client routes are open (the gateways listen on loopback)
   */
  apiKeys?: readonly string[]
  /**
   * Longest a change feed streams before the client resumes (the gateways' `--max-watch-ms`):
   * fuzzing and tests end generated watches quickly with it.
   * @default the gateway's (30 minutes)
   */
  maxWatchMs?: number
  /**
   * The URL clients reach each region at (a proxy, another host name), by region id: the
   * config's `regions[].url`, published in the topology.
   * @default the region's gateway (or balancer) on this machine
   */
  publicUrls?: readonly string[]
  /**
   * How to run `causeway` for a gateway process.
   * @default this Node with the `causeway` CLI next to this module
   */
  gatewayCommand?: { command: string; args: string[] }
  /**
   * The `redis-server` executable.
   * @default 'redis-server'
   */
  redisCommand?: string
  /** Told when a gateway process ends while the cluster runs. */
  onGatewayExit?: (gateway: DevGateway, code: number | string) => void
  /**
   * Run three `redis-sentinel`s per region beside the replicas (quorum 2), which promote a
   * follower when a partition's leader is down, and have the gateways follow them. `true` for
   * the defaults.
   * @default off (replica 0 always leads)
   */
  sentinel?: boolean | DevSentinelOptions
  /**
   * The `redis-sentinel` executable.
   * @default 'redis-sentinel'
   */
  sentinelCommand?: string
}

/** Sentinel settings of a dev cluster. */
export interface DevSentinelOptions {
  /**
   * How long a leader may not answer before Sentinel thinks it down (`down-after-milliseconds`):
   * most of the time a failover takes.
   * @default 2000
   */
  downAfterMs?: number
  /**
   * Sentinel's `failover-timeout`, in ms.
   * @default 10000
   */
  failoverTimeoutMs?: number
}

/** A Sentinel of a dev cluster. */
export interface DevSentinel {
  region: number
  url: string
  pid: number | undefined
}

/** A gateway process of a dev cluster. */
export interface DevGateway {
  region: number
  /** Its index among the region's gateways. */
  index: number
  url: string
  pid: number | undefined
}

/** A Redis server of a dev cluster. */
export interface DevRedis {
  region: number
  partition: number
  replica: number
  url: string
  pid: number | undefined
}

/** A running Redis-backed dev cluster. */
export interface RedisDevCluster {
  config: ClusterConfig
  configPath: string
  dataDir: string
  regionNames: string[]
  /**
   * Each region's URL on this machine (its gateway, or its balancer), by region id; the config's
   * `regions[].url` is the public one, which `publicUrls` may have set to another.
   */
  urls: string[]
  gateways: DevGateway[]
  redis: DevRedis[]
  /**
   * The servers of each region's transaction log (with transactional namespaces): its leader
   * (`replica` 0) and its Redis replicas, as many as a partition has.
   */
  transactionLogs: Omit<DevRedis, 'partition'>[]
  /** The Sentinels (none without `sentinel`). */
  sentinels: DevSentinel[]
  /** Stops the balancers, the gateways (gracefully), the Sentinels, then the Redis servers. Idempotent. */
  close(): Promise<void>
}

const READY_LINE = /^region (\d+) \(\S+\) (http\S+)$/m

/** Starts a Redis-backed cluster on this machine; see the module comment. */
export async function startRedisDevCluster(
  options: RedisDevClusterOptions,
): Promise<RedisDevCluster> {
  const { regions, partitions, replicas } = options
  const perRegion = options.gateways ?? 1
  const host = options.host ?? '127.0.0.1'
  const base = options.port ?? 7070
  const names = options.regionNames ?? Array.from({ length: regions }, (_, d) => `r${d}`)
  const temporary = options.dataDir === undefined
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'causeway-dev-redis-')))
  const configPath = join(dataDir, DEV_CONFIG_FILE)
  const servers: RedisProcess[] = []
  const sentinels: SentinelProcess[] = []
  const devSentinels: DevSentinel[] = []
  const children: ChildProcess[] = []
  const balancers: TcpBalancer[] = []
  let stopping = false
  // The cluster id of a first start, chosen once (the Sentinels' master names include it).
  let pendingCluster: string | undefined

  let closing: Promise<void> | undefined
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      stopping = true
      await Promise.all(balancers.map((b) => b.close()))
      await Promise.all(children.map((child) => stopChild(child, 15_000)))
      // Sentinels before servers, so none fails a leader over while they stop.
      await Promise.all(sentinels.map((s) => s.stop()))
      await Promise.all(servers.map((s) => s.stop()))
      if (temporary) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 })
    })())

  try {
    await mkdir(dataDir, { recursive: true })
    const previous = await readPrevious(configPath, { regions, partitions, replicas })

    // Leaders first, then their followers (REPLICAOF from the start). On data of an earlier start,
    // each follower gets a replication password no leader has yet: it copies nothing until a
    // gateway has checked its leader (not behind, not wiped) and told it the real one. A fresh
    // cluster has nothing to lose: its followers copy at once (and Sentinel sees them at once).
    const fenced = previous !== undefined
    const grid: RedisProcess[][][] = []
    const start = async (d: number, p: number | 'tx', i: number, leader?: RedisProcess) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const server = await startRedisProcess({
            port: await freePort(),
            dir: join(dataDir, `r${d}-p${p}-n${i}`),
            appendfsync: options.appendfsync ?? 'always',
            exitWithParent: true,
            ...(leader ? { replicaOf: { host: '127.0.0.1', port: leader.port } } : {}),
            ...(leader && !fenced ? { masterAuth: null } : {}),
            ...(options.redisCommand ? { command: options.redisCommand } : {}),
          })
          servers.push(server)
          return server
        } catch (error) {
          // The free port may have been taken meanwhile; a missing redis-server is final.
          if (attempt >= 2 || !String(error).includes('Address already in use')) throw error
        }
      }
    }
    for (let d = 0; d < regions; d++) {
      grid.push(
        await Promise.all(
          Array.from({ length: partitions }, async (_, p) => [await start(d, p, 0)]),
        ),
      )
    }
    await Promise.all(
      grid.flatMap((region, d) =>
        region.map(async (partition, p) => {
          for (let i = 1; i < replicas; i++) partition.push(await start(d, p, i, partition[0]))
        }),
      ),
    )
    // Each region's transaction log: a leader and as many Redis replicas as a partition has.
    const txLogs: RedisProcess[][] = []
    if (hasTransactions(options.namespaces))
      for (let d = 0; d < regions; d++) {
        const leader = await start(d, 'tx', 0)
        const list = [leader]
        for (let i = 1; i < replicas; i++) list.push(await start(d, 'tx', i, leader))
        txLogs.push(list)
      }

    // Three Sentinels per region (quorum 2), watching its partition leaders.
    const sentinelUrls: string[][] = names.map(() => [])
    if (options.sentinel) {
      const settings = options.sentinel === true ? {} : options.sentinel
      const namespace = previous?.cluster ?? undefined
      const cluster = namespace ?? (pendingCluster ??= randomUUID())
      for (let d = 0; d < regions; d++) {
        const masters = grid[d]!.map((partition, p) => ({
          name: sentinelMasterName(cluster, d, p),
          host: '127.0.0.1',
          port: partition[0]!.port,
        }))
        const started = await Promise.all(
          [0, 1, 2].map(async (k) => {
            const port = await freePort()
            return startSentinelProcess({
              port,
              dir: join(dataDir, `r${d}-sentinel${k}`),
              masters,
              quorum: 2,
              ...(settings.downAfterMs === undefined ? {} : { downAfterMs: settings.downAfterMs }),
              ...(settings.failoverTimeoutMs === undefined
                ? {}
                : { failoverTimeoutMs: settings.failoverTimeoutMs }),
              exitWithParent: true,
              ...(options.sentinelCommand ? { command: options.sentinelCommand } : {}),
            })
          }),
        )
        sentinels.push(...started)
        for (const s of started) {
          sentinelUrls[d]!.push(s.url)
          devSentinels.push({ region: d, url: s.url, pid: s.pid })
        }
      }
    }

    // Ports: a region's public port is its gateway's, or its balancer's.
    const gatewayPorts: number[][] = []
    const publicPorts: number[] = []
    for (let d = 0; d < regions; d++) {
      const publicPort = base === 0 ? await freePort(host) : base + d
      publicPorts.push(publicPort)
      const ports: number[] = []
      for (let g = 0; g < perRegion; g++)
        ports.push(perRegion === 1 ? publicPort : await freePort(host))
      gatewayPorts.push(ports)
    }
    const urlOf = (port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`
    if (options.publicUrls !== undefined && options.publicUrls.length !== regions)
      throw new TypeError(
        `publicUrls has ${options.publicUrls.length} URLs; the cluster has ${regions} regions`,
      )

    const shippingUrls = await Promise.all(
      gatewayPorts.map((ports, d) =>
        Promise.all(
          ports.map((port, index) => {
            const url = urlOf(port)
            return options.shippingVia ? options.shippingVia({ region: d, index, url }) : url
          }),
        ),
      ),
    )
    const file: ClusterConfigFile = {
      format: CONFIG_FORMAT,
      cluster: previous?.cluster ?? (pendingCluster ??= randomUUID()),
      partitions,
      regions: names.map((name, d) => ({
        name,
        url: options.publicUrls?.[d] ?? urlOf(publicPorts[d]!),
        gateways: shippingUrls[d]!,
        replicas: grid[d]!.map((partition) => partition.map((s) => s.url)),
        ...(txLogs[d] ? { transactions: txLogs[d].map((s) => s.url) } : {}),
        ...(sentinelUrls[d]!.length > 0 ? { sentinels: sentinelUrls[d]! } : {}),
      })),
      ...(options.commitCache === undefined
        ? {}
        : {
            transactions: { commitCache: options.commitCache === false ? 0 : options.commitCache },
          }),
      auth: {
        clusterSecret: previous?.secret ?? randomBytes(24).toString('base64url'),
        ...(options.apiKeys && options.apiKeys.length > 0 ? { apiKeys: [...options.apiKeys] } : {}),
      },
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.shipping ? { shipping: options.shipping } : {}),
      ...(options.http && Object.keys(options.http).length > 0 ? { http: options.http } : {}),
      rateLimit: options.rateLimit ?? { max: 0 },
      // With Sentinel a majority write survives the loss of its leader; without, a partition
      // whose leader is lost stops, so only what the leader's disk keeps is promised.
      ...(options.sentinel ? { redis: { durability: 'majority' as const } } : {}),
      ...(options.namespaces ? { namespaces: { ...options.namespaces } } : {}),
      ...(options.wanDelayMs ||
      options.withoutHlc ||
      options.clockOffsetsMs?.some((o) => o !== 0) ||
      options.partitionWanDelaysMs?.length
        ? {
            benchmark: {
              wanDelayMs: options.wanDelayMs ?? 0,
              withoutHlc: options.withoutHlc ?? false,
              ...(options.clockOffsetsMs ? { clockOffsetsMs: [...options.clockOffsetsMs] } : {}),
              ...(options.partitionWanDelaysMs
                ? { partitionWanDelaysMs: [...options.partitionWanDelaysMs] }
                : {}),
            },
          }
        : {}),
      ...(options.skewWaitMs === undefined ? {} : { clock: { skewWaitMs: options.skewWaitMs } }),
    }
    const config = parseClusterConfig(file, 'the dev cluster config')
    await writeFile(`${configPath}.tmp`, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 })
    await rename(`${configPath}.tmp`, configPath)

    const gateways: DevGateway[] = []
    const runner = options.gatewayCommand ?? defaultGatewayCommand()
    await Promise.all(
      gatewayPorts.flatMap((ports, d) =>
        ports.map(async (port, index) => {
          const child = spawn(
            runner.command,
            [
              ...runner.args,
              'gateway',
              '--config',
              configPath,
              '--region',
              String(d),
              '--port',
              String(port),
              '--host',
              host,
              '--log-level',
              options.logLevel ?? 'warn',
              ...(options.corsOrigins ?? ['*']).flatMap((origin) => ['--cors-origin', origin]),
              ...(options.maxWatchMs === undefined
                ? []
                : ['--max-watch-ms', String(options.maxWatchMs)]),
            ],
            // Its own process group: a Ctrl-C in the terminal reaches only this process, which
            // then stops each gateway with one SIGTERM (a second signal would cut the drain
            // short). A gateway exits by itself when this process dies (the IPC channel closes).
            { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], detached: true },
          )
          children.push(child)
          const url = await readyUrl(child, `gateway ${index} of region ${d}`)
          const gateway: DevGateway = { region: d, index, url, pid: child.pid }
          gateways.push(gateway)
          child.once('exit', (code, signal) => {
            if (!stopping) options.onGatewayExit?.(gateway, code ?? signal ?? 'unknown')
          })
        }),
      ),
    )
    gateways.sort((a, b) => a.region - b.region || a.index - b.index)

    // Sentinel promotes only followers it knows: have every Sentinel see them before returning.
    if (sentinels.length > 0) await sentinelsSeeFollowers(sentinels, replicas - 1)

    if (perRegion > 1) {
      for (let d = 0; d < regions; d++) {
        const targets = gatewayPorts[d]!.map((port) => ({ host, port }))
        balancers.push(await startTcpBalancer(targets, host, publicPorts[d]!))
      }
    }

    return {
      config,
      configPath,
      dataDir,
      regionNames: names,
      urls: publicPorts.map(urlOf),
      gateways,
      sentinels: devSentinels,
      redis: grid.flatMap((region, d) =>
        region.flatMap((partition, p) =>
          partition.map((s, i) => ({
            region: d,
            partition: p,
            replica: i,
            url: s.url,
            pid: s.pid,
          })),
        ),
      ),
      transactionLogs: txLogs.flatMap((list, d) =>
        list.map((s, i) => ({ region: d, replica: i, url: s.url, pid: s.pid })),
      ),
      close,
    }
  } catch (error) {
    await close().catch(() => undefined)
    throw error
  }
}

// The cluster id and secret of an earlier start on the same data, checked for the same shape.
async function readPrevious(
  path: string,
  shape: { regions: number; partitions: number; replicas: number },
): Promise<{ cluster: string; secret: string | undefined } | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  const config = parseClusterConfig(JSON.parse(text), path, {})
  const was = {
    regions: config.regions.length,
    partitions: config.partitions,
    replicas: config.regions[0]!.replicas[0]!.length,
  }
  const differs = (['regions', 'partitions', 'replicas'] as const).filter(
    (k) => was[k] !== shape[k],
  )
  if (differs.length > 0)
    throw new Error(
      `${path} is a cluster with ${differs.map((k) => `${k} ${was[k]}`).join(', ')}, but this start asks for ` +
        `${differs.map((k) => `${k} ${shape[k]}`).join(', ')}. Start with the same shape, or use another data directory.`,
    )
  return { cluster: config.cluster, secret: config.auth.clusterSecret }
}

// This Node running the `causeway` CLI beside this module (TypeScript sources under tsx, the
// workspaces resolved to their sources too, or dist).
function defaultGatewayCommand(): { command: string; args: string[] } {
  const fromSources = import.meta.url.endsWith('.ts')
  const cli = fileURLToPath(new URL(fromSources ? '../cli.ts' : '../cli.js', import.meta.url))
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--inspect'))
  const loader: string[] = []
  if (fromSources && !execArgv.includes(SOURCE_CONDITION)) loader.push(SOURCE_CONDITION)
  if (fromSources && !execArgv.some((a) => a.includes('tsx'))) loader.push('--import', 'tsx')
  return { command: process.execPath, args: [...execArgv, ...loader, cli] }
}

/** Resolves `@causeway/*` packages to their TypeScript sources (the first condition of their exports). */
const SOURCE_CONDITION = '--conditions=@causeway/source'

// Resolves with the URL a gateway process prints once it listens; rejects if it exits first.
function readyUrl(child: ChildProcess, name: string, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(
      () => fail(new Error(`${name} did not start in ${timeoutMs} ms`)),
      timeoutMs,
    )
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const match = READY_LINE.exec(out)
      if (!match) return
      cleanup()
      // Keep draining its output so the pipe never fills.
      child.stdout?.resume()
      resolve(match[2]!)
    }
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`${name} exited with ${code ?? signal} before it listened`))
    const cleanup = () => {
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.off('exit', onExit)
    }
    const fail = (error: Error) => {
      cleanup()
      reject(error)
    }
    child.stdout?.on('data', onData)
    child.once('exit', onExit)
    child.once('error', fail)
  })
}

// SIGTERM (the gateway drains and exits), SIGKILL after `timeoutMs`.
async function stopChild(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  await exited
  clearTimeout(timer)
}

// Waits (at most 30 s) until each Sentinel lists `followers` replicas for every master it
// watches: Sentinel learns them from its masters' INFO, every 10 s once it runs.
async function sentinelsSeeFollowers(
  sentinels: readonly SentinelProcess[],
  followers: number,
): Promise<void> {
  if (followers === 0) return
  const deadline = Date.now() + 30_000
  await Promise.all(
    sentinels.map(async (s) => {
      const client = new Redis(s.url, { maxRetriesPerRequest: 1, lazyConnect: true })
      client.on('error', () => {})
      try {
        await client.connect()
        while (Date.now() < deadline) {
          const masters = (await client.call('SENTINEL', 'MASTERS')) as string[][]
          const seen = masters.every((m) => Number(m[m.indexOf('num-slaves') + 1]) >= followers)
          if (seen) return
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      } catch {
        // A Sentinel that does not answer: the cluster still runs; failover may lag.
      } finally {
        client.disconnect()
      }
    }),
  )
}
