/**
 * A whole cluster in one process: the embedded cluster plus one listening gateway per region
 * (`causeway dev`, `npm start`, integration tests).
 */
import { CausewayError } from '@causeway/core'
import type { FastifyServerOptions } from 'fastify'
import { withoutHlc } from './ablation/without-hlc.js'
import type { ClusterService } from './cluster/cluster-service.js'
import { EmbeddedCluster, type EmbeddedClusterOptions } from './cluster/embedded-cluster.js'
import { buildGateway, type Gateway } from './http/build-gateway.js'
import type { WatchOptions } from './http/routes/watch.js'
import type { HttpLimits } from './http/http-limits.js'
import type { RateLimitOptions } from './http/rate-limit.js'
import type { ApiKeySpec } from './http/auth.js'

/** What {@link serveCluster} needs of a cluster: one service per region, and a way to stop. */
export interface ServableCluster {
  service(region: number): ClusterService
  close(): Promise<void>
}

/** Options of {@link serveCluster}. */
export interface ServeOptions {
  /** Number of regions to serve (0..regions-1). */
  regions: number
  /**
   * Base port: region `d` listens on `port + d`. `0` puts each region on a free port the OS picks.
   * @default 7070
   */
  port?: number
  /**
   * Interface to listen on.
   * @default '127.0.0.1'
   */
  host?: string
  /**
   * Fastify's logger for every gateway.
   * @default false
   */
  logger?: FastifyServerOptions['logger']
  /**
   * On close, how long requests in flight may take to finish before their connections are cut.
   * @default 10000
   */
  drainTimeoutMs?: number
  /**
   * Origins whose web pages may call the gateways (CORS), as `buildGateway` takes them. A
   * development cluster lets pages of any origin call it.
   * @default ['*']
   */
  corsOrigins?: readonly string[]
  /**
   * Bearer tokens (or scoped keys) the gateways' client routes require (`auth.apiKeys` of
   * `buildGateway`).
   * @default none: the client routes are open
   */
  apiKeys?: readonly (string | ApiKeySpec)[]
  /**
   * The URL of each region's gateway as clients reach it (a proxy in front of it, another host
   * name), by region id, published in the topology so that SDKs, browsers included, call those.
   * @default each gateway's own `http://host:port`
   */
  publicUrls?: readonly string[]
  /**
   * The change feeds of every gateway (`GET /v1/watch`).
   * @default 1000 feeds per gateway, a heartbeat every 15 s
   */
  watch?: WatchOptions
  /**
   * Time limits and the connection cap of every gateway.
   * @default the gateway's defaults (`http/http-limits.ts`)
   */
  http?: HttpLimits
  /**
   * Every gateway's rate limit (counted per gateway: one process has no shared store to need).
   * @default none: a dev cluster never refuses tests or benchmarks for their rate
   */
  rateLimit?: RateLimitOptions
  /**
   * The service each region's gateway serves, made from the cluster's.
   * @default the cluster's own (`cluster.service(region)`)
   */
  serviceOf?: (region: number) => ClusterService
}

/** A cluster with a listening gateway per region. */
export interface ServedCluster<C extends ServableCluster> {
  cluster: C
  /** Base URL each region's gateway listens on, by region id (`publicUrls` may differ). */
  urls: string[]
  /** Each region's gateway, by region id. */
  gateways: Gateway[]
  /**
   * Stops accepting requests, lets the ones in flight finish, then closes the cluster (which
   * makes everything acknowledged durable). Safe to call more than once.
   */
  close(): Promise<void>
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * Builds and starts one gateway per region of `cluster`. If any cannot listen, the ones already
 * started and the cluster are closed and the error is rethrown.
 */
export async function serveCluster<C extends ServableCluster>(
  cluster: C,
  options: ServeOptions,
): Promise<ServedCluster<C>> {
  const host = options.host ?? '127.0.0.1'
  const base = options.port ?? 7070
  const { publicUrls } = options
  if (publicUrls !== undefined && publicUrls.length !== options.regions) {
    await cluster.close()
    throw new TypeError(
      `publicUrls has ${publicUrls.length} URLs; the cluster has ${options.regions} regions`,
    )
  }
  // With a base port the URLs are known before anything listens; with port 0 they fill in as
  // each gateway gets its port.
  const urls: string[] =
    base === 0 ? [] : Array.from({ length: options.regions }, (_, d) => urlOf(host, base + d))
  const gateways: Gateway[] = []
  let closing: Promise<void> | undefined
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      const force = setTimeout(() => {
        for (const gateway of gateways) gateway.server.closeAllConnections()
      }, options.drainTimeoutMs ?? 10_000)
      force.unref()
      const results = await Promise.allSettled(gateways.map((gateway) => gateway.close()))
      clearTimeout(force)
      await cluster.close()
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      if (failed !== undefined) throw failed.reason
    })())
  try {
    for (let region = 0; region < options.regions; region++) {
      const gateway = buildGateway({
        service: options.serviceOf?.(region) ?? cluster.service(region),
        regionUrls: publicUrls === undefined ? () => urls : publicUrls,
        corsOrigins: options.corsOrigins ?? ['*'],
        ...(options.apiKeys && options.apiKeys.length > 0
          ? { auth: { apiKeys: options.apiKeys } }
          : {}),
        logger: options.logger ?? false,
        // One process: report its CPU, memory and event loop once, at region 0.
        processMetrics: region === 0,
        ...(options.watch === undefined ? {} : { watch: options.watch }),
        ...(options.http ? { http: options.http } : {}),
        ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
      })
      gateways.push(gateway)
      await gateway.listen({ host, port: base === 0 ? 0 : base + region })
      const address = gateway.server.address()
      if (address === null || typeof address === 'string')
        throw new Error(`region ${region} has no TCP address`)
      urls[region] = urlOf(host, address.port)
    }
  } catch (error) {
    await close().catch(() => undefined)
    throw error
  }
  return { cluster, urls, gateways, close }
}

/** Options of {@link startDevCluster}: the embedded cluster's and the listeners'. */
export interface DevClusterOptions
  extends EmbeddedClusterOptions, Omit<ServeOptions, 'regions' | 'serviceOf'> {
  /**
   * Benchmark ablation (NuKV section 6, "without HLC"): writes ignore their HLC dependency and
   * wait at the leader for their dependency vector instead (`ablation/without-hlc.ts`).
   * @default false
   */
  withoutHlc?: boolean
}

/** An embedded cluster with a listening gateway per region. */
export type DevCluster = ServedCluster<EmbeddedCluster>

/**
 * Starts an embedded cluster and one gateway per region: region `d` on `port + d` (or a free
 * port each with `port: 0`). `close()` drains the gateways, then closes the cluster.
 */
export async function startDevCluster(options: DevClusterOptions): Promise<DevCluster> {
  const {
    port,
    host,
    logger,
    drainTimeoutMs,
    corsOrigins,
    apiKeys,
    publicUrls,
    watch,
    http,
    rateLimit,
    withoutHlc: ablation,
    ...clusterOptions
  } = options
  // Writes that ignore their dependency time cannot be causal.
  if (ablation === true && clusterOptions.shipping === 'causal')
    throw new CausewayError('INVALID_OPTION', "withoutHlc cannot run with shipping: 'causal'", {
      option: 'withoutHlc',
    })
  const cluster = await EmbeddedCluster.start(clusterOptions)
  return serveCluster(cluster, {
    regions: cluster.regions,
    port,
    host,
    logger,
    drainTimeoutMs,
    corsOrigins,
    ...(apiKeys === undefined ? {} : { apiKeys }),
    publicUrls,
    ...(watch === undefined ? {} : { watch }),
    ...(http ? { http } : {}),
    ...(rateLimit ? { rateLimit } : {}),
    ...(ablation === true ? { serviceOf: (d: number) => withoutHlc(cluster.service(d)) } : {}),
  })
}
