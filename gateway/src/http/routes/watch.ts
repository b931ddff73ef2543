/**
 * `GET /v1/watch`: a change feed as server-sent events (`@fastify/sse`). The request is checked
 * and the feed opened (waiting for replicas that cover `causeway-after`) before anything is
 * streamed, so every refusal is an ordinary error reply: `TOO_MANY_WATCHERS` (429 with
 * `retry-after`) when this gateway already serves `maxWatchers` feeds, `SESSION_NOT_AVAILABLE`,
 * `INVALID_CURSOR`, ... Then `change` and `heartbeat` events, each with the cursor after it as
 * its `id`, until the client goes or the gateway shuts down; a failure after the start is an
 * `error` event (the error body) and the end of the stream: the client resumes from its last id.
 */
import sseModule, { type SSEPluginOptions } from '@fastify/sse'
import { CausewayError, HEADER_AFTER, HEADER_LAST_EVENT_ID } from '@causeway/core'
import { ErrorReplySchema, WatchQuerySchema } from '@causeway/core/schemas'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { ChangeFeed, ChangeFeedService } from '../../cluster/change-feed.js'
import type { ClusterService } from '../../cluster/cluster-service.js'
import { principalOf } from '../auth.js'
import { checkDataScope } from '../data-scope.js'
import { LAST_EVENT_ID_HEADER, watchAfterHeader } from '../header-schemas.js'
import { toCausewayError } from '../errors.js'
import { parseWatch } from '../watch-request.js'
import { withTimeoutMaximum } from '../query-limits.js'

/** Options of the change feeds a gateway serves. */
export interface WatchOptions {
  /**
   * Most feeds this gateway streams at once; one more is refused with `TOO_MANY_WATCHERS`.
   * @default 1000
   */
  maxWatchers?: number
  /**
   * Most feeds one API key (or, without one, one client address) holds on this gateway: its share
   * of `maxWatchers`, so that one tenant cannot take every slot. One more is refused with
   * `TOO_MANY_WATCHERS` (`details.scope: 'key'`).
   * @default a tenth of `maxWatchers` (100), at least 1
   */
  maxWatchersPerKey?: number
  /**
   * Heartbeat period of a feed that asks for none (`heartbeatMs`), in ms.
   * @default 15000
   */
  heartbeatMs?: number
  /**
   * The `retry-after` of a refused feed, in seconds.
   * @default 5
   */
  retryAfterS?: number
  /**
   * Longest a feed streams, in ms; then the gateway ends it and the client resumes from its last
   * event id (the SDK and `EventSource` do by themselves). Long-lived connections otherwise pin
   * watchers to the gateways that were up when they connected: a bound spreads them again after
   * a scale-out or a restart, and lets a proxy's idle and lifetime limits be planned for.
   * @default 30 minutes
   */
  maxStreamMs?: number
}

/** Options of the watch route plugin. */
export interface WatchRouteOptions extends WatchOptions {
  service: ClusterService
  changes: ChangeFeedService
}

// The package is CommonJS: its module object is the plugin (wrapped by fastify-plugin, so its
// route hook applies in this plugin's context), which the types call the namespace.
const fastifySse = sseModule as unknown as FastifyPluginAsync<SSEPluginOptions>

const errors = { '4xx': ErrorReplySchema, '5xx': ErrorReplySchema }

/** The watch route. */
export const watchRoute: FastifyPluginAsyncTypebox<WatchRouteOptions> = async (app, options) => {
  const { service, changes } = options
  const maxWatchers = options.maxWatchers ?? 1000
  const maxWatchersPerKey = options.maxWatchersPerKey ?? Math.max(1, Math.floor(maxWatchers / 10))
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const retryAfterS = options.retryAfterS ?? 5
  const maxStreamMs = options.maxStreamMs ?? 30 * 60_000
  const shape = service.shape()
  const HeadersSchema = Type.Object({
    [HEADER_AFTER]: Type.Optional(watchAfterHeader(shape.regionNames.length, shape.partitions)),
    [HEADER_LAST_EVENT_ID]: Type.Optional(LAST_EVENT_ID_HEADER),
  })
  /** Feeds streaming or being opened, each with how to end it. */
  const active = new Set<{ shutdown(): void }>()
  /** Feeds streaming or being opened per API key (`ip:<address>` without one). */
  const perKey = new Map<string, number>()
  const release = (key: string): void => {
    const left = (perKey.get(key) ?? 1) - 1
    if (left > 0) perKey.set(key, left)
    else perKey.delete(key)
  }
  let closing = false

  // Heartbeats are the feed's own events (with a cursor), not the plugin's comments.
  await app.register(fastifySse, { heartbeatInterval: 0 })

  // Feeds would hold the server open: end each cleanly (an error event, SHUTTING_DOWN) first.
  app.addHook('preClose', async () => {
    closing = true
    for (const watcher of active) watcher.shutdown()
  })

  app.get(
    '/v1/watch',
    {
      config: { operation: 'watch' },
      sse: { kind: 'manual', heartbeat: false, serializer: (data: unknown) => String(data) },
      schema: {
        summary: 'Watch changes (server-sent events)',
        description:
          'A `text/event-stream` of `change` events (data: `{ key, p, dc, idx, ts, deleted, value?, siblings?, context?, set? }`) ' +
          'and `heartbeat` events (data: `{ cursor }`, one at once, then every `heartbeatMs`), each with the cursor after it as its `id`. ' +
          'Resume with `since` or `Last-Event-ID`: every change after the cursor arrives exactly once. A failure after the start is an `error` event with an error body, then the end of the stream. ' +
          `At most ${maxWatchers} feeds per gateway, ${maxWatchersPerKey} per API key (429 TOO_MANY_WATCHERS).`,
        operationId: 'watch',
        tags: ['kv'],
        querystring: withTimeoutMaximum(WatchQuerySchema, shape.limits.maxTimeoutMs),
        headers: HeadersSchema,
        response: {
          // Server-sent events: `change`, `heartbeat` and `error` events, each with its cursor as `id`.
          200: {
            description: 'a stream of server-sent events (change, heartbeat, error)',
            content: {
              'text/event-stream': {
                schema: Type.Object({
                  event: Type.Union([
                    Type.Literal('change'),
                    Type.Literal('heartbeat'),
                    Type.Literal('error'),
                  ]),
                  id: Type.Optional(Type.String({ description: 'the cursor after this event' })),
                  data: Type.String({ description: 'the event as JSON' }),
                }),
              },
            },
          },
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const watch = parseWatch(request.query, request.headers, shape, {
        heartbeatMs,
      })
      for (const key of watch.scope) checkDataScope(request, key, 'read')
      if (closing)
        throw new CausewayError('SHUTTING_DOWN', 'the gateway is shutting down; retry on another')
      if (active.size >= maxWatchers) {
        reply.header('retry-after', String(retryAfterS))
        throw new CausewayError(
          'TOO_MANY_WATCHERS',
          `this gateway already streams ${maxWatchers} change feeds; retry in ${retryAfterS} s or on another gateway`,
          { limit: maxWatchers, retryAfterS, scope: 'gateway' },
        )
      }
      const key = principalOf(request)?.id ?? `ip:${request.ip}`
      const held = perKey.get(key) ?? 0
      if (held >= maxWatchersPerKey) {
        reply.header('retry-after', String(retryAfterS))
        throw new CausewayError(
          'TOO_MANY_WATCHERS',
          `this ${key.startsWith('ip:') ? 'address' : 'API key'} already holds ${maxWatchersPerKey} change feeds on this gateway, its share; close one or retry in ${retryAfterS} s`,
          { limit: maxWatchersPerKey, retryAfterS, scope: 'key' },
        )
      }
      let feed: ChangeFeed | undefined
      let shutDown = false
      const watcher = {
        shutdown: () => {
          shutDown = true
          feed?.close()
        },
      }
      // Counted while it opens, so a burst cannot overshoot the limits.
      active.add(watcher)
      perKey.set(key, held + 1)
      try {
        feed = await changes.open(watch.request)
      } catch (error) {
        active.delete(watcher)
        release(key)
        throw error
      }
      const sse = reply.sse
      sse.keepAlive()
      // A write waiting for a slow client to drain would wait for ever once it is gone: the
      // close ends the wait (and the feed).
      const gone = new Promise<void>((resolve) =>
        sse.onClose(() => {
          feed.close()
          resolve()
        }),
      )
      const expiry = setTimeout(() => feed.close(), maxStreamMs)
      try {
        for await (const event of feed.events()) {
          if (!sse.isConnected) break
          await Promise.race([
            sse.send({ event: event.event, id: event.id, data: event.data }),
            gone,
          ])
        }
        if (shutDown && sse.isConnected) {
          const body = new CausewayError(
            'SHUTTING_DOWN',
            'the gateway is shutting down; resume from the last event id on another',
          ).toBody()
          await sse.send({ event: 'error', data: JSON.stringify(body) })
        }
      } catch (error) {
        const known =
          toCausewayError(error, request.url) ??
          new CausewayError('INTERNAL', 'the change feed failed; resume from the last event id')
        if (known.code === 'INTERNAL') request.log.error({ err: error }, 'change feed failed')
        if (sse.isConnected)
          await sse.send({ event: 'error', data: JSON.stringify(known.toBody()) }).catch(() => {})
      } finally {
        clearTimeout(expiry)
        feed.close()
        active.delete(watcher)
        release(key)
        sse.close()
      }
    },
  )
}
