/**
 * One gateway process of one region of a Redis-backed cluster (`causeway gateway --config`): the
 * {@link RedisCluster} of that region behind a listening gateway with the config's credentials and
 * the internal shipping endpoint. `close()` drains it like `causeway dev` does.
 */
import type { FastifyServerOptions } from 'fastify'
import { Redis } from 'ioredis'
import { withoutHlc } from './ablation/without-hlc.js'
import type { ClusterConfig } from './config/cluster-config.js'
import type { ClusterService } from './cluster/cluster-service.js'
import { RedisCluster, type RedisClusterOptions } from './cluster/redis-cluster.js'
import { buildGateway, type Gateway } from './http/build-gateway.js'
import type { WatchOptions } from './http/routes/watch.js'
import type { HttpLimits } from './http/http-limits.js'
import { ReplicaKeys } from './storage/redis/key-layout.js'

/** Options of {@link startGateway}. */
export interface GatewayServerOptions {
  config: ClusterConfig
  /** The region to serve (an id of `config.regions`). */
  region: number
  /**
   * Port to listen on; 0 lets the OS pick one.
   * @default 7070
   */
  port?: number
  /**
   * Interface to listen on.
   * @default '127.0.0.1'
   */
  host?: string
  /** Fastify's logger. @default false */
  logger?: FastifyServerOptions['logger']
  /**
   * On close, how long requests in flight may take before their connections are cut, in ms.
   * @default 10000
   */
  drainTimeoutMs?: number
  /**
   * Origins whose web pages may call this gateway (CORS), as `buildGateway` takes them.
   * @default [] (none: a production gateway answers no page of another origin until told which)
   */
  corsOrigins?: readonly string[]
  /**
   * The change feeds of this gateway (`GET /v1/watch`).
   * @default 1000 feeds, a heartbeat every 15 s
   */
  watch?: WatchOptions
  /** Passed to {@link RedisCluster.start}. */
  cluster?: Omit<RedisClusterOptions, 'config' | 'region'>
  /** HTTP limits that override the config's `http` (the command line's). */
  http?: HttpLimits
  /** Rate-limit settings that override the config's `rateLimit` (the command line's). */
  rateLimit?: { max?: number; windowMs?: number; maxRefused?: number }
  /**
   * Refuse to start when the Redis servers cannot keep the durability the config promises
   * (`redis.durability`, checked by `cluster/durability-check.ts`), instead of warning.
   * @default false
   */
  strict?: boolean
  /**
   * Told each way the servers cannot keep the promised durability, at start.
   * @default the cluster's `onEvent`
   */
  onDurabilityProblem?: (problem: string) => void
}

/** The servers cannot keep the durability the config promises (`strict` start). */
export class DurabilityError extends Error {
  constructor(
    readonly durability: string,
    readonly problems: readonly string[],
  ) {
    super(`the Redis servers cannot keep durability '${durability}':\n  ${problems.join('\n  ')}`)
    this.name = 'DurabilityError'
  }
}

/** A listening gateway process of one region. */
export interface GatewayServer {
  cluster: RedisCluster
  /** What the gateway serves: the cluster's service, or the benchmark ablation around it. */
  service: ClusterService
  gateway: Gateway
  /** The URL it listens on. */
  url: string
  /** Drains the gateway, then closes the cluster (handing back its shipping leases). */
  close(): Promise<void>
}

/** Starts serving `region` of `config`; the Redis servers need not be up yet. */
export async function startGateway(options: GatewayServerOptions): Promise<GatewayServer> {
  const { config, region } = options
  const host = options.host ?? '127.0.0.1'
  const cluster = await RedisCluster.start({ ...options.cluster, config, region })
  const problems = await cluster.durabilityProblems()
  if (problems.length > 0 && options.strict) {
    await cluster.close()
    throw new DurabilityError(config.redis.durability, problems)
  }
  for (const problem of problems)
    (options.onDurabilityProblem ?? options.cluster?.onEvent ?? (() => {}))(
      `durability '${config.redis.durability}' cannot be kept: ${problem}`,
    )
  const rateLimit = { ...config.rateLimit, ...options.rateLimit }
  // The region's gateways count in one Redis: its partition 0 leader unless the config names one.
  const limiter =
    rateLimit.max > 0
      ? new Redis(rateLimit.redis ?? config.regions[region]!.replicas[0]![0]!, {
          lazyConnect: false,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          commandTimeout: Math.min(config.redis.commandTimeoutMs, 250),
          connectTimeout: config.redis.connectTimeoutMs,
          retryStrategy: (times) => Math.min(config.redis.reconnectMaxDelayMs, 50 * 2 ** times),
        })
      : undefined
  // A Redis that is down lets requests through (see http/rate-limit.ts); its errors are not news.
  limiter?.on('error', () => undefined)
  // The benchmark ablation "without HLC", when the config asks for it (never in production).
  const service = config.benchmark.withoutHlc ? withoutHlc(cluster.service) : cluster.service
  const gateway = buildGateway({
    service,
    regionUrls: config.regions.map((r) => r.url),
    logger: options.logger ?? false,
    corsOrigins: options.corsOrigins ?? [],
    ...(options.watch === undefined ? {} : { watch: options.watch }),
    auth: {
      apiKeys: config.auth.apiKeys,
      ...(config.auth.clusterSecret === undefined
        ? {}
        : { clusterSecret: config.auth.clusterSecret }),
    },
    ...(config.auth.clusterSecret === undefined
      ? {}
      : {
          shipping: {
            receiver: cluster,
            maxBatchBytes: config.shipping.maxBatchBytes,
            ...(cluster.txLog === undefined ? {} : { transactions: cluster }),
            ...(cluster.causal ? { labels: cluster.causal } : {}),
          },
        }),
    http: { ...config.http, ...options.http },
    ...(limiter === undefined
      ? {}
      : {
          rateLimit: {
            max: rateLimit.max,
            windowMs: rateLimit.windowMs,
            maxRefused: rateLimit.maxRefused,
            redis: limiter,
            // In partition 0's key space, where the counters' server is by default.
            prefix: `${new ReplicaKeys(config.redis.namespace, region, 0).prefix}rate:`,
          },
        }),
  })
  let closing: Promise<void> | undefined
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      const force = setTimeout(
        () => gateway.server.closeAllConnections(),
        options.drainTimeoutMs ?? 10_000,
      )
      force.unref()
      try {
        await gateway.close()
      } finally {
        clearTimeout(force)
        limiter?.disconnect()
        await cluster.close()
      }
    })())
  try {
    await gateway.listen({ host, port: options.port ?? 7070 })
  } catch (error) {
    await close().catch(() => undefined)
    throw error
  }
  const address = gateway.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  return { cluster, service, gateway, url, close }
}
