/**
 * Builds one region's gateway: a Fastify instance (not listening) whose plugin tree is the kv
 * routes, topology, status, health, metrics and the OpenAPI document, over a {@link ClusterService}
 * that knows nothing of HTTP. Listening is the caller's job (`startDevCluster`, the CLI, tests
 * use `app.inject()`).
 */
import { CausewayError } from '@causeway/core'
import fastifyCors from '@fastify/cors'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify'
import type { ClusterService } from '../cluster/cluster-service.js'
import { authenticate, decorateForAuth, type GatewayAuth } from './auth.js'
import { AllowedMethods } from './allowed-methods.js'
import { CorsPolicy, refusePreflights } from './cors.js'
import { handleClientError } from './client-errors.js'
import { handleError, handleFrameworkError, notFoundHandler, validationError } from './errors.js'
import {
  capConnections,
  dropStalledBodies,
  resolveHttpLimits,
  serverOptionsFor,
  type HttpLimits,
} from './http-limits.js'
import { limitRefusals, registerRateLimit, type RateLimitOptions } from './rate-limit.js'
import { BodyBudget, chargeBodies } from './body-budget.js'
import { parseTextTypes } from './text-types.js'
import { healthRoute } from './routes/health.js'
import type { LabelReceiver } from '../replication/causal/label-link.js'
import type { ShippingReceiver } from '../replication/shipping-receiver.js'
import { causalInternalRoutes } from './routes/causal-internal.js'
import { internalRoutes } from './routes/internal.js'
import type { TxReceiver } from '../replication/tx-link.js'
import { kvRoutes } from './routes/kv.js'
import { opsRoute } from './routes/ops.js'
import { type WatchOptions, watchRoute } from './routes/watch.js'
import { setRoutes } from './routes/sets.js'
import { transactionRoutes } from './routes/transactions.js'
import { GatewayMetrics } from './gateway-metrics.js'
import { metricsRoute, requestTimer } from './routes/metrics.js'
import { openApiOptions, openApiRoute } from './routes/openapi.js'
import { statusPageRoutes } from './routes/status-page.js'
import { statusRoute } from './routes/status.js'
import { topologyRoute } from './routes/topology.js'

/** Options of {@link buildGateway}. */
export interface GatewayOptions {
  /** The region this gateway serves. */
  service: ClusterService
  /**
   * The public base URL of every region's gateway, by region id, published in the topology. A
   * function when the URLs are known only once every gateway listens (ports chosen by the OS).
   */
  regionUrls: readonly string[] | (() => readonly string[])
  /**
   * Fastify's logger: `false`, `true` (pino at `info`) or pino options.
   * @default false
   */
  logger?: FastifyServerOptions['logger']
  /**
   * Export Node's process metrics (CPU, memory, event loop, GC) at `/metrics`. Several gateways in
   * one process would each report the same process.
   * @default true
   */
  processMetrics?: boolean
  /**
   * Credentials: client API keys (none: client routes are open) and the cluster secret of the
   * internal routes. See `http/auth.ts`.
   * @default open client routes, no internal access
   */
  auth?: GatewayAuth
  /**
   * Serve the internal cross-region shipping endpoint (`/v1/internal/ship/...`) from this
   * receiver; needs `auth.clusterSecret`.
   * @default not served
   */
  shipping?: {
    receiver: ShippingReceiver
    maxBatchBytes?: number
    transactions?: TxReceiver
    /**
     * With causal shipping: the region's receiving side of other regions' labels
     * (`/v1/internal/causal/labels/...`).
     */
    labels?: LabelReceiver
  }
  /**
   * Origins whose web pages may call the client routes (CORS): `scheme://host[:port]` as browsers
   * send it, or `'*'` for any. The internal routes never answer cross-origin. See `http/cors.ts`.
   * @default [] (no cross-origin requests)
   */
  corsOrigins?: readonly string[]
  /**
   * The change feeds (`GET /v1/watch`): most at once, heartbeat period.
   * @default 1000 feeds, a heartbeat every 15 s
   */
  watch?: WatchOptions
  /**
   * Time limits of a request and a connection, the connection cap and each address's share of it
   * (`http-limits.ts`), and the budget of body bytes in flight (`body-budget.ts`).
   * @default every limit at its default
   */
  http?: HttpLimits
  /**
   * Requests per window per API key (or client address); see `http/rate-limit.ts`. `causeway
   * gateway` turns it on with `DEFAULT_RATE_LIMIT` unless its config says otherwise.
   * @default no limit
   */
  rateLimit?: RateLimitOptions
}

/** A gateway: a Fastify instance typed by the TypeBox schemas of `@causeway/core`. */
export type Gateway = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/**
 * Room a PUT body may take beyond the value limit, for the `{"value":...}` envelope and
 * formatting. The value's own limit is checked exactly on its JSON text after parsing.
 */
function bodyLimitFor(maxValueBytes: number): number {
  return 2 * maxValueBytes + 1024
}

/** Builds a gateway for one region; it is not listening yet. */
export function buildGateway(options: GatewayOptions): Gateway {
  const { service } = options
  const shape = service.shape()
  const regionUrls =
    typeof options.regionUrls === 'function'
      ? options.regionUrls
      : () => options.regionUrls as readonly string[]
  const urls = regionUrls()
  if (typeof options.regionUrls !== 'function' && urls.length !== shape.regionNames.length) {
    throw new TypeError(
      `regionUrls has ${urls.length} entries; the cluster has ${shape.regionNames.length} regions`,
    )
  }

  const limits = resolveHttpLimits(options.http, shape.limits.maxTimeoutMs)
  const app = Fastify({
    ...serverOptionsFor(limits),
    logger: options.logger ?? false,
    bodyLimit: bodyLimitFor(shape.limits.maxValueBytes),
    // A key of maxKeyBytes, every byte percent-encoded, still matches `/v1/kv/:key`; a longer
    // one is reported as KEY_TOO_LARGE by the framework error handler.
    routerOptions: { maxParamLength: 3 * shape.limits.maxKeyBytes },
    // Values are opaque JSON stored as text and never merged into objects, so a `__proto__` key
    // is data like any other; unknown body fields are still refused by the schema.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    // Requests arriving while draining get our SHUTTING_DOWN error instead of Fastify's own body.
    return503OnClosing: false,
    // Unknown fields are errors, not silently dropped; types are never coerced (a string is not
    // a one-element array: text-types.ts reads query-string numbers explicitly); `verbose` lets
    // errors name the values a field accepts.
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: false,
        allErrors: false,
        verbose: true,
        // JSON Schema 2020-12's tuple keyword, which this draft-07 Ajv does not know: an
        // annotation for the OpenAPI 3.1 document (a read's `[key, tid]`), checked by the route.
        keywords: ['prefixItems'],
      },
    },
    schemaErrorFormatter: validationError,
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
  }).withTypeProvider<TypeBoxTypeProvider>()
  capConnections(app, limits)

  // Only JSON bodies: any other content type is UNSUPPORTED_MEDIA_TYPE.
  app.removeContentTypeParser('text/plain')

  if (options.shipping && !options.auth?.clusterSecret)
    throw new TypeError('the internal shipping endpoint needs auth.clusterSecret')
  const cors = new CorsPolicy(options.corsOrigins ?? [])
  app.addHook('onRequest', refusePreflights(cors))
  if (!cors.none) app.register(fastifyCors, cors.pluginOptions())

  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  // Fastify queues a hook behind the plugins registered before it, so these run after
  // @fastify/cors's: their refusals (503, 401) carry the CORS headers a page needs to read them.
  app.addHook('onRequest', dropStalledBodies(limits))
  app.addHook('onRequest', async () => {
    if (closing) {
      throw new CausewayError('SHUTTING_DOWN', 'the gateway is shutting down; retry on another')
    }
  })
  decorateForAuth(app)
  // Before authentication: an address over its budget of refused requests is not checked again.
  if (options.rateLimit) limitRefusals(app, options.rateLimit)
  app.addHook('onRequest', authenticate(options.auth ?? {}))
  // After authentication, which names the key a body is charged to; before any body is read.
  app.addHook('onRequest', chargeBodies(new BodyBudget(limits), limits))
  // A request no route answers is answered now, before its body is read: an unknown method
  // with a body (`QUERY /healthz`) is 405 like any other, not a content-type error. Made before
  // any route is added: it records the methods of every route for 405's `Allow`.
  const allowedMethods = new AllowedMethods(app)
  const handleNotFound = notFoundHandler(allowedMethods)
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return handleNotFound(request, reply)
  })
  // The server stops listening on close but waits for open connections: a keep-alive connection
  // whose request was in flight would hold it open, so such replies close their connection.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close')
    return payload
  })

  const metrics = new GatewayMetrics({
    region: service.region,
    processMetrics: options.processMetrics ?? true,
  })
  app.addHook('onResponse', requestTimer(metrics))
  app.setErrorHandler(handleError)
  app.setNotFoundHandler(handleNotFound)
  // Before any route is added, like AllowedMethods: it hooks every route's query and params.
  parseTextTypes(app)

  // Registered first, at the root: its onRoute hook must see every route below.
  app.register(swagger, openApiOptions)
  // Also at the root before the routes: it hooks every route added after it.
  if (options.rateLimit) registerRateLimit(app, options.rateLimit)
  app.register(openApiRoute, { shipping: () => service.shape().shipping })
  app.register(topologyRoute, { shape: () => service.shape(), regionUrls })
  app.register(kvRoutes, { service, metrics })
  if (service.sets) app.register(setRoutes, { service, sets: service.sets, metrics })
  if (service.transactions)
    app.register(transactionRoutes, { service, transactions: service.transactions })
  app.register(opsRoute, { service, writeBodyLimit: bodyLimitFor(shape.limits.maxValueBytes) })
  if (service.changes)
    app.register(watchRoute, { service, changes: service.changes, ...options.watch })
  app.register(statusRoute, { service })
  app.register(statusPageRoutes)
  app.register(healthRoute, { region: service.region })
  app.register(metricsRoute, { service, metrics })
  if (options.shipping) {
    app.register(internalRoutes, {
      receiver: options.shipping.receiver,
      region: service.region,
      regions: shape.regionNames.length,
      partitions: shape.partitions,
      maxKeyBytes: shape.limits.maxKeyBytes,
      maxValueBytes: shape.limits.maxValueBytes,
      maxBatchBytes: options.shipping.maxBatchBytes,
      metrics,
      ...(options.shipping.transactions
        ? {
            transactions: {
              receiver: options.shipping.transactions,
              maxTxBytes: shape.limits.maxTxBytes,
            },
          }
        : {}),
    })
    if (options.shipping.labels)
      app.register(causalInternalRoutes, {
        receiver: options.shipping.labels,
        region: service.region,
        regions: shape.regionNames.length,
      })
  }
  return app
}
