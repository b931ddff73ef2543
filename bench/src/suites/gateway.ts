/**
 * Suite `gateway`: the gateway's GET and PUT throughput with session guarantees against
 * eventual consistency, in one k6 run against one cluster, and, in the same run, the limits of
 * this machine: the same load through plain k6 HTTP (no SDK; eventual, and with a session carried
 * by hand) to the gateway and to a Fastify route that does nothing, and raw Redis
 * (redis-benchmark, ioredis). Over Redis it also counts the Redis commands of a session GET and
 * PUT (`redis-commands.ts`).
 *
 * With `--baseline <checkout>`, a second cluster runs from another checkout's build (the code
 * before a change) next to this one, and the plain HTTP rows, raw Redis and the command counts
 * are measured on both in the same run, the rows interleaved: before and after, side by side.
 */
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { startChild } from '../child-server.js'
import { type ClusterConfig, type ClusterProcess, startCluster } from '../cluster-process.js'
import { type PlannedScenario, type ScenarioResult, interleave, runPlan } from '../k6-runner.js'
import { type CallCost, costOfCalls, total } from '../redis-commands.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import { type RedisRow, ioredisBenchmark, redisBenchmark, startRedis } from '../redis-limits.js'
import type { Suite, SuiteContext } from '../suite.js'

/** What was measured on the baseline cluster (`--baseline`). */
export interface BaselineResults {
  /** The checkout, and its commit. */
  checkout: string
  commit: string
  redis: RedisRow[]
  redisSource: string
  costs?: CallCost[]
}

/** What the suite records. */
export interface GatewayResults {
  cluster: ClusterConfig
  vus: number
  durationS: number
  warmupS: number
  /** Interleaved rounds per row; each number is the median over them. */
  rounds: number
  scenarios: (ScenarioResult & { label: string; group: string })[]
  redis: RedisRow[]
  /** Which redis-server the raw Redis rows measured. */
  redisSource: string
  /** Redis commands and CPU per session call (Redis backend only). */
  costs?: CallCost[]
  /** The baseline cluster's numbers (`--baseline`); its k6 rows are among `scenarios`. */
  baseline?: BaselineResults
}

interface RedisConfig {
  regions: { replicas: string[][] }[]
}

/** Port of the redis-server leading partition 0 of region 0, from a Redis cluster config. */
async function leaderRedisPort(configPath: string): Promise<number> {
  const config = JSON.parse(await readFile(configPath, 'utf8')) as RedisConfig
  const url = config.regions[0]?.replicas[0]?.[0]
  const port = url === undefined ? NaN : Number(new URL(url).port)
  if (!Number.isInteger(port)) throw new Error(`no leader redis-server in ${configPath}`)
  return port
}

/** Every redis-server of a Redis cluster config. */
async function redisServers(configPath: string): Promise<string[]> {
  const config = JSON.parse(await readFile(configPath, 'utf8')) as RedisConfig
  return config.regions.flatMap((r) => r.replicas.flat())
}

/** The commit a checkout is at (`git rev-parse --short HEAD`), or 'unknown'. */
function commitOf(checkout: string): string {
  try {
    return execFileSync('git', ['-C', checkout, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
    }).trim()
  } catch {
    return 'unknown'
  }
}

const VALUE_BYTES = 64
const KEYS = 10_000

interface Row {
  name: string
  label: string
  group: string
  exec: 'mixed' | 'raw'
  env: Record<string, string>
}

/** The group of the plain HTTP rows run on the baseline cluster. */
const BEFORE = 'plain HTTP → gateway (baseline)'

function rows(urls: string[], noop: string, partitions: number, baseline?: string): Row[] {
  const sdk = (name: string, label: string, writeRatio: number, level: string): Row => ({
    name,
    label,
    group: 'SDK → gateway',
    exec: 'mixed',
    env: { WRITE_RATIO: String(writeRatio), READ_LEVEL: level, WRITE_LEVEL: level },
  })
  const raw = (
    name: string,
    label: string,
    group: string,
    url: string,
    writeRatio: number,
    session = false,
  ): Row => ({
    name,
    label,
    group,
    exec: 'raw',
    env: {
      RAW_URL: url,
      WRITE_RATIO: String(writeRatio),
      ...(session ? { SESSION: 'true', PARTITIONS: String(partitions) } : {}),
    },
  })
  const gateway = (base: string, prefix: string, group: string): Row[] => [
    raw(`${prefix}get`, 'GET eventual', group, `${base}/v1/kv/{key}?level=eventual`, 0),
    raw(`${prefix}put`, 'PUT eventual', group, `${base}/v1/kv/{key}?level=eventual`, 1),
    raw(`${prefix}get_session`, 'GET session', group, `${base}/v1/kv/{key}`, 0, true),
    raw(`${prefix}put_session`, 'PUT session', group, `${base}/v1/kv/{key}`, 1, true),
  ]
  // PUTs first: they fill the key space the GETs then read.
  return [
    sdk('put_eventual', 'PUT eventual', 1, 'eventual'),
    sdk('put_session', 'PUT session', 1, 'session'),
    sdk('get_eventual', 'GET eventual', 0, 'eventual'),
    sdk('get_session', 'GET session', 0, 'session'),
    sdk('mix_eventual', '50:50 eventual', 0.5, 'eventual'),
    sdk('mix_session', '50:50 session', 0.5, 'session'),
    ...gateway(urls[0]!, 'raw_gateway_', 'plain HTTP → gateway'),
    ...(baseline === undefined ? [] : gateway(baseline, 'base_gateway_', BEFORE)),
    raw('noop_get', 'GET', 'plain HTTP → Fastify no-op', `${noop}/noop/{key}`, 0),
    raw('noop_put', 'PUT', 'plain HTTP → Fastify no-op', `${noop}/noop/{key}`, 1),
  ]
}

/**
 * Commands and CPU per session GET and PUT, one call at a time and `vus` at a time, on each
 * cluster of `devs` (this checkout's, then the baseline's); the CPU passes take turns between
 * them.
 */
async function callCosts(
  devs: readonly ClusterProcess[],
  quick: boolean,
  vus: number,
  log: (line: string) => void,
): Promise<CallCost[][]> {
  const deployments = await Promise.all(
    devs.map(async (dev) => ({
      servers: await redisServers(dev.configPath!),
      url: dev.urls[0]!,
      gatewayPids: dev.gatewayPids,
    })),
  )
  const costs: CallCost[][] = devs.map(() => [])
  const rounds = quick ? 1 : 3
  for (const [concurrency, calls] of [
    [1, quick ? 50 : 300],
    [vus, quick ? 320 : 3200],
  ] as const) {
    for (const op of ['PUT', 'GET'] as const) {
      log(
        `Redis commands: ${calls} session ${op}s, ${concurrency} at a time (CPU: ${rounds} round${rounds > 1 ? 's' : ''})`,
      )
      const each = await costOfCalls(deployments, op, calls, concurrency, VALUE_BYTES, rounds)
      each.forEach((cost, i) => costs[i]!.push(cost))
    }
  }
  return costs
}

/**
 * ioredis GET and SET on each of `ports` (db 1), `rounds` times in alternating order, and the
 * median of each: the raw Redis rows of clusters compared side by side.
 */
async function ioredisRounds(
  ports: readonly number[],
  vus: number,
  seconds: number,
  rounds: number,
): Promise<RedisRow[][]> {
  const runs: RedisRow[][][] = ports.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const order = ports.map((_, i) => i)
    if (round % 2 === 1) order.reverse()
    for (const i of order)
      runs[i]!.push(await ioredisBenchmark(ports[i]!, vus, seconds, VALUE_BYTES, 1))
  }
  return runs.map((byRound) =>
    byRound[0]!.map((row, k) => {
      const values = byRound.map((r) => r[k]!).sort((a, b) => a.opsPerSec - b.opsPerSec)
      return values[values.length >> 1]!
    }),
  )
}

async function run(ctx: SuiteContext): Promise<GatewayResults> {
  const cluster: ClusterConfig = {
    backend: ctx.backend,
    regions: 2,
    partitions: 4,
    replicas: 3,
  }
  const vus = 32
  const durationS = ctx.quick ? 2 : 5
  const warmupS = ctx.quick ? 0.5 : 1
  const rounds = ctx.quick ? 1 : 3
  ctx.log(`cluster: causeway dev, ${ctx.backend}, 2 regions × 4 partitions × 3 replicas`)
  const dev = await startCluster(cluster)
  let before: ClusterProcess | undefined
  if (ctx.baseline !== undefined) {
    ctx.log(`baseline cluster: the same, from ${ctx.baseline} (${commitOf(ctx.baseline)})`)
    try {
      before = await startCluster({ ...cluster, checkout: ctx.baseline })
    } catch (error) {
      await dev.stop()
      throw error
    }
  }
  const noopScript = fileURLToPath(new URL('../noop-server.js', import.meta.url))
  const rawRedis = async (port: number, db: number): Promise<RedisRow[]> => [
    ...(await redisBenchmark(port, vus, ctx.quick ? 20_000 : 200_000, VALUE_BYTES, db)),
    ...(await ioredisBenchmark(port, vus, ctx.quick ? 1 : 5, VALUE_BYTES, db)),
  ]
  let scenarios: GatewayResults['scenarios']
  let redisRows: RedisRow[] | undefined
  let redisSource = 'a fresh redis-server on loopback, no persistence'
  let costs: CallCost[] | undefined
  let baseline: BaselineResults | undefined
  try {
    const noop = await startChild(process.execPath, [noopScript], (line) =>
      /^http:\/\//.test(line) ? line : undefined,
    )
    try {
      const plan = rows(dev.urls, noop.address, cluster.partitions, before?.urls[0])
      const scenario = (r: Row): PlannedScenario => ({
        name: r.name,
        exec: r.exec,
        vus,
        durationS,
        env: {
          CAUSEWAY_URL: dev.urls[0]!,
          KEYS: String(KEYS),
          VALUE_BYTES: String(VALUE_BYTES),
          WARMUP_S: String(warmupS),
          ...r.env,
        },
      })
      // The rows compared with each other run side by side, in alternating order per round.
      // With a baseline, each of its rows runs beside the same row of this checkout.
      const both = (names: string[]): string[] =>
        before === undefined
          ? names
          : names.flatMap((n) => [n, n.replace('raw_gateway_', 'base_gateway_')])
      const groups = [
        ['put_eventual', 'put_session'],
        ['get_eventual', 'get_session'],
        ['mix_eventual', 'mix_session'],
        [...both(['raw_gateway_get', 'raw_gateway_get_session']), 'noop_get'],
        [...both(['raw_gateway_put', 'raw_gateway_put_session']), 'noop_put'],
      ].map((names) => names.map((n) => scenario(plan.find((r) => r.name === n)!)))
      const { plan: planned, combine } = interleave(groups, rounds)
      ctx.log(
        `k6: ${planned.length} scenarios × ${durationS} s, ${vus} VUs each (${rounds} round${rounds > 1 ? 's' : ''})`,
      )
      const results = combine(await runPlan(planned)).flat()
      scenarios = results.map((r) => {
        const row = plan.find((p) => p.name === r.name)!
        return { ...r, label: row.label, group: row.group }
      })
    } finally {
      await noop.stop()
    }
    if (dev.configPath !== undefined) {
      // The Redis deployment: measure the very redis-server that leads partition 0 of region 0,
      // in a database of its own (db 1), so the cluster's keys are untouched.
      const port = await leaderRedisPort(dev.configPath)
      ctx.log(
        `raw Redis: redis-benchmark and ioredis on the cluster's leader redis-server (:${port}, db 1)`,
      )
      redisSource = "the cluster's own leader redis-server of partition 0 in region 0 (its db 1)"
      if (before?.configPath === undefined) {
        redisRows = await rawRedis(port, 1)
        costs = (await callCosts([dev], ctx.quick, vus, ctx.log))[0]
      } else {
        // Both clusters' leaders, and both clusters' calls, in turns.
        const basePort = await leaderRedisPort(before.configPath)
        ctx.log(`baseline: redis-benchmark on its leader redis-server (:${basePort}, db 1)`)
        const benchmarks = [
          await redisBenchmark(port, vus, ctx.quick ? 20_000 : 200_000, VALUE_BYTES, 1),
          await redisBenchmark(basePort, vus, ctx.quick ? 20_000 : 200_000, VALUE_BYTES, 1),
        ]
        const rounds = ctx.quick ? 1 : 3
        ctx.log(`ioredis on both leaders, ${rounds} round${rounds > 1 ? 's' : ''} in turns`)
        const io = await ioredisRounds([port, basePort], vus, ctx.quick ? 1 : 5, rounds)
        redisRows = [...benchmarks[0]!, ...io[0]!]
        const both = await callCosts([dev, before], ctx.quick, vus, ctx.log)
        costs = both[0]
        baseline = {
          checkout: ctx.baseline!,
          commit: commitOf(ctx.baseline!),
          redis: [...benchmarks[1]!, ...io[1]!],
          redisSource:
            "the baseline cluster's leader redis-server of partition 0 in region 0 (its db 1)",
          costs: both[1]!,
        }
      }
    }
  } finally {
    await Promise.all([dev.stop(), before?.stop()])
  }
  if (redisRows === undefined) {
    ctx.log('raw Redis: redis-benchmark and ioredis on a fresh redis-server')
    const redis = await startRedis()
    try {
      redisRows = await rawRedis(redis.port, 0)
    } finally {
      await redis.stop()
    }
  }
  return {
    cluster,
    vus,
    durationS,
    warmupS,
    rounds,
    scenarios,
    redis: redisRows,
    redisSource,
    ...(costs === undefined ? {} : { costs }),
    ...(baseline === undefined ? {} : { baseline }),
  }
}

function report(r: GatewayResults): string {
  const by = (name: string): ScenarioResult | undefined => r.scenarios.find((s) => s.name === name)
  const tput = (name: string): number => by(name)?.throughput ?? NaN
  const ratioRows = [
    ['GET', 'get_session', 'get_eventual'],
    ['PUT', 'put_session', 'put_eventual'],
    ['50:50 GET/PUT', 'mix_session', 'mix_eventual'],
  ].map(([op, session, eventual]) => [
    op!,
    whole(tput(session!)),
    whole(tput(eventual!)),
    times(tput(session!) / tput(eventual!)),
    fixed(by(session!)?.latency.avg),
    fixed(by(eventual!)?.latency.avg),
  ])
  const redisOps = (client: string, op: string): number =>
    r.redis.find((x) => x.client === client && x.op === op)?.opsPerSec ?? NaN
  const limitRows = [
    ['GET', 'get_eventual', 'raw_gateway_get', 'noop_get', 'GET'],
    ['PUT', 'put_eventual', 'raw_gateway_put', 'noop_put', 'SET'],
  ].map(([op, sdk, raw, noop, redisOp]) => [
    op!,
    whole(tput(sdk!)),
    whole(tput(raw!)),
    whole(tput(noop!)),
    times(tput(raw!) / tput(noop!)),
    whole(redisOps('ioredis', redisOp!)),
    whole(redisOps('redis-benchmark', redisOp!)),
  ])
  const all = r.scenarios.map((s) => [
    s.group,
    s.label,
    whole(s.throughput),
    fixed(s.latency.avg),
    fixed(s.latency.p50),
    fixed(s.latency.p99),
    fixed(s.readWaitMs, 3),
    `${(s.failed * 100).toFixed(2)}%`,
  ])
  const againstRedis = r.cluster.backend === 'redis' ? redisRatios(r, tput, redisOps) : []
  const costs = r.costs === undefined ? [] : costTable(r)
  return [
    `One \`causeway dev\` cluster (${r.cluster.backend}; ${r.cluster.regions} regions × ${r.cluster.partitions} partitions × ${r.cluster.replicas} replicas, no injected lag), ` +
      `${r.vus} k6 virtual users (half homed in each region), each doing one call at a time; ${r.durationS} s per row, the first ${r.warmupS} s not recorded, ${r.rounds} round${r.rounds > 1 ? 's (medians shown)' : ''}. ` +
      `16-byte keys over ${KEYS.toLocaleString('en-US')} keys, ${VALUE_BYTES}-byte values. The rows ran in one k6 run, each pair that is compared side by side in alternating order.`,
    '',
    '**Session guarantees against eventual consistency** (the SDK in every k6 VU; throughput in calls/s, latency in ms):',
    '',
    table(
      [
        'operation',
        'session ops/s',
        'eventual ops/s',
        'session / eventual',
        'session avg ms',
        'eventual avg ms',
      ],
      ratioRows,
    ),
    '',
    `**How close to the limits of this machine** (same load generator, same VUs; Redis with the same concurrency, measured on ${r.redisSource}):`,
    '',
    table(
      [
        'operation',
        'SDK → gateway ops/s',
        'plain HTTP → gateway',
        'plain HTTP → Fastify no-op',
        'gateway / no-op',
        'ioredis ops/s',
        'redis-benchmark ops/s',
      ],
      limitRows,
    ),
    ...againstRedis,
    ...costs,
    '',
    'Every row:',
    '',
    table(
      ['load', 'calls', 'ops/s', 'avg ms', 'p50 ms', 'p99 ms', 'replica wait ms', 'failed'],
      all,
    ),
  ].join('\n')
}

/** The ratios of issue 15: the gateway against ioredis on the same redis-server. */
function redisRatios(
  r: GatewayResults,
  tput: (name: string) => number,
  redisOps: (client: string, op: string) => number,
): string[] {
  const base = r.baseline
  const baseOps = (op: string): number =>
    base?.redis.find((x) => x.client === 'ioredis' && x.op === op)?.opsPerSec ?? NaN
  const row = (label: string, prefix: string, op: 'get' | 'put', ioredis: number): string[] => [
    label,
    whole(ioredis),
    whole(tput(`${prefix}${op}`)),
    times(tput(`${prefix}${op}`) / ioredis),
    whole(tput(`${prefix}${op}_session`)),
    times(tput(`${prefix}${op}_session`) / ioredis),
    times(tput(`noop_${op}`) / ioredis),
  ]
  const rows: string[][] = []
  for (const [op, redisOp] of [
    ['get', 'GET'],
    ['put', 'SET'],
  ] as const) {
    const name = op.toUpperCase()
    if (base)
      rows.push(row(`${name}, before (${base.commit})`, 'base_gateway_', op, baseOps(redisOp)))
    rows.push(row(base ? `${name}, after` : name, 'raw_gateway_', op, redisOps('ioredis', redisOp)))
  }
  return [
    '',
    `**Against raw Redis on the same redis-server** (plain HTTP to region 0's gateway, ${r.vus} VUs, against ioredis GET/SET from ${r.vus} loops on one connection${base ? `; "before" is a second cluster run from ${base.checkout} at ${base.commit}, its rows interleaved with these in the same k6 run, and ioredis run on both leaders in turns, 3 rounds, medians` : ''}). The last column is the ceiling of the method: a Fastify route that does nothing, over ioredis.`,
    '',
    table(
      [
        'operation',
        'ioredis ops/s',
        'gateway eventual ops/s',
        '÷ ioredis',
        'gateway session ops/s',
        '÷ ioredis',
        'Fastify no-op ÷ ioredis',
      ],
      rows,
    ),
  ]
}

/** The Redis commands and CPU per session call, before (baseline) and after. */
function costTable(r: GatewayResults): string[] {
  const list = (perCall: Record<string, number>): string =>
    Object.entries(perCall)
      .filter(([, n]) => n >= 0.005)
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(', ') || '–'
  const rows = (costs: CallCost[], label: string): string[][] =>
    costs.map((c) => [
      `${c.op}${label}`,
      String(c.concurrency),
      fixed(total(c.roundTrips)),
      list(c.roundTrips),
      fixed(total(c.inScripts)),
      fixed(total(c.replicated)),
      whole(c.gatewayCpuMs),
      whole(c.redisCpuMs),
    ])
  const base = r.baseline
  const all = [
    ...(base?.costs ? rows(base.costs, `, before (${base.commit})`) : []),
    ...rows(r.costs!, base ? ', after' : ''),
  ]
  return [
    '',
    `**Redis commands per session call** (the SDK in Node, one call at a time and ${r.vus} at a time, each from its own client and session; every redis-server watched with \`MONITOR\`; shipping-lease renewals left out). Round trips are commands a gateway sent, in scripts what Lua ran, replicated what followers applied from their leader's stream; CPU is user + system time of the two gateway processes and of all ${r.cluster.regions * r.cluster.partitions * r.cluster.replicas} redis-servers per 1,000 calls, in passes without \`MONITOR\`${base ? " (3 of them, in turns with the baseline cluster's, the median)" : ''}.`,
    '',
    table(
      [
        'call',
        'at a time',
        'round trips',
        'of which',
        'in scripts',
        'replicated',
        'gateway CPU ms / 1,000',
        'Redis CPU ms / 1,000',
      ],
      all,
    ),
  ]
}

export const gatewaySuite: Suite<GatewayResults> = {
  name: 'gateway',
  title: 'Gateway throughput: session vs eventual, and the limits of this machine',
  estimateS: (quick) => (quick ? 30 : 200),
  measure: run,
  report: (results) => ({ markdown: report(results), charts: [] }),
}
