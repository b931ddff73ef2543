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
