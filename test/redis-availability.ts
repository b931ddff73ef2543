/**
 * Whether the Redis suites can run, decided once when vitest starts (from `vitest.config.ts`):
 * finds `redis-server` (`REDIS_SERVER`, else `PATH`) and, where it is missing and Debian's
 * package can be installed without asking anyone (root or passwordless sudo, and apt-get),
 * installs it, saying so in one line. Where it cannot be had, the suites tagged `redis` are
 * skipped and {@link RedisSkipReporter} says how many; with `CAUSEWAY_REQUIRE_REDIS=1` (CI) the
 * run fails instead.
 *
 * Environment:
 * - `REDIS_SERVER`: the redis-server to use (put first on `PATH` for every process the tests
 *   start, under the name `redis-server`).
 * - `CAUSEWAY_REQUIRE_REDIS=1`: a missing Redis fails the run.
 * - `CAUSEWAY_REDIS_INSTALL=0`: never install it.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { accessSync, constants, existsSync, mkdirSync, renameSync, symlinkSync } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The answer: the Redis suites run, or why they cannot. */
export type RedisAvailability = { available: true } | { available: false; reason: string }

/** What to do about a missing Redis, for the messages. */
export const REDIS_INSTALL_HINT =
  'install it (Debian: sudo apt-get install redis-server redis-sentinel) ' +
  'or set REDIS_SERVER=/path/to/redis-server'

const PACKAGES = ['redis-server', 'redis-sentinel']
const INSTALL_TIMEOUT_MS = 10 * 60_000
const ROOT = fileURLToPath(new URL('../', import.meta.url))

/**
 * Finds or installs redis-server; may change `env.PATH` (to put `REDIS_SERVER` first). Throws
 * when it is missing and `CAUSEWAY_REQUIRE_REDIS=1`.
 */
export function ensureRedisServer(
  env: NodeJS.ProcessEnv = process.env,
  log: (line: string) => void = (line) => console.log(line),
): RedisAvailability {
  const availability = findOrInstall(env, log)
  if (!availability.available && env.CAUSEWAY_REQUIRE_REDIS === '1') {
    throw new Error(
      `${availability.reason}, and CAUSEWAY_REQUIRE_REDIS=1 says the Redis suites must run: ${REDIS_INSTALL_HINT}`,
    )
  }
  return availability
}

function findOrInstall(env: NodeJS.ProcessEnv, log: (line: string) => void): RedisAvailability {
  const given = env.REDIS_SERVER
  if (given !== undefined && given !== '') {
    const path = resolve(given)
    if (!executable(path))
      return { available: false, reason: `REDIS_SERVER=${given} is not an executable file` }
    putFirstOnPath(env, path)
    return { available: true }
  }
  if (onPath(env, 'redis-server') !== undefined) return { available: true }
  const installer = installerOf(env)
  if (typeof installer === 'string')
    return {
      available: false,
      reason: `redis-server is not installed, and cannot be installed here (${installer})`,
    }
  log(
    `redis-server not found: installing Debian's ${PACKAGES.join(' and ')} ` +
      `(apt-get install -y --no-install-recommends${installer.length > 0 ? ', with sudo' : ''})`,
  )
  const failure = aptInstall(env, installer)
  if (failure !== undefined)
    return { available: false, reason: `redis-server is not installed, and ${failure}` }
  if (onPath(env, 'redis-server') === undefined)
    return { available: false, reason: 'apt-get installed redis-server but it is not on PATH' }
  return { available: true }
}

/** The command prefix that runs apt-get as root, or why there is none. */
function installerOf(env: NodeJS.ProcessEnv): string[] | string {
  if (env.CAUSEWAY_REDIS_INSTALL === '0') return 'CAUSEWAY_REDIS_INSTALL=0'
  if (process.platform !== 'linux' || onPath(env, 'apt-get') === undefined) return 'no apt-get'
  if (process.getuid?.() === 0) return []
  if (onPath(env, 'sudo') === undefined) return 'not root, and no sudo'
  const sudo = spawnSync('sudo', ['-n', 'true'], { env, stdio: 'ignore', timeout: 10_000 })
  if (sudo.status !== 0) return 'not root, and sudo asks for a password'
  return ['sudo', '-n']
}

/** Installs the packages; the output is shown only when it fails. Returns what failed. */
function aptInstall(env: NodeJS.ProcessEnv, prefix: string[]): string | undefined {
  const run = (args: string[]) => {
    const [command, ...rest] = [...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', ...args]
    return spawnSync(command!, rest, { env, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS })
  }
  const install = ['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...PACKAGES]
  if (run(install).status === 0) return undefined
  // A fresh machine's package lists may be empty or stale: update them and try once more.
  run(['apt-get', 'update', '-q'])
  const again = run(install)
  if (again.status === 0) return undefined
  const output = `${again.stdout ?? ''}${again.stderr ?? ''}`.trim().split('\n').slice(-5)
  return `installing it failed (${again.error?.message ?? `apt-get exited with ${again.status}`}): ${output.join(' / ')}`
}

function onPath(env: NodeJS.ProcessEnv, name: string): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && executable(join(dir, name))) return join(dir, name)
  }
  return undefined
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Every process the tests start finds `path` as `redis-server` first on PATH. */
function putFirstOnPath(env: NodeJS.ProcessEnv, path: string): void {
  // One directory per target, made once: runs side by side never pull it from under each other.
  const id = createHash('sha256').update(path).digest('hex').slice(0, 16)
  const dir = join(ROOT, 'node_modules', '.cache', 'causeway-redis-server', id)
  const link = join(dir, 'redis-server')
  if (!existsSync(link)) {
    mkdirSync(dir, { recursive: true })
    const made = `${link}.${process.pid}`
    symlinkSync(path, made)
    renameSync(made, link)
  }
  env.PATH = `${dir}${delimiter}${env.PATH ?? ''}`
}
