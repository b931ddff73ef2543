/**
 * What one call through the gateway costs its Redis servers, counted: every server of a Redis
 * deployment is watched with `MONITOR` while session GETs or PUTs run through the SDK, and each
 * command it executed is sorted by who sent it:
 *
 * - **round trips**: commands a gateway sent (each one a request and a reply on the wire);
 * - **in scripts**: commands a Lua script ran (`redis.call`, no round trip, but server CPU);
 * - **replicated**: commands a follower's server applied from its leader's replication stream.
 *
 * The shipping-lease renewals and the failover's checks of each replica's claim and epochs (its
 * state script, run by a timer every second and by a rare ceiling raise) are left out: timers,
 * not calls. A second pass of the same calls
 * without `MONITOR` measures the CPU time the gateway processes and the Redis servers spent per
 * call (Linux: `/proc/<pid>/stat`).
 */
import { once } from 'node:events'
import { readFile, readdir } from 'node:fs/promises'
import { createConnection } from 'node:net'
import { connect } from '@causeway/client'
import { Redis } from 'ioredis'

/** A Redis deployment as the counter sees it. */
export interface RedisDeployment {
  /** Every redis-server of the cluster, `redis://host:port`. */
  servers: string[]
  /** The base URL of the region the calls go to. */
  url: string
  /** Process ids of the cluster's gateway processes (for their CPU time). */
  gatewayPids: number[]
}

/** Commands per call, by command name (lower case). */
export type PerCall = Record<string, number>

/** What one kind of call cost. */
export interface CallCost {
  op: 'GET' | 'PUT'
  /** Calls in flight at once (each from its own SDK client and session). */
  concurrency: number
  calls: number
  roundTrips: PerCall
  inScripts: PerCall
  replicated: PerCall
  /** CPU ms per 1,000 calls, in the gateway processes and in all the redis-servers (medians). */
  gatewayCpuMs: number | undefined
  redisCpuMs: number | undefined
}

/** Sum of a {@link PerCall}. */
export function total(perCall: PerCall): number {
  return Object.values(perCall).reduce((sum, n) => sum + n, 0)
}

const ignore = (): void => {}

// Commands that are no part of a call: the monitor itself, replication's heartbeats.
const IGNORED = new Set(['monitor', 'ping', 'replconf', 'info', 'select', 'client', 'hello'])
const LEASE_KEY = /lease:ship$/

// The replica state read (`epoch-scripts.ts` STATE_SCRIPT): `EVALSHA sha 3 <p>sv <p>sv:epochs
// <p>meta regions`.
function isStateRead(args: readonly string[]): boolean {
  return (
    String(args[0]).toLowerCase() === 'evalsha' &&
    args[2] === '3' &&
    /sv$/.test(args[3] ?? '') &&
    /sv:epochs$/.test(args[4] ?? '') &&
    /meta$/.test(args[5] ?? '')
  )
}

interface Tally {
  roundTrips: Map<string, number>
  inScripts: Map<string, number>
  replicated: Map<string, number>
}

/**
 * The cost of `calls` session calls of `op`, run `concurrency` at a time through the SDK (after a
 * first pass that writes the keys a GET reads), on each of `deployments`: the commands, counted
 * in one pass with `MONITOR`, and the CPU time, in `rounds` passes without it that take turns
 * between the deployments in alternating order (the median is kept, as the k6 rows do), so that
 * a burst of other work on the machine does not decide a comparison.
 */
export async function costOfCalls(
  deployments: readonly RedisDeployment[],
  op: 'GET' | 'PUT',
  calls: number,
  concurrency: number,
  valueBytes: number,
  rounds = 1,
): Promise<CallCost[]> {
  const value = 'v'.repeat(Math.max(0, valueBytes - 2))
  const runners = deployments.map((d) => makeRunner(d.url, op, calls, concurrency, value))
  try {
    for (const run of runners) await run.prepare()
    const counted: Pick<CallCost, 'roundTrips' | 'inScripts' | 'replicated'>[] = []
    for (const [i, d] of deployments.entries()) counted.push(await countCommands(d, runners[i]!))
    const cpu = deployments.map(() => ({ gateways: [] as number[], redis: [] as number[] }))
    const redisPids = await Promise.all(deployments.map((d) => pidsOfRedis(portsOf(d))))
    for (let round = 0; round < rounds; round++) {
      const order = deployments.map((_, i) => i)
      if (round % 2 === 1) order.reverse()
      for (const i of order) {
        const d = deployments[i]!
        const gatewaysBefore = await cpuMs(d.gatewayPids)
        const redisBefore = await cpuMs(redisPids[i]!)
        await runners[i]!.calls()
        await settle(d.servers)
        const gatewaysAfter = await cpuMs(d.gatewayPids)
        const redisAfter = await cpuMs(redisPids[i]!)
        if (gatewaysAfter !== undefined && gatewaysBefore !== undefined)
          cpu[i]!.gateways.push(((gatewaysAfter - gatewaysBefore) * 1000) / calls)
        if (redisAfter !== undefined && redisBefore !== undefined)
          cpu[i]!.redis.push(((redisAfter - redisBefore) * 1000) / calls)
      }
    }
    return deployments.map((_, i) => ({
      op,
      concurrency,
      calls,
      ...counted[i]!,
      gatewayCpuMs: median(cpu[i]!.gateways),
      redisCpuMs: median(cpu[i]!.redis),
    }))
  } finally {
    for (const run of runners) await run.close()
  }
}

function portsOf(deployment: RedisDeployment): Set<string> {
  return new Set(deployment.servers.map((u) => new URL(u).port))
}

/** The middle value (the mean of the two middle ones), or undefined for none. */
function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The commands of one pass of `run`'s calls, per call, by sender (see the module comment). */
async function countCommands(
  deployment: RedisDeployment,
  run: { calls(): Promise<void>; size: number },
): Promise<Pick<CallCost, 'roundTrips' | 'inScripts' | 'replicated'>> {
  const ports = portsOf(deployment)
  const tally: Tally = { roundTrips: new Map(), inScripts: new Map(), replicated: new Map() }
  const monitors = await Promise.all(
    deployment.servers.map((url) => {
      // Whether the commands a script runs belong to a timer's script (Redis runs one command
      // at a time, so a script's commands follow its EVALSHA in the monitor's stream).
      let inTimer = false
      return monitor(url, (args, source) => {
        const name = String(args[0]).toLowerCase()
        if (source === 'lua' && inTimer) return
        inTimer = isStateRead(args)
        if (inTimer || IGNORED.has(name) || args.some((a) => LEASE_KEY.test(a))) return
        const port = source.slice(source.lastIndexOf(':') + 1)
        const into =
          source === 'lua' ? tally.inScripts : ports.has(port) ? tally.replicated : tally.roundTrips
        into.set(name, (into.get(name) ?? 0) + 1)
      })
    }),
  )
  try {
    await run.calls()
    // What a call set going finishes meanwhile: shipping to the other region, replication.
    await settle(deployment.servers)
  } finally {
    for (const stop of monitors) stop()
  }
  const perCall = (m: Map<string, number>): PerCall =>
    Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, n / run.size]))
  return {
    roundTrips: perCall(tally.roundTrips),
    inScripts: perCall(tally.inScripts),
    replicated: perCall(tally.replicated),
  }
}

function makeRunner(
  url: string,
  op: 'GET' | 'PUT',
  calls: number,
  concurrency: number,
  value: string,
): { size: number; prepare(): Promise<void>; calls(): Promise<void>; close(): Promise<void> } {
  const keys = Array.from({ length: calls }, (_, i) => `cost:${String(i).padStart(11, '0')}`)
  let clients: Awaited<ReturnType<typeof connect>>[] = []
  const each = async (call: (db: (typeof clients)[number], key: string) => Promise<unknown>) => {
    let next = 0
    await Promise.all(
      clients.map(async (db) => {
        while (next < keys.length) await call(db, keys[next++]!)
      }),
    )
  }
  return {
    size: calls,
    async prepare() {
      clients = await Promise.all(Array.from({ length: concurrency }, () => connect({ url })))
      // Every client writes its keys first, so its GETs carry a session vector and find values.
      await each((db, key) => db.put(key, value))
    },
    calls: () => each((db, key) => (op === 'PUT' ? db.put(key, value) : db.get(key))),
    async close() {
      await Promise.all(clients.map((db) => db.close()))
    },
  }
}

/**
 * Watches `url` with `MONITOR` on a plain socket (ioredis's monitor mode mistakes lines that
 * arrive with its `+OK` for replies) and hands `line` each command's arguments and source (`lua`
 * for a script's, else the client's address); resolves once the server has started, to a stop.
 */
async function monitor(
  url: string,
  line: (args: string[], source: string) => void,
): Promise<() => void> {
  const { hostname, port } = new URL(url)
  const socket = createConnection({ host: hostname, port: Number(port) })
  socket.setEncoding('utf8')
  socket.on('error', ignore)
  await once(socket, 'connect')
  socket.write('MONITOR\r\n')
  let buffered = ''
  let started: () => void = ignore
  const ok = new Promise<void>((resolve) => (started = resolve))
  socket.on('data', (chunk: string) => {
    buffered += chunk
    let end: number
    while ((end = buffered.indexOf('\r\n')) >= 0) {
      const text = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      if (text === '+OK') started()
      // +<time> [<db> <source>] "<command>" "<arg>" ...
      const m = /^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$/.exec(text)
      if (!m) continue
      const args = [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1]!)
      line(args, m[1]!)
    }
  })
  await ok
  return () => socket.destroy()
}

/**
 * Waits until every server's commandstats stop moving for a moment (shipping and replication
 * done), at most 5 s.
 */
async function settle(servers: string[]): Promise<void> {
  const clients = servers.map((url) => new Redis(url).on('error', ignore))
  try {
    const calls = async () => {
      const infos = await Promise.all(clients.map((c) => c.info('commandstats')))
      return infos
        .join('\n')
        .split('\n')
        .filter((l) => !/^cmdstat_(info|ping|replconf|evalsha|get|pexpire|pexpireat):/.test(l))
        .join('\n')
    }
    let last = await calls()
    for (let i = 0; i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      const now = await calls()
      if (now === last && i >= 2) return
      last = now
    }
  } finally {
    for (const c of clients) c.disconnect()
  }
}

/** The pids of the redis-servers listening on `ports` (their process title names the port). */
async function pidsOfRedis(ports: Set<string>): Promise<number[]> {
  const pids: number[] = []
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return []
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    const m = /^redis-server [^\s:]+:(\d+)/.exec(cmdline.replace(/\0/g, ' '))
    if (m && ports.has(m[1]!)) pids.push(Number(entry))
  }
  return pids
}

/** User + system CPU time of `pids` in ms, from `/proc/<pid>/stat`; undefined off Linux. */
async function cpuMs(pids: number[]): Promise<number | undefined> {
  if (pids.length === 0) return undefined
  let ticks = 0
  for (const pid of pids) {
    let stat: string
    try {
      stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    } catch {
      return undefined
    }
    // Fields after the command (which may hold spaces) in parentheses; utime, stime are 14, 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  // USER_HZ is 100 on every Linux this runs on.
  return ticks * 10
}
