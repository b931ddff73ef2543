/**
 * Who may call what. Three kinds of route:
 *
 * - `open`: `/healthz`, for load balancers and orchestrators, and the status page's HTML, script
 *   and style (`GET /`; they hold no data: the page's script calls `/v1/status` with a key).
 * - `internal`: `/v1/internal/...`, the cross-region shipping endpoint. Only the cluster secret
 *   is accepted (a client API key is `FORBIDDEN`, 403; nothing or anything else is
 *   `UNAUTHORIZED`, 401).
 * - `client`: everything else. When API keys are configured, a request needs one of them
 *   (`UNAUTHORIZED` without one, `FORBIDDEN` with the cluster secret, which is not a client
 *   credential); without API keys these routes are open (a dev cluster on loopback).
 *
 * Credentials come as `authorization: Bearer <token>`. Tokens are compared in constant time: each
 * is hashed with SHA-256 (so lengths no longer matter) and every configured secret is compared,
 * with `timingSafeEqual`, before the outcome is used.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { CausewayError } from '@causeway/core'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** Credentials a gateway accepts. */
export interface GatewayAuth {
  /**
   * Bearer tokens of clients. Empty: client routes are open.
   * @default []
   */
  apiKeys?: readonly string[]
  /**
   * The bearer token gateways of other regions use on the internal routes. Without one the
   * internal routes refuse every request.
   * @default undefined
   */
  clusterSecret?: string
}

/** What a route needs. */
export type RouteAccess = 'open' | 'client' | 'internal'

/** The prefix of the internal (gateway-to-gateway) routes. */
export const INTERNAL_PREFIX = '/v1/internal/'

/** The routes anyone may call. */
const OPEN_ROUTES: ReadonlySet<string> = new Set([
  '/healthz',
  '/',
  '/status-page.js',
  '/status-page.css',
])

/** The access a route needs, from its path pattern (never from the raw URL). */
export function accessOf(routePattern: string | undefined): RouteAccess {
  if (routePattern !== undefined && OPEN_ROUTES.has(routePattern)) return 'open'
  if (routePattern?.startsWith(INTERNAL_PREFIX)) return 'internal'
  return 'client'
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest()
}

// True when `token` equals one of `secrets`, in time independent of which (or whether) it does.
function matchesAny(token: Buffer, secrets: readonly Buffer[]): boolean {
  let found = false
  for (const secret of secrets) found = timingSafeEqual(token, secret) || found
  return found
}

/** The bearer token of a request, `undefined` when there is none, `null` when malformed. */
function bearerOf(request: FastifyRequest): string | undefined | null {
  const header = request.headers.authorization
  if (header === undefined) return undefined
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header)
  return match ? match[1]! : null
}

/** An `onRequest` hook enforcing {@link GatewayAuth}. */
export function authenticate(auth: GatewayAuth) {
  const apiKeys = (auth.apiKeys ?? []).map(digest)
  const secret = auth.clusterSecret === undefined ? [] : [digest(auth.clusterSecret)]
  const challenge = 'Bearer realm="causeway"'

  const unauthorized = (message: string) =>
    new CausewayError('UNAUTHORIZED', message, { scheme: 'Bearer' })

  return async function checkCredentials(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<void> {
    const access = accessOf(request.routeOptions.url)
    if (access === 'open') return
    // A CORS preflight carries no credentials by design, and reads or writes nothing.
    if (request.method === 'OPTIONS' && access === 'client') return
    if (access === 'client' && apiKeys.length === 0) return
    const token = bearerOf(request)
    if (token === undefined || token === null) {
      reply.header('www-authenticate', challenge)
      throw unauthorized(
        token === null
          ? 'the authorization header must be "Bearer <token>"'
          : access === 'internal'
            ? 'this endpoint needs the cluster secret as a bearer token'
            : 'this gateway needs an API key: authorization: Bearer <key>',
      )
    }
    const presented = digest(token)
    const isKey = matchesAny(presented, apiKeys)
    const isSecret = matchesAny(presented, secret)
    if (access === 'internal') {
      if (isSecret) return
      if (isKey)
        throw new CausewayError('FORBIDDEN', 'an API key cannot call the internal endpoints')
    } else {
      if (isKey) return
      if (isSecret)
        throw new CausewayError(
          'FORBIDDEN',
          'the cluster secret is for gateways of other regions, not for client requests',
        )
    }
    reply.header('www-authenticate', `${challenge}, error="invalid_token"`)
    throw unauthorized(access === 'internal' ? 'not the cluster secret' : 'unknown API key')
  }
}
