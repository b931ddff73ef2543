#!/usr/bin/env node
/**
 * The `causeway` command. `causeway dev` runs a whole cluster in this process, one gateway per
 * region, until SIGINT or SIGTERM, then shuts down gracefully: the gateways stop accepting,
 * requests in flight finish, and the cluster closes so everything acknowledged is durable.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import {
  HTTP_LIMIT_ARGS,
  HTTP_LIMIT_USAGE,
  RATE_LIMIT_ARGS,
  UsageError,
  apiKeysOf,
  clockOffsets,
  corsOrigins,
  partitionDelays,
  shippingOf,
  describeOrigins,
  httpLimitsOf,
  integer,
  limitsOf,
  publicUrls,
  rateLimitOf,
  namespacesOf,
} from './cli-args.js'
import {
  DEV_REDIS_USAGE,
  GATEWAY_USAGE,
  backendOf,
  runGatewayCommand,
  runRedisDevCommand,
} from './cli-redis.js'
import type { DevClusterOptions } from './dev-server.js'

const USAGE = `Usage: causeway <command> [options]

Commands:
  dev            Run a multi-region cluster in this process, one HTTP gateway per region
                 (--backend redis: on redis-servers and gateway processes it starts)
  gateway        Run one gateway process of one region of a Redis-backed cluster
  help           Show this help

Options of dev:
  --regions N            regions (1..255)                                [default: 2]
  --partitions N         partitions per region (1..65536)                [default: 4]
  --replicas N           replicas per partition (1..99)                  [default: 3]
  --port N               base port: region d listens on N + d; 0 = any   [default: 7070]
  --host HOST            interface to listen on                          [default: 127.0.0.1]
  --data DIR             keep the cluster in DIR (LevelDB per replica)   [default: ./.causeway]
  --memory               keep the cluster in memory instead (lost on exit)
  --replica-lag MS       delay before a follower applies an entry         [default: 0]
  --wan-delay MS         one-way delay between regions                    [default: 0]
  --shipping MODE        fifo (each partition in order) or causal (Eunomia:
                         causal across keys, levels causal)              [default: fifo]
  --theta MS             causal: how often each region ships its stable labels
                                                                         [default: 5]
  --delta MS             causal: how long a partition may write nothing before
                         it is asked for a heartbeat                     [default: 10]
  --stabilisers N        causal: replicas of each region's stabiliser    [default: 1]
  --partition-wan-delay MS  tests: one-way delay of one partition's data (repeatable,
                         in partition order; labels keep --wan-delay)
  --max-value-bytes N    largest value, in bytes of JSON                 [default: 1048576]
  --max-skew MS          how far ahead of the latest region clock known a
                         write's causeway-dt may be                      [default: 30000]
  --skew-wait MS         how long a write further ahead than that waits for a later
                         clock to be known before CLOCK_SKEW_EXCEEDED     [default: 2000]
  --clock-offset MS      dev and tests only: ms added to a region's wall clock; one
                         per region, in region order (negative: --clock-offset=-MS)
  --log-level LEVEL      fatal, error, warn, info, debug, trace, silent  [default: warn]
  --without-hlc          benchmark ablation: writes wait for their dependency vector
                         instead of using the HLC (NuKV section 6)       [default: off]
  --siblings NS          keep concurrent writes to keys NS:... as siblings with a
                         causal context (docs/siblings.md); repeatable  [default: none]
  --transactional NS     keys NS:... are written by transactions only, ordered by
                         each region's transaction log (docs/transactions.md);
                         repeatable                                      [default: none]
  --commit-cache N       transactions the applier's commit cache indexes;
                         0 = no cache                                    [default: 10000]
  --cors-origin ORIGIN   web pages of ORIGIN (scheme://host[:port]) may call the
                         gateways; repeatable; * for any origin            [default: *]
  --api-key KEY          client routes need authorization: Bearer KEY; repeatable
                         (unscoped keys; scoped ones: a config, docs/operations.md)
                                                                   [default: none, open]
  --public-url URL       the URL clients reach a region's gateway at (a proxy, another
                         host), published in the topology; one per region, in
                         region order                      [default: http://HOST:PORT]
  --op-retention-ms MS   how long an idle op-id client's records are kept [default: 86400000]
  --max-watchers N       change feeds (GET /v1/watch) per gateway        [default: 1000]
  --max-watchers-per-key N  change feeds one API key (or address) holds per
                         gateway                     [default: max-watchers / 10]
  --max-watch-ms MS      longest a change feed streams before the client
                         resumes from its last event id            [default: 1800000]
  --rate-limit N         requests per window per client address; 0 = off
                         (per API key with --api-key)                    [default: 0]
  --rate-limit-window MS the rate limit's window                        [default: 1000]
  --rate-limit-refused N refused requests (401, 403) per window per address before
                         all its requests are refused; 0 = off            [default: 100]
${HTTP_LIMIT_USAGE}

  --backend level|redis  storage backend (redis: see below)             [default: level]

${DEV_REDIS_USAGE}
${GATEWAY_USAGE}
  -h, --help             show this help
  -v, --version          show the version

Each region's URL is printed on its own line once every gateway listens.
Stop with Ctrl-C (SIGINT) or SIGTERM; a second signal exits at once.
`

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

interface DevCommand {
  options: DevClusterOptions
  logLevel: string
}

function parseDev(args: string[]): DevCommand | 'help' {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      regions: { type: 'string' },
      partitions: { type: 'string' },
      replicas: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      memory: { type: 'boolean' },
      'replica-lag': { type: 'string' },
      'wan-delay': { type: 'string' },
      shipping: { type: 'string' },
      theta: { type: 'string' },
      delta: { type: 'string' },
      stabilisers: { type: 'string' },
      'partition-wan-delay': { type: 'string', multiple: true },
      'max-value-bytes': { type: 'string' },
      'max-skew': { type: 'string' },
      'skew-wait': { type: 'string' },
      'clock-offset': { type: 'string', multiple: true },
      'log-level': { type: 'string' },
      'without-hlc': { type: 'boolean' },
      siblings: { type: 'string', multiple: true },
      transactional: { type: 'string', multiple: true },
      'commit-cache': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      'api-key': { type: 'string', multiple: true },
      'public-url': { type: 'string', multiple: true },
      'op-retention-ms': { type: 'string' },
      'max-watchers': { type: 'string' },
      'max-watchers-per-key': { type: 'string' },
      'max-watch-ms': { type: 'string' },
      backend: { type: 'string' },
      ...HTTP_LIMIT_ARGS,
      ...RATE_LIMIT_ARGS,
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) return 'help'
  if (values.backend !== undefined && values.backend !== 'level')
    throw new UsageError(`--backend must be level or redis, not ${JSON.stringify(values.backend)}`)
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`)
  if (values.memory && values.data !== undefined)
    throw new UsageError('use either --data DIR or --memory, not both')
  if (values.data === '') throw new UsageError('--data needs a directory')
  if (values.host === '') throw new UsageError('--host needs an interface')
  const logLevel = values['log-level'] ?? 'warn'
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new UsageError(
      `--log-level must be one of ${LOG_LEVELS.join(', ')}, not ${JSON.stringify(logLevel)}`,
    )
  }
  const regions = integer('regions', values.regions, 2, 1, 255)
  const port = integer('port', values.port, 7070, 0, 65_535)
  if (port !== 0 && port + regions - 1 > 65_535) {
    throw new UsageError(
      `--port ${port} leaves no room for ${regions} regions (ports ${port}..${port + regions - 1})`,
    )
  }
  const options: DevClusterOptions = {
    regions,
    partitions: integer('partitions', values.partitions, 4, 1, 65_536),
    replicas: integer('replicas', values.replicas, 3, 1, 99),
    port,
    host: values.host ?? '127.0.0.1',
    dataDir: values.memory ? undefined : (values.data ?? './.causeway'),
    replicaLagMs: integer('replica-lag', values['replica-lag'], 0, 0, 3_600_000),
    wanDelayMs: integer('wan-delay', values['wan-delay'], 0, 0, 3_600_000),
    withoutHlc: values['without-hlc'] ?? false,
    // A development cluster: pages of any origin may call it unless told otherwise.
    corsOrigins: corsOrigins(values['cors-origin'], ['*']),
    // Pino writes to stderr so stdout carries only the region URLs.
    logger: logLevel === 'silent' ? false : { level: logLevel, stream: process.stderr },
  }
  const limits = limitsOf(values)
  if (Object.keys(limits).length > 0) options.limits = limits
  const shipping = shippingOf(values)
  if (shipping.shipping !== undefined) options.shipping = shipping.shipping
  if (shipping.causal !== undefined) options.causal = shipping.causal
  const delays = partitionDelays(values['partition-wan-delay'], options.partitions)
  if (delays !== undefined) options.partitionWanDelaysMs = delays
  const namespaces = namespacesOf(values.siblings, values.transactional)
  if (namespaces !== undefined) options.namespaces = namespaces
  if (values['commit-cache'] !== undefined) {
    const cache = integer('commit-cache', values['commit-cache'], 0, 0, 10_000_000)
    options.commitCache = cache === 0 ? false : cache
  }
  const apiKeys = apiKeysOf(values['api-key'])
  if (apiKeys !== undefined) options.apiKeys = apiKeys
  const published = publicUrls(values['public-url'], regions)
  if (published !== undefined) options.publicUrls = published
  const offsets = clockOffsets(values['clock-offset'], regions)
  if (offsets !== undefined) options.clockOffsetsMs = offsets
  if (values['skew-wait'] !== undefined)
    options.skewWaitMs = integer('skew-wait', values['skew-wait'], 0, 0, 60_000)
  if (values['op-retention-ms'] !== undefined)
    options.opRetentionMs = integer('op-retention-ms', values['op-retention-ms'], 0, 1, 2 ** 40)
  if (values['max-watchers'] !== undefined)
    options.watch = { maxWatchers: integer('max-watchers', values['max-watchers'], 0, 0, 1e6) }
  if (values['max-watchers-per-key'] !== undefined)
    options.watch = {
      ...options.watch,
      maxWatchersPerKey: integer('max-watchers-per-key', values['max-watchers-per-key'], 0, 1, 1e6),
    }
  if (values['max-watch-ms'] !== undefined)
    options.watch = {
      ...options.watch,
      maxStreamMs: integer('max-watch-ms', values['max-watch-ms'], 0, 100, 2 ** 31 - 1),
    }
  const http = httpLimitsOf(values)
  if (Object.keys(http).length > 0) options.http = http
  const rateLimit = rateLimitOf(values)
  if (rateLimit.max !== undefined && rateLimit.max > 0)
    options.rateLimit = { max: rateLimit.max, ...rateLimit }
  return { options, logLevel }
}

function version(): string {
  // One level up from both src/cli.ts and dist/cli.js.
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
  return pkg.version
}

function describeNamespaces(options: DevClusterOptions): string {
  const all = Object.entries(options.namespaces ?? {})
  const siblings = all.filter(([, c]) => c.conflicts === 'siblings').map(([n]) => n)
  const transactional = all.filter(([, c]) => c.transactions === true).map(([n]) => n)
  return (
    (siblings.length > 0 ? `, siblings namespaces ${siblings.join(', ')}` : '') +
    (transactional.length > 0 ? `, transactional namespaces ${transactional.join(', ')}` : '')
  )
}

async function runDev(command: DevCommand): Promise<void> {
  const { options } = command
  const where = options.dataDir === undefined ? 'in memory' : `in ${options.dataDir}`
  process.stderr.write(
    `causeway dev: ${options.regions} regions × ${options.partitions} partitions × ${options.replicas} replicas, ` +
      `data ${where}, replica lag ${options.replicaLagMs} ms, WAN delay ${options.wanDelayMs} ms` +
      `, shipping ${options.shipping ?? 'fifo'}` +
      `${options.causal ? ` (theta ${options.causal.thetaMs ?? 5} ms, Delta ${options.causal.deltaMs ?? 10} ms, ${options.causal.replicas ?? 1} stabiliser replica(s))` : ''}` +
      `${options.partitionWanDelaysMs ? `, partition WAN delays ${options.partitionWanDelaysMs.join(', ')} ms` : ''}` +
      `${options.withoutHlc ? ', WITHOUT HLC (ablation: writes wait for their dependencies)' : ''}` +
      `${options.clockOffsetsMs ? `, region clocks offset ${options.clockOffsetsMs.join(', ')} ms (dev only)` : ''}` +
      `${describeNamespaces(options)}` +
      `, CORS ${describeOrigins(options.corsOrigins ?? [])}` +
      `${options.publicUrls ? `, public URLs ${options.publicUrls.join(' ')}` : ''}\n`,
  )
  // Loaded only now, so help and usage errors answer without loading the server.
  const { startDevCluster } = await import('./dev-server.js')
  const { stderrLogger } = await import('./log.js')
  // The cluster's background events go to a pino logger at the requests' level, on stderr too.
  const starting = startDevCluster({ ...options, log: stderrLogger(command.logLevel) })
  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.stderr.write(`causeway dev: ${signal} again, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    process.stderr.write(`causeway dev: ${signal}, shutting down (finishing requests in flight)\n`)
    // A signal during startup waits for the start, then closes what started.
    const closing = starting.then((dev) => dev.close())
    closing.then(
      () => {
        process.stderr.write('causeway dev: stopped\n')
        process.exit(0)
      },
      (error: unknown) => {
        process.stderr.write(`causeway dev: shutdown failed: ${String(error)}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
  const dev = await starting
  if (stopping) return
  for (const [d, url] of dev.urls.entries()) {
    process.stdout.write(`region ${d} (${dev.cluster.regionNames[d]}) ${url}\n`)
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined) {
    process.stderr.write(USAGE)
    return 2
  }
  if (command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  if (command === '-v' || command === '--version') {
    process.stdout.write(`${version()}\n`)
    return 0
  }
  if (command === 'gateway' || (command === 'dev' && backendOf(rest) === 'redis')) {
    const run = command === 'gateway' ? runGatewayCommand : runRedisDevCommand
    if ((await run(rest)) === 'help') {
      process.stdout.write(USAGE)
      return 0
    }
    return -1 // keep running until a signal
  }
  if (command !== 'dev') throw new UsageError(`unknown command ${JSON.stringify(command)}`)
  const dev = parseDev(rest)
  if (dev === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  await runDev(dev)
  return -1 // keep running until a signal
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`causeway: ${(error as Error).message}\n\n${USAGE}`)
      process.exitCode = 2
      return
    }
    process.stderr.write(`causeway: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  },
)
