/**
 * The Redis-backed commands of the `causeway` CLI: `causeway gateway --config cluster.json` (one
 * gateway process of one region) and `causeway dev --backend redis` (a whole cluster of
 * `redis-server`s and gateway processes on this machine).
 */
import { parseArgs } from 'node:util'
import {
  HTTP_LIMIT_ARGS,
  HTTP_LIMIT_USAGE,
  RATE_LIMIT_ARGS,
  UsageError,
  apiKeysOf,
  clockOffsets,
  corsOrigins,
  describeOrigins,
  httpLimitsOf,
  integer,
  limitsOf,
  logLevel,
  loggerFor,
  partitionDelays,
  publicUrls,
  rateLimitOf,
  runUntilSignal,
  namespacesOf,
  shippingOf,
} from './cli-args.js'
import type { HttpLimits } from './http/http-limits.js'
import type { Logger } from './log.js'
import type { RedisDevClusterOptions } from './dev/redis-dev-cluster.js'

/** Usage of `causeway gateway`. */
export const GATEWAY_USAGE = `Options of gateway (one gateway process of one region, over Redis):
  --config FILE          the cluster config (see docs/operations.md)      [required]
  --region NAME|ID       the region to serve            [required with several regions]
  --port N               port to listen on; 0 = any                      [default: 7070]
  --host HOST            interface to listen on                          [default: 127.0.0.1]
  --log-level LEVEL      fatal, error, warn, info, debug, trace, silent  [default: warn]
  --cors-origin ORIGIN   web pages of ORIGIN (scheme://host[:port]) may call this
                         gateway; repeatable; * for any origin          [default: none]
                         (the region's public URL is the config's regions[].url)
  --op-retention-ms MS   how long an idle op-id client's records are kept [default: 86400000]
  --strict               refuse to start when the Redis servers cannot keep the
                         config's redis.durability (else: a warning)
  --max-watchers N       change feeds (GET /v1/watch) of this gateway    [default: 1000]
  --max-watchers-per-key N  change feeds one API key (or address) holds on this
                         gateway                     [default: max-watchers / 10]
  --max-watch-ms MS      longest a change feed streams before the client
                         resumes from its last event id            [default: 1800000]
  --rate-limit N         requests per window per API key (per address without one);
                         0 turns it off                 [default: the config's, else 5000]
  --rate-limit-window MS the rate limit's window       [default: the config's, else 1000]
  --rate-limit-refused N refused requests (401, 403) per window per address before
                         all its requests are refused; 0 = off [default: the config's, else 100]
  HTTP limits (override the config's \`http\`):
${HTTP_LIMIT_USAGE}`

/** Usage of the Redis-only options of `causeway dev`. */
export const DEV_REDIS_USAGE = `Options of dev --backend redis (also --regions, --partitions, --replicas, --port,
--host, --wan-delay, --shipping, --theta, --delta, --partition-wan-delay, --without-hlc,
--max-value-bytes, --max-skew, --skew-wait, --clock-offset, --log-level, --siblings,
--transactional (each region gets a transaction log: a redis-server and as many Redis replicas as
a partition), --commit-cache, --cors-origin, --api-key, --max-watch-ms, --public-url, the HTTP limits and --rate-limit N
(default 0: off in dev) as above):
  --backend redis        one redis-server per replica (followers REPLICAOF their leader)
                         and causeway gateway processes; needs redis-server installed
  --data DIR             keep the Redis data and config in DIR   [default: a temp dir]
  --gateways N           gateway processes per region; N > 1 puts a round-robin
                         balancer on the region's port                   [default: 1]
  --appendfsync POLICY   always (ack once on disk) or everysec           [default: always]
  --sentinel             three redis-sentinels per region: a dead partition leader is
                         replaced by a follower and the gateways follow (needs
                         redis-sentinel installed)
  --sentinel-down-after MS  how long a leader may not answer before Sentinel
                         fails it over (most of a failover's time)       [default: 2000]
`

/** The `--backend` a `dev` command line asks for (`level` unless it says otherwise). */
export function backendOf(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--backend') return args[i + 1] ?? ''
    if (arg.startsWith('--backend=')) return arg.slice('--backend='.length)
  }
  return 'level'
}

interface GatewayCommand {
  config: string
  region: string | undefined
  port: number
  host: string
  logLevel: string
  corsOrigins: string[]
  opRetentionMs: number | undefined
  strict: boolean
  maxWatchers: number | undefined
  maxWatchersPerKey: number | undefined
  maxWatchMs: number | undefined
  http: HttpLimits
  rateLimit: { max?: number; windowMs?: number; maxRefused?: number }
}

function parseGateway(args: string[]): GatewayCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      region: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'log-level': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      'op-retention-ms': { type: 'string' },
      strict: { type: 'boolean' },
      'max-watchers': { type: 'string' },
      'max-watchers-per-key': { type: 'string' },
      'max-watch-ms': { type: 'string' },
      ...HTTP_LIMIT_ARGS,
      ...RATE_LIMIT_ARGS,
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return 'help'
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`)
  if (!values.config) throw new UsageError('gateway needs --config FILE')
  if (values.host === '') throw new UsageError('--host needs an interface')
  return {
    config: values.config,
    region: values.region,
    port: integer('port', values.port, 7070, 0, 65_535),
    host: values.host ?? '127.0.0.1',
    logLevel: logLevel(values['log-level']),
    // A production gateway: no page of another origin may call it until told which.
    corsOrigins: corsOrigins(values['cors-origin'], []),
    strict: values.strict ?? false,
    opRetentionMs:
      values['op-retention-ms'] === undefined
        ? undefined
        : integer('op-retention-ms', values['op-retention-ms'], 0, 1, 2 ** 40),
    maxWatchers:
      values['max-watchers'] === undefined
        ? undefined
        : integer('max-watchers', values['max-watchers'], 0, 0, 1e6),
    maxWatchersPerKey:
      values['max-watchers-per-key'] === undefined
        ? undefined
        : integer('max-watchers-per-key', values['max-watchers-per-key'], 0, 1, 1e6),
    maxWatchMs:
      values['max-watch-ms'] === undefined
        ? undefined
        : integer('max-watch-ms', values['max-watch-ms'], 0, 100, 2 ** 31 - 1),
    http: httpLimitsOf(values),
    rateLimit: rateLimitOf(values),
  }
}

/** `causeway gateway ...`: resolves once it listens (or returns 'help'). */
export async function runGatewayCommand(args: string[]): Promise<'help' | undefined> {
  const command = parseGateway(args)
  if (command === 'help') return 'help'
  const { loadClusterConfig, findRegion } = await import('./config/cluster-config.js')
  const config = await loadClusterConfig(command.config)
  if (command.region === undefined && config.regions.length > 1)
    throw new UsageError(
      `${command.config} has ${config.regions.length} regions (${config.regions.map((r) => r.name).join(', ')}): say which with --region`,
    )
  const region = findRegion(config, command.region ?? '0')
  if (!region)
    throw new UsageError(
      `--region ${command.region}: ${command.config} has regions ${config.regions.map((r) => `${r.id} (${r.name})`).join(', ')}`,
    )
  const name = `causeway gateway ${region.name}`
  if (config.auth.apiKeys.length === 0 && !isLoopback(command.host))
    process.stderr.write(
      `${name}: WARNING: the config names no API keys, so anyone who reaches ${command.host}:${command.port} can read and write\n`,
    )
  const { wanDelayMs, withoutHlc } = config.benchmark
  const clockOffsetMs = config.benchmark.clockOffsetsMs[region.id] ?? 0
  if (wanDelayMs > 0 || withoutHlc || clockOffsetMs !== 0)
    process.stderr.write(
      `${name}: benchmark switches on (${[
        wanDelayMs > 0 ? `shipping delayed ${wanDelayMs} ms one way` : '',
        withoutHlc ? 'WITHOUT HLC: writes wait for their dependencies' : '',
        clockOffsetMs !== 0 ? `this region's clock offset ${clockOffsetMs} ms` : '',
      ]
        .filter(Boolean)
        .join(', ')}); never run a real cluster like this\n`,
    )
  const { startGateway } = await import('./gateway-server.js')
  const { stderrLogger } = await import('./log.js')
  const log = throttled(stderrLogger(command.logLevel).child({ region: region.name }))
  const starting = startGateway({
    config,
    region: region.id,
    port: command.port,
    host: command.host,
    logger: loggerFor(command.logLevel),
    corsOrigins: command.corsOrigins,
    watch: {
      ...(command.maxWatchers === undefined ? {} : { maxWatchers: command.maxWatchers }),
      ...(command.maxWatchersPerKey === undefined
        ? {}
        : { maxWatchersPerKey: command.maxWatchersPerKey }),
      ...(command.maxWatchMs === undefined ? {} : { maxStreamMs: command.maxWatchMs }),
    },
    cluster: {
      onEvent: log,
      ...(command.opRetentionMs === undefined ? {} : { opRetentionMs: command.opRetentionMs }),
    },
    http: command.http,
    rateLimit: command.rateLimit,
    strict: command.strict,
    onDurabilityProblem: (problem) => process.stderr.write(`${name}: WARNING: ${problem}\n`),
  })
  // Started by `causeway dev`: stop with it, even if it dies without stopping us.
  if (process.send) process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'))
  await runUntilSignal(name, starting, (server) => {
    if (command.corsOrigins.length > 0)
      process.stderr.write(`${name}: CORS: ${describeOrigins(command.corsOrigins)} may call\n`)
    process.stdout.write(`region ${region.id} (${region.name}) ${server.url}\n`)
  })
  return undefined
}

interface RedisDevCommand {
  options: RedisDevClusterOptions
}

function parseRedisDev(args: string[]): RedisDevCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      backend: { type: 'string' },
      regions: { type: 'string' },
      partitions: { type: 'string' },
      replicas: { type: 'string' },
      gateways: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      appendfsync: { type: 'string' },
      sentinel: { type: 'boolean' },
      'sentinel-down-after': { type: 'string' },
      'wan-delay': { type: 'string' },
      shipping: { type: 'string' },
      theta: { type: 'string' },
      delta: { type: 'string' },
      'partition-wan-delay': { type: 'string', multiple: true },
      'without-hlc': { type: 'boolean' },
      'max-value-bytes': { type: 'string' },
      'max-skew': { type: 'string' },
      'skew-wait': { type: 'string' },
      'clock-offset': { type: 'string', multiple: true },
      'log-level': { type: 'string' },
      siblings: { type: 'string', multiple: true },
      transactional: { type: 'string', multiple: true },
      'commit-cache': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      'api-key': { type: 'string', multiple: true },
      'max-watch-ms': { type: 'string' },
      'public-url': { type: 'string', multiple: true },
      ...HTTP_LIMIT_ARGS,
      ...RATE_LIMIT_ARGS,
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return 'help'
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`)
  if (values.data === '') throw new UsageError('--data needs a directory')
  if (values.host === '') throw new UsageError('--host needs an interface')
  const appendfsync = values.appendfsync ?? 'always'
  if (appendfsync !== 'always' && appendfsync !== 'everysec')
    throw new UsageError(
      `--appendfsync must be always or everysec, not ${JSON.stringify(appendfsync)}`,
    )
  const regions = integer('regions', values.regions, 2, 1, 16)
  const port = integer('port', values.port, 7070, 0, 65_535)
  if (port !== 0 && port + regions - 1 > 65_535)
    throw new UsageError(`--port ${port} leaves no room for ${regions} regions`)
  const options: RedisDevCommand['options'] = {
    regions,
    partitions: integer('partitions', values.partitions, 4, 1, 64),
    replicas: integer('replicas', values.replicas, 3, 1, 9),
    gateways: integer('gateways', values.gateways, 1, 1, 16),
    port,
    host: values.host ?? '127.0.0.1',
    appendfsync,
    wanDelayMs: integer('wan-delay', values['wan-delay'], 0, 0, 3_600_000),
    withoutHlc: values['without-hlc'] ?? false,
    logLevel: logLevel(values['log-level']),
    // A development cluster: pages of any origin may call it unless told otherwise.
    corsOrigins: corsOrigins(values['cors-origin'], ['*']),
    onGatewayExit: (g, code) =>
      process.stderr.write(
        `causeway dev: gateway ${g.index} of region ${g.region} (${g.url}, pid ${g.pid}) exited (${code}); the region's other gateways go on\n`,
      ),
  }
  if (values.data !== undefined) options.dataDir = values.data
  const apiKeys = apiKeysOf(values['api-key'])
  if (apiKeys !== undefined) options.apiKeys = apiKeys
  if (values['max-watch-ms'] !== undefined)
    options.maxWatchMs = integer('max-watch-ms', values['max-watch-ms'], 0, 100, 2 ** 31 - 1)
  if (values['sentinel-down-after'] !== undefined && !values.sentinel)
    throw new UsageError('--sentinel-down-after needs --sentinel')
  if (values.sentinel)
    options.sentinel = {
      downAfterMs: integer(
        'sentinel-down-after',
        values['sentinel-down-after'],
        2000,
        100,
        600_000,
      ),
    }
  const published = publicUrls(values['public-url'], regions)
  if (published !== undefined) options.publicUrls = published
  const offsets = clockOffsets(values['clock-offset'], regions)
  if (offsets !== undefined) options.clockOffsetsMs = offsets
  if (values['skew-wait'] !== undefined)
    options.skewWaitMs = integer('skew-wait', values['skew-wait'], 0, 0, 60_000)
  options.http = httpLimitsOf(values)
  options.rateLimit = { max: 0, ...rateLimitOf(values) }
  const namespaces = namespacesOf(values.siblings, values.transactional)
  if (namespaces !== undefined) options.namespaces = namespaces
  if (values['commit-cache'] !== undefined) {
    const cache = integer('commit-cache', values['commit-cache'], 0, 0, 10_000_000)
    options.commitCache = cache === 0 ? false : cache
  }
  const limits = limitsOf(values)
  if (Object.keys(limits).length > 0) options.limits = limits
  const shipping = shippingOf(values)
  if (shipping.shipping !== undefined)
    options.shipping = {
      mode: shipping.shipping,
      ...(shipping.causal?.thetaMs === undefined ? {} : { thetaMs: shipping.causal.thetaMs }),
      ...(shipping.causal?.deltaMs === undefined ? {} : { deltaMs: shipping.causal.deltaMs }),
    }
  const delays = partitionDelays(values['partition-wan-delay'], options.partitions)
  if (delays !== undefined) options.partitionWanDelaysMs = delays
  if (options.withoutHlc && options.shipping?.mode === 'causal')
    throw new UsageError('--without-hlc cannot run with --shipping causal')
  return { options }
}

/** `causeway dev --backend redis ...`: resolves once every gateway listens (or returns 'help'). */
export async function runRedisDevCommand(args: string[]): Promise<'help' | undefined> {
  const command = parseRedisDev(args)
  if (command === 'help') return 'help'
  const { options } = command
  const total = options.regions * options.partitions * options.replicas
  process.stderr.write(
    `causeway dev: ${options.regions} regions × ${options.partitions} partitions × ${options.replicas} replicas ` +
      `on ${total} redis-servers (appendfsync ${options.appendfsync}), ${options.gateways} gateway process(es) per region, ` +
      `data ${options.dataDir === undefined ? 'in a temporary directory' : `in ${options.dataDir}`}` +
      `${options.wanDelayMs ? `, WAN delay ${options.wanDelayMs} ms` : ''}` +
      `, shipping ${options.shipping?.mode ?? 'fifo'}` +
      `${options.partitionWanDelaysMs ? `, partition WAN delays ${options.partitionWanDelaysMs.join(', ')} ms` : ''}` +
      `${options.withoutHlc ? ', WITHOUT HLC (ablation: writes wait for their dependencies)' : ''}` +
      `${options.sentinel ? ', 3 sentinels per region' : ''}` +
      `${options.clockOffsetsMs ? `, region clocks offset ${options.clockOffsetsMs.join(', ')} ms (dev only)` : ''}` +
      `, CORS ${describeOrigins(options.corsOrigins ?? [])}` +
      `${options.apiKeys ? `, ${options.apiKeys.length} API key(s)` : ''}` +
      `${options.publicUrls ? `, public URLs ${options.publicUrls.join(' ')}` : ''}\n`,
  )
  const { startRedisDevCluster } = await import('./dev/redis-dev-cluster.js')
  await runUntilSignal('causeway dev', startRedisDevCluster(options), (dev) => {
    process.stderr.write(`causeway dev: config ${dev.configPath}\n`)
    // Gateways first, so a reader that waits for every region line has them all.
    for (const g of dev.gateways)
      process.stdout.write(`gateway ${g.region}.${g.index} ${g.url} pid ${g.pid}\n`)
    for (const sentinel of dev.sentinels)
      process.stdout.write(`sentinel ${sentinel.region} ${sentinel.url} pid ${sentinel.pid}\n`)
    process.stdout.write(`config ${dev.configPath}\n`)
    for (const [d, url] of dev.urls.entries())
      process.stdout.write(`region ${d} (${dev.regionNames[d]}) ${url}\n`)
  })
  return undefined
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

// Background events, each kind at most once per 10 s (a region that is down for a while would
// otherwise log every retry).
function throttled(log: Logger): (message: string, error?: unknown) => void {
  const last = new Map<string, number>()
  return (message, error) => {
    const now = Date.now()
    if (now - (last.get(message) ?? -Infinity) < 10_000) return
    last.set(message, now)
    log.warn(error === undefined ? {} : { err: error }, message)
  }
}
