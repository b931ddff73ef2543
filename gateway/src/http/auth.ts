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
 * An API key may be scoped ({@link ApiKeySpec}): to some key namespaces (the text before a key's
 * or a set name's first `:`) and to reads or writes. A call outside its key's scope is
 * `OUT_OF_SCOPE` (403). The routes that touch no key (topology, status, metrics, the OpenAPI
 * document) take any valid key: the SDK needs the topology to connect.
 *
 * Credentials come as `authorization: Bearer <token>`. Tokens are compared in constant time: each
 * is hashed with SHA-256 (so lengths no longer matter) and every configured secret is compared,
 * with `timingSafeEqual`, before the outcome is used.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { CausewayError, namespaceOf } from '@causeway/core'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** What a scoped API key may do: read, write, or both. */
export type KeyAccess = 'read' | 'write' | 'read-write'

/** Every {@link KeyAccess}. */
export const KEY_ACCESSES: readonly KeyAccess[] = ['read', 'write', 'read-write']

/** An API key and its scope. */
export interface ApiKeySpec {
  /** The bearer token. */
  key: string
  /**
   * A name for logs and the rate limiter's counters (never the token itself).
   * @default the first 16 hex digits of the token's SHA-256
   */
  name?: string
  /**
   * The key namespaces this key may read or write (`cart` allows `cart:1` and the set `cart:x`);
   * keys and sets without a namespace are outside every one.
   * @default every key, namespaced or not
   */
  namespaces?: readonly string[]
  /**
   * Reads (`GET`), writes (`PUT`, `DELETE`, set `add`/`remove`), or both.
   * @default 'read-write'
   */
  access?: KeyAccess
  /**
   * Requests this key may make per rate-limit window, instead of the gateway's limit.
   * @default the gateway's `rateLimit.max`
   */
  rateLimit?: number
}

/** Who made a request, once authenticated: what the rate limiter counts by. */
export interface Principal {
  /** `key:<name>` for an API key; `ip:<address>` when the route needs none. */
  id: string
  /** The key's own rate limit, when it has one. */
  rateLimit?: number
}

/** Credentials a gateway accepts. */
export interface GatewayAuth {
  /**
   * API keys of clients: a bearer token, or a token with a scope. Empty: client routes are open.
   * @default []
   */
  apiKeys?: readonly (string | ApiKeySpec)[]
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

// The index of the secret `token` equals, or -1, in time independent of which (or whether).
function indexOf(token: Buffer, secrets: readonly Buffer[]): number {
  let found = -1
  for (let i = 0; i < secrets.length; i++) {
    if (timingSafeEqual(token, secrets[i]!) && found < 0) found = i
  }
  return found
}

const kPrincipal = Symbol('causeway.principal')
const kScope = Symbol('causeway.scope')

/** Adds the request decoration {@link authenticate} fills in; call once on the root instance. */
export function decorateForAuth(app: FastifyInstance): void {
  app.decorateRequest(kPrincipal, null)
  app.decorateRequest(kScope, null)
}

/** The principal {@link authenticate} found for `request`, or `undefined` before it ran. */
export function principalOf(request: FastifyRequest): Principal | undefined {
  return (request as unknown as Record<symbol, Principal | null>)[kPrincipal] ?? undefined
}

function setPrincipal(request: FastifyRequest, principal: Principal): void {
  ;(request as unknown as Record<symbol, Principal>)[kPrincipal] = principal
}

/** A configured API key, resolved once. */
interface KnownKey {
  principal: Principal
  namespaces: ReadonlySet<string> | undefined
  access: KeyAccess
}

function knownKey(spec: string | ApiKeySpec, token: Buffer): KnownKey {
  const s = typeof spec === 'string' ? { key: spec } : spec
  const principal: Principal = { id: `key:${s.name ?? token.toString('hex').slice(0, 16)}` }
  if (s.rateLimit !== undefined) principal.rateLimit = s.rateLimit
  return {
    principal,
    namespaces: s.namespaces === undefined ? undefined : new Set(s.namespaces),
    access: s.access ?? 'read-write',
  }
}

/** The key (or set name) a route's request names, from its route pattern; undefined for others. */
function dataKeyOf(request: FastifyRequest): string | undefined {
  const params = request.params as { key?: unknown; name?: unknown } | undefined
  const url = request.routeOptions.url
  if (url === '/v1/kv/:key') return typeof params?.key === 'string' ? params.key : ''
  if (url?.startsWith('/v1/sets/:name/')) return typeof params?.name === 'string' ? params.name : ''
  return undefined
}

/** Throws `OUT_OF_SCOPE` when `key` may not make `request` (a route naming one key in its path). */
function checkScope(request: FastifyRequest, key: KnownKey): void {
  if (key.namespaces === undefined && key.access === 'read-write') return
  const dataKey = dataKeyOf(request)
  if (dataKey === undefined) return
  const needs: 'read' | 'write' =
    request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write'
  checkKeyAccess(key, dataKey, needs)
}

/** Throws `OUT_OF_SCOPE` when `key` may not `needs` the data key (or key prefix) `dataKey`. */
function checkKeyAccess(key: KnownKey, dataKey: string, needs: 'read' | 'write'): void {
  if (key.namespaces === undefined && key.access === 'read-write') return
  if (key.access !== 'read-write' && key.access !== needs)
    throw new CausewayError('OUT_OF_SCOPE', `this API key may only ${key.access}`, {
      needs,
      access: key.access,
    })
  if (key.namespaces === undefined) return
  const namespace = namespaceOf(dataKey)
  if (namespace === undefined || !key.namespaces.has(namespace))
    throw new CausewayError(
      'OUT_OF_SCOPE',
      namespace === undefined
        ? 'this API key is scoped to namespaces; the key has none (no ":")'
        : `this API key may not use namespace ${JSON.stringify(namespace.slice(0, 128))}`,
      { namespace: namespace ?? null },
    )
}

/**
 * Throws `OUT_OF_SCOPE` when the API key that authenticated `request` may not `needs` `dataKey`:
 * for routes that name their keys in the body or the query (`POST /v1/ops`, `GET /v1/watch`).
 * A key prefix counts as the namespace before its first `:`; one without `:` spans namespaces,
 * so only an unscoped key may use it. Requests without a key (open gateways) may use any.
 */
export function checkRequestScope(
  request: FastifyRequest,
  dataKey: string,
  needs: 'read' | 'write',
): void {
  const key = (request as unknown as Record<symbol, KnownKey | null>)[kScope]
  if (key) checkKeyAccess(key, dataKey, needs)
}

/**
 * Throws `OUT_OF_SCOPE` when the API key that authenticated `request` may not write at all (a
 * read-only key): for requests that write without naming a key, such as a commit of reads only,
 * which still takes a tid in the transaction log.
 */
export function checkWriteAccess(request: FastifyRequest): void {
  const key = (request as unknown as Record<symbol, KnownKey | null>)[kScope]
  if (key && key.access === 'read')
    throw new CausewayError('OUT_OF_SCOPE', 'this API key may only read', {
      needs: 'write',
      access: key.access,
    })
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
  const specs = auth.apiKeys ?? []
  const apiKeys = specs.map((k) => digest(typeof k === 'string' ? k : k.key))
  const known = specs.map((k, i) => knownKey(k, apiKeys[i]!))
  const secret = auth.clusterSecret === undefined ? [] : [digest(auth.clusterSecret)]
  const challenge = 'Bearer realm="causeway"'

  const unauthorized = (message: string) =>
    new CausewayError('UNAUTHORIZED', message, { scheme: 'Bearer' })

  return async function checkCredentials(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<void> {
    const access = accessOf(request.routeOptions.url)
    const anonymous = (): void => setPrincipal(request, { id: `ip:${request.ip}` })
    if (access === 'open') return anonymous()
    // A CORS preflight carries no credentials by design, and reads or writes nothing.
    if (request.method === 'OPTIONS' && access === 'client') return anonymous()
    if (access === 'client' && apiKeys.length === 0) return anonymous()
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
    const keyIndex = indexOf(presented, apiKeys)
    const isKey = keyIndex >= 0
    const isSecret = indexOf(presented, secret) >= 0
    if (access === 'internal') {
      if (isSecret) return
      if (isKey)
        throw new CausewayError('FORBIDDEN', 'an API key cannot call the internal endpoints')
    } else {
      if (isKey) {
        const key = known[keyIndex]!
        setPrincipal(request, key.principal)
        ;(request as unknown as Record<symbol, KnownKey>)[kScope] = key
        checkScope(request, key)
        return
      }
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
