/** What the `causeway` commands share to read their command lines. */
import { isNamespaceName } from '@causeway/core'
import { checkCorsOrigin } from './http/cors.js'

/** A mistake on the command line: the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {}

/** Pino's levels, plus `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** `--name`'s whole-number value in `min..max`, or `fallback` when it was not given. */
export function integer(
  name: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (text === undefined) return fallback
  if (!/^[0-9]+$/.test(text))
    throw new UsageError(`--${name} must be a whole number, not ${JSON.stringify(text)}`)
  const value = Number(text)
  if (value < min || value > max)
    throw new UsageError(`--${name} must be between ${min} and ${max}, not ${value}`)
  return value
}

/**
 * `--clock-offset MS` (repeatable, one per region in region order; negative as
 * `--clock-offset=-MS`): ms added to each region's wall clock, for dev and tests only.
 */
export function clockOffsets(
  texts: readonly string[] | undefined,
  regions: number,
): number[] | undefined {
  if (texts === undefined || texts.length === 0) return undefined
  if (texts.length !== regions)
    throw new UsageError(
      `--clock-offset: give one per region, in region order (${regions}), not ${texts.length}`,
    )
  return texts.map((text) => {
    if (!/^-?[0-9]{1,9}$/.test(text) || Math.abs(Number(text)) > DAY_MS)
      throw new UsageError(
        `--clock-offset must be whole ms between -${DAY_MS} and ${DAY_MS} (a negative one as --clock-offset=-MS), not ${JSON.stringify(text)}`,
      )
    return Number(text)
  })
}

const DAY_MS = 86_400_000

/**
 * `--shipping fifo|causal` and the causal knobs `--theta MS`, `--delta MS`, `--stabilisers N`
 * (which need `--shipping causal`); only what was given.
 */
export function shippingOf(values: {
  shipping?: string
  theta?: string
  delta?: string
  stabilisers?: string
}): {
  shipping?: 'fifo' | 'causal'
  causal?: { thetaMs?: number; deltaMs?: number; replicas?: number }
} {
  const out: ReturnType<typeof shippingOf> = {}
  if (values.shipping !== undefined) {
    if (values.shipping !== 'fifo' && values.shipping !== 'causal')
      throw new UsageError(
        `--shipping must be fifo or causal, not ${JSON.stringify(values.shipping)}`,
      )
    out.shipping = values.shipping
  }
  const causal: { thetaMs?: number; deltaMs?: number; replicas?: number } = {}
  if (values.theta !== undefined) causal.thetaMs = integer('theta', values.theta, 0, 1, 60_000)
  if (values.delta !== undefined) causal.deltaMs = integer('delta', values.delta, 0, 1, 60_000)
  if (values.stabilisers !== undefined)
    causal.replicas = integer('stabilisers', values.stabilisers, 0, 1, 16)
  if (Object.keys(causal).length > 0) {
    if (out.shipping !== 'causal')
      throw new UsageError('--theta, --delta and --stabilisers need --shipping causal')
    out.causal = causal
  }
  return out
}

/** `--partition-wan-delay MS` (repeatable, in partition order): each partition's data delay. */
export function partitionDelays(
  texts: readonly string[] | undefined,
  partitions: number,
): number[] | undefined {
  if (texts === undefined || texts.length === 0) return undefined
  if (texts.length > partitions)
    throw new UsageError(
      `--partition-wan-delay: at most one per partition (${partitions}), not ${texts.length}`,
    )
  return texts.map((text) => integer('partition-wan-delay', text, 0, 0, 3_600_000))
}

/** The namespaces `--siblings NS` (repeatable) marks as siblings namespaces. */
export function siblingNamespaces(
  names: readonly string[] | undefined,
): Record<string, { conflicts: 'siblings' }> | undefined {
  if (names === undefined || names.length === 0) return undefined
  const out: Record<string, { conflicts: 'siblings' }> = Object.create(null)
  for (const name of names) {
    if (!isNamespaceName(name))
      throw new UsageError(
        `--siblings needs a namespace name (1 to 128 characters without ':'), not ${JSON.stringify(name)}`,
      )
    out[name] = { conflicts: 'siblings' }
  }
  return out
}

/**
 * The namespaces of `--siblings NS` and `--transactional NS` (each repeatable), or undefined when
 * neither is given. A namespace named by both is a usage error.
 */
export function namespacesOf(
  siblings: readonly string[] | undefined,
  transactional: readonly string[] | undefined,
):
  Record<string, { conflicts: 'siblings' } | { conflicts: 'lww'; transactions: true }> | undefined {
  const out: Record<string, { conflicts: 'siblings' } | { conflicts: 'lww'; transactions: true }> =
    Object.create(null)
  Object.assign(out, siblingNamespaces(siblings) ?? {})
  for (const name of transactional ?? []) {
    if (!isNamespaceName(name))
      throw new UsageError(
        `--transactional needs a namespace name (1 to 128 characters without ':'), not ${JSON.stringify(name)}`,
      )
    if (Object.hasOwn(out, name))
      throw new UsageError(
        `namespace ${JSON.stringify(name)} cannot be both siblings and transactional`,
      )
    out[name] = { conflicts: 'lww', transactions: true }
  }
  return Object.keys(out).length === 0 ? undefined : out
}

/**
 * The origins `--cors-origin ORIGIN` (repeatable; `*` for any) allows, checked; `fallback` when
 * none is given.
 */
export function corsOrigins(
  texts: readonly string[] | undefined,
  fallback: readonly string[],
): string[] {
  if (texts === undefined || texts.length === 0) return [...fallback]
  return texts.map((text) => {
    try {
      return checkCorsOrigin(text)
    } catch (error) {
      throw new UsageError(`--cors-origin: ${(error as Error).message}`)
    }
  })
}

/** `--cors-origin` as the commands print it when they start. */
export function describeOrigins(origins: readonly string[]): string {
  if (origins.length === 0) return 'no cross-origin pages'
  return origins.includes('*') ? 'pages of any origin' : `pages of ${origins.join(' ')}`
}

/**
 * The URLs `--public-url URL` (one per region, in region order) publishes in the topology, checked
 * and without a trailing slash; undefined when none is given.
 */
export function publicUrls(
  texts: readonly string[] | undefined,
  regions: number,
): string[] | undefined {
  if (texts === undefined || texts.length === 0) return undefined
  if (texts.length !== regions)
    throw new UsageError(
      `--public-url: give one per region, in region order (${regions}), not ${texts.length}`,
    )
  return texts.map((text) => {
    let url: URL | undefined
    try {
      url = new URL(text)
    } catch {
      url = undefined
    }
    if (
      url === undefined ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      url.search !== '' ||
      url.hash !== '' ||
      url.username !== '' ||
      url.password !== ''
    )
      throw new UsageError(
        `--public-url needs an http:// or https:// base URL without query, fragment or credentials, not ${JSON.stringify(text)}`,
      )
    return text.replace(/\/+$/, '')
  })
}

/** Checks `--log-level`. */
export function logLevel(text: string | undefined): string {
  const level = text ?? 'warn'
  if (!LOG_LEVELS.includes(level))
    throw new UsageError(
      `--log-level must be one of ${LOG_LEVELS.join(', ')}, not ${JSON.stringify(level)}`,
    )
  return level
}

/** Fastify's logger for a level: pino on stderr, so stdout carries only the URLs. */
export function loggerFor(level: string): false | { level: string; stream: NodeJS.WritableStream } {
  return level === 'silent' ? false : { level, stream: process.stderr }
}

/**
 * Runs a server until SIGINT or SIGTERM, then closes it gracefully and exits; a second signal
 * exits at once. `started` is called once it runs (not when a signal came first).
 */
export function runUntilSignal<T extends { close(): Promise<void> }>(
  name: string,
  starting: Promise<T>,
  started: (server: T) => void,
): Promise<void> {
  let stopping = false
  const stop = (why: string): void => {
    if (stopping) {
      process.stderr.write(`${name}: ${why} again, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    process.stderr.write(`${name}: ${why}, shutting down (finishing requests in flight)\n`)
    starting
      .then((server) => server.close())
      .then(
        () => {
          process.stderr.write(`${name}: stopped\n`)
          process.exit(0)
        },
        (error: unknown) => {
          process.stderr.write(`${name}: shutdown failed: ${String(error)}\n`)
          process.exit(1)
        },
      )
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
  return starting.then((server) => {
    if (!stopping) started(server)
  })
}

/** The `parseArgs` options of the HTTP limits every gateway-running command takes. */
export const HTTP_LIMIT_ARGS = {
  'headers-timeout': { type: 'string' },
  'body-timeout': { type: 'string' },
  'request-timeout': { type: 'string' },
  'connection-timeout': { type: 'string' },
  'max-connections': { type: 'string' },
  'max-connections-per-address': { type: 'string' },
  'max-body-bytes': { type: 'string' },
  'max-body-bytes-per-key': { type: 'string' },
} as const

/** Usage lines of {@link HTTP_LIMIT_ARGS}. */
export const HTTP_LIMIT_USAGE = `  --headers-timeout MS   time for a request's headers to arrive          [default: 10000]
  --body-timeout MS      longest pause while a request body arrives      [default: 10000]
  --request-timeout MS   time for a whole request to arrive              [default: 30000]
  --connection-timeout MS  close a connection silent both ways this long
                         [default: the larger of 120000 and maxTimeoutMs + 10000]
  --max-connections N    connections per gateway; more are closed        [default: 10000]
  --max-connections-per-address N  connections one client address holds
                         (behind a proxy: set to --max-connections)  [default: max-connections / 10]
  --max-body-bytes N     request-body bytes in flight per gateway; more: 429 BODY_BUDGET_EXCEEDED
                                                                         [default: 268435456]
  --max-body-bytes-per-key N  request-body bytes in flight per API key (per address without one)
                                                                         [default: 67108864]
`

const HOUR_MS = 3_600_000

/** The HTTP limits given on the command line (only those given). */
export function httpLimitsOf(values: Partial<Record<keyof typeof HTTP_LIMIT_ARGS, string>>): {
  headersTimeoutMs?: number
  bodyTimeoutMs?: number
  requestTimeoutMs?: number
  connectionTimeoutMs?: number
  maxConnections?: number
  maxConnectionsPerAddress?: number
  maxBodyBytesInFlight?: number
  maxBodyBytesInFlightPerKey?: number
} {
  const out: Record<string, number> = {}
  const ms = (flag: keyof typeof HTTP_LIMIT_ARGS, field: string, max: number) => {
    const text = values[flag]
    if (text !== undefined) out[field] = integer(flag, text, 0, 1, max)
  }
  ms('headers-timeout', 'headersTimeoutMs', HOUR_MS)
  ms('body-timeout', 'bodyTimeoutMs', HOUR_MS)
  ms('request-timeout', 'requestTimeoutMs', HOUR_MS)
  ms('connection-timeout', 'connectionTimeoutMs', HOUR_MS)
  ms('max-connections', 'maxConnections', 1_000_000)
  ms('max-connections-per-address', 'maxConnectionsPerAddress', 1_000_000)
  ms('max-body-bytes', 'maxBodyBytesInFlight', 2 ** 40)
  ms('max-body-bytes-per-key', 'maxBodyBytesInFlightPerKey', 2 ** 40)
  return out
}

/** The `parseArgs` options of the rate limit. */
export const RATE_LIMIT_ARGS = {
  'rate-limit': { type: 'string' },
  'rate-limit-window': { type: 'string' },
  'rate-limit-refused': { type: 'string' },
} as const

/** The rate limit given on the command line (only what was given). */
export function rateLimitOf(values: Partial<Record<keyof typeof RATE_LIMIT_ARGS, string>>): {
  max?: number
  windowMs?: number
  maxRefused?: number
} {
  const out: { max?: number; windowMs?: number; maxRefused?: number } = {}
  if (values['rate-limit'] !== undefined)
    out.max = integer('rate-limit', values['rate-limit'], 0, 0, 100_000_000)
  if (values['rate-limit-window'] !== undefined)
    out.windowMs = integer('rate-limit-window', values['rate-limit-window'], 0, 1, HOUR_MS)
  if (values['rate-limit-refused'] !== undefined)
    out.maxRefused = integer('rate-limit-refused', values['rate-limit-refused'], 0, 0, 100_000_000)
  return out
}

/** The cluster limits given on the command line (`--max-value-bytes`, `--max-skew`). */
export function limitsOf(values: { 'max-value-bytes'?: string; 'max-skew'?: string }): {
  maxValueBytes?: number
  maxSkewMs?: number
} {
  const out: { maxValueBytes?: number; maxSkewMs?: number } = {}
  if (values['max-value-bytes'] !== undefined)
    out.maxValueBytes = integer(
      'max-value-bytes',
      values['max-value-bytes'],
      0,
      1,
      512 * 1024 * 1024,
    )
  // A write's HLC dependency may be this far ahead of the region's clock: how far one client can
  // move a partition's clock into the future (bounded; it does not compound).
  if (values['max-skew'] !== undefined)
    out.maxSkewMs = integer('max-skew', values['max-skew'], 0, 1, HOUR_MS)
  return out
}

/**
 * `--api-key KEY` (repeatable): the bearer tokens a dev cluster's client routes then require
 * (`auth.apiKeys`; without any they are open). Each is unscoped; a token is one or more
 * characters a `Bearer` header can carry (RFC 6750's b64token), so it is not mistyped silently.
 */
export function apiKeysOf(texts: readonly string[] | undefined): string[] | undefined {
  if (texts === undefined || texts.length === 0) return undefined
  for (const text of texts)
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(text))
      throw new UsageError(
        `--api-key must be a bearer token (letters, digits, -._~+/ and trailing =), not ${JSON.stringify(text)}`,
      )
  return [...texts]
}
