/**
 * A `redis-sentinel` child process for `causeway dev --backend redis --sentinel`: loopback only,
 * its own directory and config file (Sentinel rewrites it with what it learns), watching a
 * region's partition leaders. Resolves once it accepts connections.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { canSetParentDeathSignal } from './redis-process.js'

/** A master a Sentinel watches. */
export interface WatchedMaster {
  name: string
  host: string
  port: number
}

/** Options of {@link startSentinelProcess}. */
export interface SentinelProcessOptions {
  port: number
  /** Its directory: the config file it rewrites lives here. */
  dir: string
  masters: readonly WatchedMaster[]
  /** Sentinels that must agree a master is down before a failover. */
  quorum: number
  /**
   * How long a master may not answer before this Sentinel thinks it down, in ms.
   * @default 2000
   */
  downAfterMs?: number
  /**
   * Sentinel's failover timeout, in ms (also twice it between two failovers of one master).
   * @default 10000
   */
  failoverTimeoutMs?: number
  /**
   * The `redis-sentinel` executable.
   * @default 'redis-sentinel'
   */
  command?: string
  /** @default 10000 */
  startTimeoutMs?: number
  /**
   * Have the kernel stop it when this process dies (`setpriv --pdeathsig`, Linux).
   * @default false
   */
  exitWithParent?: boolean
}

/** A running Sentinel. */
export interface SentinelProcess {
  readonly url: string
  readonly port: number
  readonly pid: number | undefined
  stop(timeoutMs?: number): Promise<void>
}

/** The config file of a Sentinel watching `masters`. */
export function sentinelConfig(options: SentinelProcessOptions): string {
  const lines = [
    `port ${options.port}`,
    'bind 127.0.0.1',
    `dir ${options.dir}`,
    'daemonize no',
    'logfile ""',
    // Announce and compare addresses as numbers: no name lookups.
    'sentinel resolve-hostnames no',
  ]
  for (const m of options.masters) {
    lines.push(
      `sentinel monitor ${m.name} ${m.host} ${m.port} ${options.quorum}`,
      `sentinel down-after-milliseconds ${m.name} ${options.downAfterMs ?? 2000}`,
      `sentinel failover-timeout ${m.name} ${options.failoverTimeoutMs ?? 10_000}`,
      `sentinel parallel-syncs ${m.name} 1`,
    )
  }
  return lines.join('\n') + '\n'
}

/** Starts a Sentinel; see {@link SentinelProcessOptions}. */
export async function startSentinelProcess(
  options: SentinelProcessOptions,
): Promise<SentinelProcess> {
  await mkdir(options.dir, { recursive: true })
  const file = join(options.dir, 'sentinel.conf')
  // Written afresh on every start: the servers' ports are new each time.
  await writeFile(file, sentinelConfig(options))
  const command = options.command ?? 'redis-sentinel'
  const [bin, argv] =
    options.exitWithParent && canSetParentDeathSignal()
      ? ['setpriv', ['--pdeathsig', 'TERM', '--', command, file]]
      : [command, [file]]
  const child: ChildProcess = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
  const timeoutMs = options.startTimeoutMs ?? 10_000
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(
          `redis-sentinel on port ${options.port} not ready in ${timeoutMs} ms:\n${output}`,
        ),
      )
    }, timeoutMs)
    const done = (error?: Error) => {
      clearTimeout(timer)
      child.stdout?.removeAllListeners('data')
      child.stderr?.removeAllListeners('data')
      child.removeListener('exit', onExit)
      if (error) reject(error)
      else resolve()
    }
    const onExit = (code: number | null) =>
      done(new Error(`redis-sentinel on port ${options.port} exited with ${code}:\n${output}`))
    child.once('error', (error: NodeJS.ErrnoException) =>
      done(
        error.code === 'ENOENT'
          ? new Error(
              'redis-sentinel is not installed (Debian/Ubuntu: apt-get install redis-sentinel)',
            )
          : error,
      ),
    )
    child.once('exit', onExit)
    const onOutput = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-16_384)
      // It logs its id once it is set up, after it listens.
      if (/Sentinel ID is|\+monitor master/.test(output)) done()
    }
    child.stdout?.on('data', onOutput)
    child.stderr?.on('data', onOutput)
  })
  child.stdout?.resume()
  child.stderr?.resume()
  child.on('error', () => {})
  return {
    url: `redis://127.0.0.1:${options.port}`,
    port: options.port,
    pid: child.pid,
    async stop(stopTimeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs)
      await exited
      clearTimeout(timer)
    },
  }
}
