/**
 * How long a client may take to send a request, how long a connection may sit idle, and how many
 * connections one gateway holds. Fastify's own defaults are "for ever" for the first two and no
 * cap for the last: a client declaring `content-length: 100` and sending 9 bytes kept its
 * connection, and the memory behind it, indefinitely. Every limit here ends such a request with
 * `REQUEST_TIMEOUT` (408, in the gateway's error format) and closes its connection, so what it
 * held is freed.
 *
 * - headers: Node's `headersTimeout`, from the first byte of a request to the end of its headers
 *   (slowloris);
 * - body: the longest pause while a body arrives (a body that stops arriving);
 * - request: Node's `requestTimeout`, from the first byte to the last one of the request, however
 *   steadily it trickles;
 * - connection: Node's socket timeout, no byte in either direction; longer than any wait a
 *   request may ask for (`limits.maxTimeoutMs`), since a read waiting for a replica sends nothing;
 * - connections: `server.maxConnections`; a connection over the cap is closed as it is accepted;
 *   so is one over its client address's share (`maxConnectionsPerAddress`), so that one address
 *   holding idle sockets cannot lock every other client out;
 * - body bytes in flight: see `body-budget.ts`.
 */
import { Socket as NetSocket, type Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { CausewayError } from '@causeway/core'
import { writeErrorAndClose } from './client-errors.js'

/** Time and connection limits of one gateway. Every field has a safe default. */
export interface HttpLimits {
  /**
   * Most ms from a request's first byte to the end of its headers.
   * @default 10000
   */
  headersTimeoutMs?: number
  /**
   * Most ms a request body may pause (no byte arriving) before it is dropped.
   * @default 10000
   */
  bodyTimeoutMs?: number
  /**
   * Most ms from a request's first byte to its last (headers and body).
   * @default 30000
   */
  requestTimeoutMs?: number
  /**
   * Most ms a connection may stay silent both ways, a request in progress or not; then it is
   * closed. Must exceed the longest wait a call may ask for.
   * @default the larger of 120000 and the cluster's `maxTimeoutMs` + 10000
   */
  connectionTimeoutMs?: number
  /**
   * Most connections the gateway holds at once; one more is closed as soon as it is accepted.
   * @default 10000
   */
  maxConnections?: number
  /**
   * Most connections one client address holds at once; one more is closed as soon as it is
   * accepted. Behind a proxy or load balancer every connection comes from its address: raise this
   * to `maxConnections` there (the proxy bounds its clients itself).
   * @default a tenth of `maxConnections` (1000), at least 1
   */
  maxConnectionsPerAddress?: number
  /**
   * Most request-body bytes the gateway holds in flight at once, all clients together (bodies
   * received or declared and not yet answered). A request that would exceed it is refused with
   * `BODY_BUDGET_EXCEEDED` (429) before its body is read, unless nothing else is in flight.
   * @default 256 MiB
   */
  maxBodyBytesInFlight?: number
  /**
   * Most request-body bytes one API key (or, without one, one client address) has in flight at
   * once: its share of `maxBodyBytesInFlight`. Over it: `BODY_BUDGET_EXCEEDED` (429), unless the
   * key has nothing else in flight (one body of any size the route takes always fits).
   * @default 64 MiB
   */
  maxBodyBytesInFlightPerKey?: number
}

/** {@link HttpLimits} with every field filled in. */
export type ResolvedHttpLimits = Required<HttpLimits>

/** The defaults of {@link HttpLimits} (connection timeout: see {@link resolveHttpLimits}). */
export const DEFAULT_HTTP_LIMITS = Object.freeze({
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxConnections: 10_000,
  maxBodyBytesInFlight: 256 * 1024 * 1024,
  maxBodyBytesInFlightPerKey: 64 * 1024 * 1024,
})

/** How often Node checks the header and request deadlines (its own default is every 30 s). */
const CHECK_INTERVAL_MS = 1000

/**
 * Fills in the defaults and checks the limits.
 * @throws `RangeError` for a limit that is not a positive whole number, or a header timeout
 *   longer than the request timeout (Node refuses that).
 */
export function resolveHttpLimits(
  limits: HttpLimits | undefined,
  maxTimeoutMs: number,
): ResolvedHttpLimits {
  const resolved: ResolvedHttpLimits = {
    ...DEFAULT_HTTP_LIMITS,
    connectionTimeoutMs: Math.max(120_000, maxTimeoutMs + 10_000),
    maxConnectionsPerAddress: 0, // filled in below, from maxConnections
  }
  for (const [name, value] of Object.entries(limits ?? {})) {
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || (value as number) < 1)
      throw new RangeError(`http limit ${name} must be a positive whole number, not ${value}`)
    ;(resolved as Record<string, number>)[name] = value as number
  }
  if (limits?.maxConnectionsPerAddress === undefined)
    resolved.maxConnectionsPerAddress = Math.max(1, Math.floor(resolved.maxConnections / 10))
  if (resolved.headersTimeoutMs > resolved.requestTimeoutMs)
    throw new RangeError(
      `headersTimeoutMs (${resolved.headersTimeoutMs}) must not exceed requestTimeoutMs (${resolved.requestTimeoutMs})`,
    )
  return resolved
}

/** The Fastify server options that enforce `limits` (the body timeout is a hook: {@link dropStalledBodies}). */
export function serverOptionsFor(limits: ResolvedHttpLimits) {
  return {
    connectionTimeout: limits.connectionTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(
        CHECK_INTERVAL_MS,
        limits.headersTimeoutMs,
        limits.requestTimeoutMs,
      ),
    },
  }
}

function hasBody(request: FastifyRequest): boolean {
  const headers = request.headers
  if (headers['transfer-encoding'] !== undefined) return true
  const length = headers['content-length']
  return length !== undefined && length !== '0'
}

/**
 * An `onRequest` hook dropping a request whose body stops arriving for `bodyTimeoutMs`: it is
 * answered `REQUEST_TIMEOUT` and its connection closed. Progress is the connection's byte count,
 * sampled once per timeout (listening to the body would start it flowing before its parser).
 */
export function dropStalledBodies(limits: ResolvedHttpLimits) {
  const timeoutMs = limits.bodyTimeoutMs
  return async function watchBody(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = request.raw
    if (raw.complete || !hasBody(request)) return
    const socket = raw.socket
    // An injected request (`app.inject`, tests) has no connection to drop; its stand-in socket
    // cannot be ended, and its timer would go off after the test that made it.
    if (!(socket instanceof NetSocket)) return
    let seen = socket.bytesRead
    const check = (): void => {
      if (raw.complete || socket.destroyed) return
      const now = socket.bytesRead
      if (now !== seen) {
        seen = now
        timer.refresh()
        return
      }
      request.log.info('request body stalled; dropping the connection')
      const error = new CausewayError(
        'REQUEST_TIMEOUT',
        `no byte of the request body arrived for ${timeoutMs} ms; the connection is closed`,
        { bodyTimeoutMs: timeoutMs },
      )
      if (raw.listenerCount('error') > 0 && !reply.sent) {
        // The body's parser listens: it fails with this error and the error handler answers it,
        // once, as any error; the connection goes with the reply.
        reply.header('connection', 'close')
        reply.raw.once('finish', () => socket.destroy())
        raw.emit('error', error)
      } else {
        // No parser yet (a hook still runs): answer on the socket; Fastify must not answer too.
        reply.hijack()
        writeErrorAndClose(socket, error)
      }
      // A peer that never reads the reply does not keep the socket either.
      setTimeout(() => socket.destroy(), 1000).unref()
    }
    const timer = setTimeout(check, timeoutMs)
    timer.unref()
    raw.once('close', () => clearTimeout(timer))
  }
}

/**
 * Applies the connection cap, and each client address's share of it, to the gateway's server.
 * Node closes a connection over `maxConnections` before announcing it; one over its address's
 * share is closed here, as it is announced, before a byte of it is read.
 */
export function capConnections(app: FastifyInstance, limits: ResolvedHttpLimits): void {
  app.server.maxConnections = limits.maxConnections
  const share = limits.maxConnectionsPerAddress
  if (share >= limits.maxConnections) return
  /** Open connections per client address; an address leaves the map with its last connection. */
  const open = new Map<string, number>()
  app.server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? ''
    const held = open.get(address) ?? 0
    if (held >= share) {
      socket.destroy()
      return
    }
    open.set(address, held + 1)
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1
      if (left > 0) open.set(address, left)
      else open.delete(address)
    })
  })
}
