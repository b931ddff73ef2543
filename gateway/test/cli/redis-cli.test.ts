/**
 * The Redis commands of the CLI as a user runs them: `causeway gateway --config` (errors that say
 * what is wrong; a gateway with API keys over servers started here) and
 * `causeway dev --backend redis` (one region, restarted on the same --data).
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { freePort, startRedis, stopAllRedis } from '../support/redis-server.js'
import { runCli, startCli, stopCli, urlsOf, type CliProcess } from './cli-process.js'

const started: CliProcess[] = []
let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'causeway-redis-cli-'))
})
afterAll(async () => {
  await Promise.all(started.map((cli) => stopCli(cli, 'SIGTERM')))
  await stopAllRedis()
  await rm(dir, { recursive: true, force: true })
})

function cli(args: string[]): CliProcess {
  const process = startCli(args)
  started.push(process)
  return process
}

/** Whether something accepts connections on `port` now. */
function accepting(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

// Resolves once nothing accepts connections on `port` (within 15 s: a stopping redis-server may
// wait 1 s for its replicas and a gateway closes its connections first; on a busy 2-core machine
// that took more than 5 s in CI).
async function closed(port: number): Promise<void> {
  await vi.waitFor(async () => expect(await accepting(port), `port ${port} closed`).toBe(false), {
    timeout: 15_000,
    interval: 50,
  })
}

async function writeConfig(name: string, config: unknown): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, JSON.stringify(config))
  return path
}

const twoRegions = {
  format: 1,
  cluster: 'c1',
  partitions: 1,
  regions: [
    { name: 'eu', url: 'http://127.0.0.1:1', replicas: [['redis://127.0.0.1:2']] },
    { name: 'us', url: 'http://127.0.0.1:3', replicas: [['redis://127.0.0.1:4']] },
  ],
  auth: { clusterSecret: 'secret-0123456789abcdef' },
}

describe('causeway gateway: command-line and config errors', { timeout: 240_000 }, () => {
  it('needs --config', async () => {
    const { code, stderr } = await runCli(['gateway'])
    expect(code).toBe(2)
    expect(stderr).toContain('gateway needs --config FILE')
  })

  it('names each problem of a bad config, with its path', async () => {
    const path = await writeConfig('bad.json', {
      ...twoRegions,
      partitions: 0,
      regions: [{ ...twoRegions.regions[0], replicas: [['mysql://x']] }],
    })
    const { code, stderr } = await runCli(['gateway', '--config', path])
    expect(code).toBe(1)
    expect(stderr).toContain(`${path} is not a valid cluster config:`)
    expect(stderr).toContain('partitions: must be >= 1')
    expect(stderr).toContain('regions[0].replicas[0][0]: must be a Redis URL')
    const missing = await runCli(['gateway', '--config', join(dir, 'missing.json')])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('missing.json')
  })

  it('asks which region to serve, and refuses one the config does not have', async () => {
    const path = await writeConfig('two.json', twoRegions)
    const which = await runCli(['gateway', '--config', path])
    expect(which.code).toBe(2)
    expect(which.stderr).toContain('has 2 regions (eu, us): say which with --region')
    const unknown = await runCli(['gateway', '--config', path, '--region', 'asia'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('--region asia')
  })

  it('refuses dev options the redis backend does not have', async () => {
    for (const args of [
      ['dev', '--backend', 'mongo'],
      ['dev', '--backend', 'redis', '--replica-lag', '5'],
      ['dev', '--backend', 'redis', '--appendfsync', 'sometimes'],
      ['dev', '--backend=redis', '--gateways', '0'],
    ]) {
      const { code, stderr } = await runCli(args)
      expect(code, args.join(' ')).toBe(2)
      expect(stderr, args.join(' ')).toContain('Usage: causeway')
    }
  })
})

describe(
  'causeway gateway over running Redis servers',
  { tags: ['redis'], timeout: 240_000 },
  () => {
    it('serves the region named by --region, with the API keys of the config', async () => {
      const leader = await startRedis()
      const follower = await startRedis()
      await follower.replicaOf(leader)
      const port = await freePort()
      const key = 'cli-api-key-0123456789'
      const path = await writeConfig('one.json', {
        format: 1,
        cluster: 'cli-test',
        partitions: 1,
        regions: [
          { name: 'home', url: `http://127.0.0.1:${port}`, replicas: [[leader.url, follower.url]] },
        ],
        auth: { apiKeys: [key] },
      })
      const app = 'https://app.example.com'
      const gateway = cli([
        ...['gateway', '--config', path, '--region', 'home', '--port', String(port)],
        ...['--cors-origin', app],
      ])
      const [url] = await urlsOf(gateway, 1)
      expect(url).toBe(`http://127.0.0.1:${port}`)
      expect((await fetch(`${url}/v1/kv/x`)).status).toBe(401)
      // Pages of the origin it was given may call (and read its 401); no other origin's.
      const fromApp = await fetch(`${url}/v1/kv/x`, { headers: { origin: app } })
      expect([fromApp.status, fromApp.headers.get('access-control-allow-origin')]).toEqual([
        401,
        app,
      ])
      const fromOther = await fetch(`${url}/v1/kv/x`, { headers: { origin: 'https://other.test' } })
      expect(fromOther.headers.get('access-control-allow-origin')).toBeNull()
      const auth = { authorization: `Bearer ${key}` }
      const put = await fetch(`${url}/v1/kv/x?durability=majority`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ value: 42 }),
      })
      expect(put.status).toBe(200)
      const get = await fetch(`${url}/v1/kv/x?replica=follower`, {
        headers: { ...auth, 'causeway-after': `0:${((await put.json()) as { idx: number }).idx}` },
      })
      expect(await get.json()).toMatchObject({ found: true, value: 42, replica: 1 })
      expect(await stopCli(gateway, 'SIGTERM')).toBe(0)
      expect(gateway.stderr()).toContain('stopped')
    })

    it('warns when the servers cannot keep the durability the config promises, and with --strict refuses to start', async () => {
      const leader = await startRedis({ appendfsync: 'everysec' })
      const follower = await startRedis()
      await follower.replicaOf(leader)
      const port = await freePort()
      const path = await writeConfig('lazy.json', {
        format: 1,
        cluster: 'cli-lazy',
        partitions: 1,
        regions: [
          { name: 'home', url: `http://127.0.0.1:${port}`, replicas: [[leader.url, follower.url]] },
        ],
        redis: { durability: 'leader' },
      })
      const strict = await runCli(
        ['gateway', '--config', path, '--port', String(port), '--strict'],
        60_000,
      )
      expect(strict.code).not.toBe(0)
      expect(strict.stderr).toMatch(/cannot keep durability 'leader'/)
      expect(strict.stderr).toMatch(/appendfsync everysec\) may lose the last second/)
      expect(await accepting(port)).toBe(false)
      const lenient = cli(['gateway', '--config', path, '--port', String(port)])
      await urlsOf(lenient, 1)
      expect(lenient.stderr()).toMatch(/WARNING: durability 'leader' cannot be kept/)
      expect(await stopCli(lenient, 'SIGTERM')).toBe(0)
    })
  },
)

describe('causeway dev --backend redis', { tags: ['redis'], timeout: 240_000 }, () => {
  it('starts its own redis-servers, and a restart on the same --data keeps the cluster', async () => {
    const data = join(dir, 'dev-data')
    const args = ['dev', '--backend', 'redis', '--port', '0', '--regions', '1']
    const first = cli([...args, '--partitions', '2', '--replicas', '2', '--data', data])
    const [url] = await urlsOf(first, 1)
    const topology = (await (await fetch(`${url}/v1/topology`)).json()) as { cluster: string }
    const put = await fetch(`${url}/v1/kv/kept`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'still here' }),
    })
    expect(put.status).toBe(200)
    const config = JSON.parse(await readFile(join(data, 'redis-cluster.json'), 'utf8')) as {
      cluster: string
      auth: { clusterSecret: string }
    }
    expect(config.cluster).toBe(topology.cluster)
    // The config holds the cluster secret: only its owner may read it.
    expect((await stat(join(data, 'redis-cluster.json'))).mode & 0o077).toBe(0)
    expect(await stopCli(first, 'SIGTERM')).toBe(0)

    // Another shape on the same data is refused.
    const other = await runCli([...args, '--partitions', '3', '--replicas', '2', '--data', data])
    expect(other.code).toBe(1)
    expect(other.stderr).toContain('Start with the same shape')

    // This time behind a (pretend) proxy: the topology publishes the URL it was given.
    const second = cli([
      ...[...args, '--partitions', '2', '--replicas', '2', '--data', data],
      ...['--public-url', 'https://proxy.example/r0/'],
    ])
    const [again] = await urlsOf(second, 1)
    const restarted = (await (await fetch(`${again}/v1/topology`)).json()) as {
      cluster: string
      regions: { url: string }[]
    }
    expect(restarted.cluster).toBe(topology.cluster)
    expect(restarted.regions.map((r) => r.url)).toEqual(['https://proxy.example/r0'])
    expect(await (await fetch(`${again}/v1/kv/kept`)).json()).toMatchObject({
      found: true,
      value: 'still here',
    })
    // Killed outright, it still leaves no server behind: the kernel stops the redis-servers
    // (parent-death signal) and the gateways see their IPC channel close.
    const servers = JSON.parse(await readFile(join(data, 'redis-cluster.json'), 'utf8')) as {
      regions: { replicas: string[][] }[]
    }
    expect(await stopCli(second, 'SIGKILL')).toBe('SIGKILL')
    const ports = servers.regions.flatMap((r) => r.replicas.flat()).map((u) => new URL(u).port)
    ports.push(new URL(again!).port)
    await Promise.all(ports.map((port) => closed(Number(port))))
  }, 240_000)
})
