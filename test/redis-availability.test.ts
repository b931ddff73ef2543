/**
 * Where redis-server cannot be had, the Redis suites are skipped and the run says so (how many,
 * how to get it), or it fails when CAUSEWAY_REQUIRE_REDIS=1; REDIS_SERVER names another binary.
 * A machine without Redis is simulated: a PATH that has none, and installing forbidden.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readlink, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureRedisServer } from './redis-availability.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
let dir: string
let noRedis: string // a PATH directory with node and nothing else
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'causeway-no-redis-'))
  noRedis = join(dir, 'bin')
  await mkdir(noRedis)
  await symlink(process.execPath, join(noRedis, 'node'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

describe('finding redis-server', () => {
  it('says why it cannot run the Redis suites, and fails when they are required', () => {
    const lines: string[] = []
    const env = { PATH: noRedis, CAUSEWAY_REDIS_INSTALL: '0' }
    expect(ensureRedisServer({ ...env }, (l) => lines.push(l))).toEqual({
      available: false,
      reason:
        'redis-server is not installed, and cannot be installed here (CAUSEWAY_REDIS_INSTALL=0)',
    })
    expect(lines).toEqual([]) // nothing was installed
    expect(() => ensureRedisServer({ ...env, CAUSEWAY_REQUIRE_REDIS: '1' }, () => {})).toThrow(
      /CAUSEWAY_REQUIRE_REDIS=1 says the Redis suites must run: install it \(Debian: sudo apt-get install redis-server redis-sentinel\)/,
    )
    expect(
      ensureRedisServer({ PATH: noRedis, REDIS_SERVER: join(dir, 'missing') }, () => {}),
    ).toEqual({
      available: false,
      reason: `REDIS_SERVER=${join(dir, 'missing')} is not an executable file`,
    })
  })

  it('puts REDIS_SERVER first on PATH as redis-server, whatever its name', async () => {
    const binary = join(dir, 'my-redis-7')
    await writeFile(binary, '#!/bin/sh\necho fake\n')
    await chmod(binary, 0o755)
    const env: NodeJS.ProcessEnv = { PATH: noRedis, REDIS_SERVER: binary }
    expect(ensureRedisServer(env, () => {})).toEqual({ available: true })
    const first = env.PATH!.split(':')[0]!
    expect(await readlink(join(first, 'redis-server'))).toBe(binary)
    expect(env.PATH!.endsWith(noRedis)).toBe(true)
  })

  it('a whole run without Redis skips the tagged suites and says how many, and passes', async () => {
    // A file of the redis tag beside one that needs nothing: the first is skipped, said.
    const files = [
      'gateway/test/storage/redis/redis-keys.test.ts',
      'packages/core/test/causal-context.test.ts',
    ]
    const run = await vitest(files, { PATH: noRedis, CAUSEWAY_REDIS_INSTALL: '0' })
    expect(run.code, run.output).toBe(0)
    expect(run.output).toMatch(
      /Redis: 6 tests in 1 file skipped: redis-server is not installed, and cannot be installed here \(CAUSEWAY_REDIS_INSTALL=0\); to run them, install it \(Debian: sudo apt-get install redis-server redis-sentinel\) or set REDIS_SERVER=\/path\/to\/redis-server/,
    )
    expect(run.output).toMatch(/Tests\s+\d+ passed \| 6 skipped/)
  }, 120_000)
})

/** Runs vitest on `files` in a child process with `env` (no colours), to its end. */
function vitest(
  files: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  const cli = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs')
  const child = spawn(process.execPath, [cli, 'run', ...files], {
    cwd: ROOT,
    env: { ...env, NO_COLOR: '1', CI: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c))
  const timer = setTimeout(() => child.kill('SIGKILL'), 110_000)
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    }),
  )
}
