/**
 * A `redis-server` child process for `causeway dev --backend redis`: loopback only, AOF on, its
 * own data directory, optionally a replica of another (`--replicaof`). Resolves once the server
 * accepts connections; rejects with the server's output when it cannot start.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:net'
import { REPLICATION_USER } from '../storage/redis/server-admin.js'

/** Options of {@link startRedisProcess}. */
export interface RedisProcessOptions {
  port: number
  /** Data directory (created if missing); the AOF lives here, so a restart keeps the data. */
  dir: string
  /**
   * Interface to listen on.
   * @default '127.0.0.1'
   */
  host?: string
  /** Make it a replica of this server. */
  replicaOf?: { host: string; port: number }
  /**
   * Replicate as this user with this password (`masteruser`/`masterauth`). By default a follower
   * (`replicaOf`) gets a password no leader has, so it copies nothing until a gateway has checked
   * its leader (not behind, not wiped) and given it the real one (`cluster/redis-failover.ts`);
   * `null` lets it copy from its leader at once (a fresh cluster, which has nothing to lose).
   * @default a random password, for a follower
   */
  masterAuth?: { user: string; password: string } | null
  /**
   * AOF fsync policy: `always` acknowledges a write only once it is on disk; `everysec` may lose
   * the last second of acknowledged writes in a crash, for several times the write throughput.
   * @default 'always'
   */
  appendfsync?: 'always' | 'everysec'
  /**
   * The `redis-server` executable.
   * @default 'redis-server'
   */
  command?: string
  /**
   * How long to wait for the server to be ready, in ms.
   * @default 10000
   */
  startTimeoutMs?: number
  /**
   * Have the kernel stop the server (SIGTERM) when this process dies, however it dies, so no
   * server outlives it. Linux with util-linux's `setpriv --pdeathsig`; ignored elsewhere.
   * @default false
   */
  exitWithParent?: boolean
}

/** A running `redis-server`. */
export interface RedisProcess {
  readonly url: string
  readonly port: number
  readonly pid: number | undefined
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  /** SIGTERM (Redis flushes the AOF and exits); SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>
}

/** A TCP port on `host` that was free a moment ago. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))))
    })
  })
}

/** Starts a `redis-server`; see {@link RedisProcessOptions}. */
export async function startRedisProcess(options: RedisProcessOptions): Promise<RedisProcess> {
  const host = options.host ?? '127.0.0.1'
  const timeoutMs = options.startTimeoutMs ?? 10_000
  await mkdir(options.dir, { recursive: true })
  const args = [
    '--port',
    String(options.port),
    '--bind',
    host,
    '--dir',
    options.dir,
    '--daemonize',
    'no',
    '--appendonly',
    'yes',
    '--appendfsync',
    options.appendfsync ?? 'always',
    '--save',
    '',
    '--logfile',
    '',
    // Replicas sync at once (the default waits 5 s for more replicas to share one transfer).
    '--repl-diskless-sync-delay',
    '0',
    // A stopping leader waits at most 1 s for lagging replicas.
    '--shutdown-timeout',
    '1',
    // A SIGTERM always ends the server. Without `force`, a replica that gets it while writing its
    // first AOF after a full sync refuses ("Writing initial AOF, can't exit") and runs on: a
    // one-shot signal such as the parent-death one then left servers behind for good.
    '--shutdown-on-sigterm',
    'force',
  ]
  if (options.replicaOf)
    args.push('--replicaof', options.replicaOf.host, String(options.replicaOf.port))
  const auth =
    options.masterAuth === undefined && options.replicaOf
      ? { user: REPLICATION_USER, password: randomBytes(18).toString('base64url') }
      : options.masterAuth
  if (auth) args.push('--masteruser', auth.user, '--masterauth', auth.password)
  const command = options.command ?? 'redis-server'
  // setpriv execs the server in its own place (same pid) after setting the parent-death signal.
  const [file, argv] =
    options.exitWithParent && canSetParentDeathSignal()
      ? ['setpriv', ['--pdeathsig', 'TERM', '--', command, ...args]]
      : [command, args]
  const child: ChildProcess = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`redis-server on port ${options.port} not ready in ${timeoutMs} ms:\n${output}`),
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
      done(
        code === 127 && output.includes('failed to execute')
          ? notInstalled()
          : new Error(`redis-server on port ${options.port} exited with ${code}:\n${output}`),
      )
    child.once('error', (error: NodeJS.ErrnoException) =>
      done(error.code === 'ENOENT' ? notInstalled() : error),
    )
    child.once('exit', onExit)
    const onOutput = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-16_384)
      if (output.includes('Ready to accept connections')) done()
    }
    child.stdout?.on('data', onOutput)
    child.stderr?.on('data', onOutput)
  })
  // Keep draining its output so the pipes never fill.
  child.stdout?.resume()
  child.stderr?.resume()
  child.on('error', () => {})
  return {
    url: `redis://${host}:${options.port}`,
    port: options.port,
    pid: child.pid,
    exited,
    async stop(stopTimeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs)
      await exited
      clearTimeout(timer)
    },
  }
}

function notInstalled(): Error {
  return new Error(
    'redis-server is not installed (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)',
  )
}

let parentDeathSignal: boolean | undefined
/** Whether `setpriv --pdeathsig` is there (Linux, util-linux 2.33 or later); asked once. */
export function canSetParentDeathSignal(): boolean {
  if (parentDeathSignal === undefined) {
    const probe =
      process.platform === 'linux'
        ? spawnSync('setpriv', ['--help'], { encoding: 'utf8', timeout: 2000 })
        : undefined
    parentDeathSignal = probe?.status === 0 && probe.stdout.includes('--pdeathsig')
  }
  return parentDeathSignal
}
