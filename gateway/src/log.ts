/**
 * The gateway's log lines: pino, as Fastify's request log is, so one process writes one format
 * (JSON lines) that log shippers parse. Components that run in the background (replicas,
 * shippers, follower feeds, the Redis cluster's reconnects) take a {@link Logger} option; without
 * one they write to the process's logger. A command's own output for its user (URLs, usage,
 * "shutting down") is not a log line and stays plain text.
 */
import { type LevelWithSilentOrString, type Logger as PinoLogger, pino } from 'pino'

/** What a component logs with: any pino logger (or one of its children). */
export type Logger = Pick<PinoLogger, 'error' | 'warn' | 'info' | 'debug'>

let shared: PinoLogger | undefined

/**
 * The logger of components given none: pino at `warn` on stderr (stdout carries what a command
 * prints for its user), made once per process.
 */
export function processLogger(): Logger {
  return (shared ??= stderrLogger('warn'))
}

/** A pino logger at `level` on stderr, named `causeway`; `silent` writes nothing. */
export function stderrLogger(level: LevelWithSilentOrString): PinoLogger {
  return pino({ name: 'causeway', level }, pino.destination({ fd: 2, sync: true }))
}
