/**
 * A `causeway dev --backend redis` cluster (the same `startRedisDevCluster` the command runs:
 * real `redis-server` and `causeway gateway` processes) with the faults of the chaos suite: kill -9
 * and restart of any Redis server (as it was, with its AOF cut to what it held a second before,
 * or with its data directory wiped), kill -9 and restart or SIGSTOP and SIGCONT of any gateway, a
 * cut in shipping between regions (a proxy on every shipping link), and clocks that disagree.
 *
 * What the dev cluster cannot do by itself, restarting what was killed, is done here the way the
 * dev cluster started it: `startRedisProcess` with the server's port, directory and leader, and
 * `causeway gateway --config` with the gateway's port.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdir, readFile, rm, stat, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import type { ClusterConfig } from '../../src/config/cluster-config.js'
import {
  startRedisDevCluster,
  type DevGateway,
  type DevRedis,
  type RedisDevCluster,
} from '../../src/dev/redis-dev-cluster.js'
import { startRedisProcess, type RedisProcess } from '../../src/dev/redis-process.js'
import { ReplicaKeys } from '../../src/storage/redis/key-layout.js'
import type { LogCopy } from './chaos-checks.js'
import { startCuttableProxy, type CuttableProxy } from './cuttable-proxy.js'

const BIN = fileURLToPath(new URL('../../bin/causeway.js', import.meta.url))

/** The shape of a chaos cluster. */
export interface RedisChaosOptions {
  regions: number
  partitions: number
  replicas: number
  /** Gateway processes per region (behind the region's balancer when more than one). */
  gateways: number
  /** By region id, ms added to the region's clock. @default none */
  clockOffsetMs?: readonly number[]
  /** Told about gateway exits and other events. */
  log: (line: string) => void
}

/** How a killed Redis server comes back. */
export type RedisDamage = 'none' | 'truncated-aof' | 'wiped'

/** A gateway of the cluster, as it runs now. */
export interface ChaosGateway extends DevGateway {
  /** Its process when the harness (re)started it; the dev cluster's otherwise. */
  child?: ChildProcess
}

/** A running chaos cluster. */
export class RedisChaosCluster {
  readonly dev: RedisDevCluster
  readonly gateways: ChaosGateway[]
  readonly #options: RedisChaosOptions
  readonly #proxies: CuttableProxy[]
  readonly #restarted = new Map<string, RedisProcess>()
  readonly #dirs = new Map<string, string>()
  readonly #pids = new Map<string, number>()

  private constructor(options: RedisChaosOptions, dev: RedisDevCluster, proxies: CuttableProxy[]) {
    this.#options = options
    this.dev = dev
    this.#proxies = proxies
    this.gateways = dev.gateways.map((g) => ({ ...g }))
    for (const r of dev.redis) this.#pids.set(serverId(r), r.pid!)
  }

  /** Starts the cluster, every shipping link through a proxy {@link cutShipping} can cut. */
  static async start(options: RedisChaosOptions): Promise<RedisChaosCluster> {
    const proxies: CuttableProxy[] = []
    let dev: RedisDevCluster
    try {
      dev = await startRedisDevCluster({
        regions: options.regions,
        partitions: options.partitions,
        replicas: options.replicas,
        gateways: options.gateways,
        port: 0,
        // Background events (leases, failover steps) are logged: when a scenario fails, they say
        // what the cluster did. Refusals the scenarios cause on purpose are the history's
        // business, not the log's (they are not logged at warn).
        logLevel: process.env['CAUSEWAY_CHAOS_LOG_LEVEL'] ?? 'warn',
        // A short lease, so a killed lease holder's partitions are shipped again soon.
        shipping: { leaseMs: 1500 },
        // Three Sentinels per region, as `causeway dev --sentinel` runs them (default settings):
        // a leader that is lost, or comes back behind, is replaced by a follower.
        sentinel: true,
        ...(options.clockOffsetMs ? { clockOffsetsMs: [...options.clockOffsetMs] } : {}),
        gatewayCommand: { command: process.execPath, args: [BIN] },
        shippingVia: async ({ url }) => {
          const proxy = await startCuttableProxy(url)
          proxies.push(proxy)
          return proxy.url
        },
        onGatewayExit: (g, code) => options.log(`gateway ${g.region}.${g.index} exited (${code})`),
      })
    } catch (error) {
      await Promise.all(proxies.map((p) => p.close()))
      throw error
    }
    const cluster = new RedisChaosCluster(options, dev, proxies)
    await cluster.#readDirs()
    return cluster
  }

  get config(): ClusterConfig {
    return this.dev.config
  }

  get urls(): string[] {
    return this.dev.urls
  }

  /** The Redis server of replica `i` of partition `p` in region `d`. */
  server(d: number, p: number, i: number): DevRedis {
    const r = this.dev.redis.find((s) => s.region === d && s.partition === p && s.replica === i)
    if (!r) throw new RangeError(`no replica ${i} of partition ${p} in region ${d}`)
    return { ...r, pid: this.#pids.get(serverId(r)) }
  }

  /**
   * kill -9 of a Redis server. With `truncated-aof` in mind, `lastSecond` first notes its AOF's
   * length, waits a second of writes, then kills: {@link restartRedis} cuts the AOF back to that
   * length (what `appendfsync everysec` may keep after a power loss).
   */
  async killRedis(
    d: number,
    p: number,
    i: number,
    options: { noteAofFirst?: boolean } = {},
  ): Promise<{ aofLength?: number }> {
    const server = this.server(d, p, i)
    const aof = options.noteAofFirst ? await this.#incrementalAof(server) : undefined
    const aofLength = aof ? (await stat(aof)).size : undefined
    if (aof) await new Promise((resolve) => setTimeout(resolve, 1000))
    await killAndWait(server.pid!, 'SIGKILL')
    return aofLength === undefined ? {} : { aofLength }
  }

  /** Starts a killed Redis server again on its port, as it was or damaged. */
  async restartRedis(
    d: number,
    p: number,
    i: number,
    damage: RedisDamage = 'none',
    aofLength?: number,
  ): Promise<void> {
    const server = this.server(d, p, i)
    const dir = this.#dirs.get(serverId(server))!
    if (damage === 'wiped') {
      for (const entry of await readdir(dir)) await rm(join(dir, entry), { recursive: true })
    } else if (damage === 'truncated-aof') {
      const aof = await this.#incrementalAof(server)
      if (aofLength === undefined) throw new Error('truncated-aof needs the AOF length noted')
      await truncate(aof, aofLength)
    }
    const port = Number(new URL(server.url).port)
    const leader = i === 0 ? undefined : new URL(this.config.regions[d]!.replicas[p]![0]!)
    const process_ = await startRedisProcess({
      port,
      dir,
      appendfsync: 'always',
      exitWithParent: true,
      ...(leader ? { replicaOf: { host: leader.hostname, port: Number(leader.port) } } : {}),
    })
    // A server restarted before and killed again: its handle is done with.
    await this.#restarted.get(serverId(server))?.stop()
    this.#restarted.set(serverId(server), process_)
    this.#pids.set(serverId(server), process_.pid!)
  }

  /** The gateway `index` of region `d`. */
  gateway(d: number, index: number): ChaosGateway {
    const g = this.gateways.find((x) => x.region === d && x.index === index)
    if (!g) throw new RangeError(`no gateway ${index} in region ${d}`)
    return g
  }

  /** The region's gateway that holds the most shipping leases (asked through `/v1/status`). */
  async leaseHolder(d: number): Promise<ChaosGateway> {
    // A deadline, not a verdict: a loaded machine's gateways may take more than 10 s to answer.
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      let best: { g: ChaosGateway; held: number } | undefined
      for (const g of this.gateways.filter((x) => x.region === d)) {
        const held = await shippedPartitions(g.url).catch(() => [])
        if (held.length > 0 && (!best || held.length > best.held)) best = { g, held: held.length }
      }
      if (best) return best.g
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`no gateway of region ${d} holds a shipping lease`)
  }

  /** Sends `signal` to a gateway (SIGKILL waits for it to be gone). */
  async signalGateway(g: ChaosGateway, signal: NodeJS.Signals): Promise<void> {
    if (signal === 'SIGKILL') await killAndWait(g.pid!, signal)
    else process.kill(g.pid!, signal)
  }

  /** Starts a killed gateway again on its port, as the dev cluster started it. */
  async restartGateway(g: ChaosGateway): Promise<void> {
    const port = new URL(g.url).port
    const child = spawn(
      process.execPath,
      [
        BIN,
        'gateway',
        '--config',
        this.dev.configPath,
        '--region',
        String(g.region),
        '--port',
        port,
        '--host',
        '127.0.0.1',
        '--log-level',
        'error',
        '--cors-origin',
        '*',
      ],
      { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], detached: true },
    )
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(
        () => reject(new Error('the restarted gateway did not start')),
        60_000,
      )
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (/^region \d+ /m.test(out)) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`the restarted gateway exited (${code ?? signal})`))
      })
    })
    child.stdout!.resume()
    child.removeAllListeners('exit')
    child.on('exit', (code, signal) =>
      this.#options.log(`restarted gateway ${g.region}.${g.index} exited (${code ?? signal})`),
    )
    g.child = child
    g.pid = child.pid
  }

  /** Cuts every shipping link between regions. */
  cutShipping(): void {
    for (const proxy of this.#proxies) proxy.cut()
  }

  /** Restores every shipping link. */
  healShipping(): void {
    for (const proxy of this.#proxies) proxy.heal()
  }

  /**
   * Every replica's copy of every origin's log of every partition, read from its Redis server
   * (`XRANGE` of the log stream): what the checks compare.
   */
  async readLogs(): Promise<LogCopy[]> {
    const { regions, partitions } = {
      regions: this.config.regions.length,
      partitions: this.config.partitions,
    }
    const copies: LogCopy[] = []
    for (const server of this.dev.redis) {
      const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
      redis.on('error', () => {})
      try {
        await redis.connect()
        const keys = new ReplicaKeys(this.config.redis.namespace, server.region, server.partition)
        for (let origin = 0; origin < regions; origin++) {
          const rows = await redis.xrange(keys.log(origin), '-', '+')
          copies.push({
            region: server.region,
            copy: `replica ${server.replica}`,
            partition: server.partition,
            origin,
            entries: rows.map(([id, fields]) => ({
              idx: Number(id.split('-')[0]),
              ts: field(fields, 'ts'),
              key: field(fields, 'k'),
            })),
          })
        }
      } finally {
        redis.disconnect()
      }
    }
    if (copies.length !== this.dev.redis.length * regions || partitions < 1)
      throw new Error('not every log was read')
    return copies
  }

  /** Stops everything: the gateways and servers the harness restarted, then the dev cluster. */
  async close(): Promise<void> {
    for (const g of this.gateways) if (g.pid !== undefined) tryKill(g.pid, 'SIGCONT')
    await Promise.all(
      this.gateways
        .filter((g) => g.child)
        .map(async (g) => {
          const child = g.child!
          if (child.exitCode !== null || child.signalCode !== null) return
          const exited = new Promise((resolve) => child.once('exit', resolve))
          child.kill('SIGTERM')
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
          await exited
          clearTimeout(timer)
        }),
    )
    await this.dev.close()
    await Promise.all([...this.#restarted.values()].map((r) => r.stop()))
    await Promise.all(this.#proxies.map((p) => p.close()))
  }

  async #readDirs(): Promise<void> {
    for (const server of this.dev.redis) {
      const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
      try {
        await redis.connect()
        const [, dir] = (await redis.config('GET', 'dir')) as [string, string]
        this.#dirs.set(serverId(server), dir)
      } finally {
        redis.disconnect()
      }
    }
  }

  // The AOF file the server appends to now (Redis 7 multi-part AOF: the manifest's `i` file).
  async #incrementalAof(server: DevRedis): Promise<string> {
    const dir = join(this.#dirs.get(serverId(server))!, 'appendonlydir')
    const manifest = await readFile(join(dir, 'appendonly.aof.manifest'), 'utf8')
    const incr = manifest
      .split('\n')
      .map((line) => /^file (\S+) seq \d+ type i$/.exec(line.trim())?.[1])
      .filter((name): name is string => name !== undefined)
      .at(-1)
    if (!incr) throw new Error(`no incremental AOF in ${dir}: ${manifest}`)
    return join(dir, incr)
  }
}

function serverId(r: { region: number; partition: number; replica: number }): string {
  return `${r.region}/${r.partition}/${r.replica}`
}

function field(fields: string[], name: string): string {
  const at = fields.indexOf(name)
  return at === -1 ? '' : fields[at + 1]!
}

function tryKill(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal)
    return true
  } catch {
    return false
  }
}

/** Sends `signal` and waits (at most 10 s) until the process is gone. */
async function killAndWait(pid: number, signal: NodeJS.Signals): Promise<void> {
  tryKill(pid, signal)
  const deadline = Date.now() + 10_000
  while (tryKill(pid, 0)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is still there after ${signal}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function shippedPartitions(url: string): Promise<number[]> {
  const res = await fetch(`${url}/v1/status`, { signal: AbortSignal.timeout(2000) })
  const status = (await res.json()) as { shippers?: { partition: number }[] }
  return [...new Set((status.shippers ?? []).map((s) => s.partition))]
}
