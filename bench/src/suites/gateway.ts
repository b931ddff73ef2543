/**
 * Suite `gateway`: the gateway's GET and PUT throughput with session guarantees against
 * eventual consistency, in one k6 run against one cluster, and, in the same run, the limits of
 * this machine: the same load through plain k6 HTTP (no SDK) to the gateway and to a Fastify
 * route that does nothing, and raw Redis (redis-benchmark, ioredis).
 */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { startChild } from '../child-server.js'
import { type ClusterConfig, startCluster } from '../cluster-process.js'
import { type PlannedScenario, type ScenarioResult, interleave, runPlan } from '../k6-runner.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import { type RedisRow, ioredisBenchmark, redisBenchmark, startRedis } from '../redis-limits.js'
import type { Suite, SuiteContext } from '../suite.js'

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
}

/** Port of the redis-server leading partition 0 of region 0, from a Redis cluster config. */
async function leaderRedisPort(configPath: string): Promise<number> {
  const config = JSON.parse(await readFile(configPath, 'utf8')) as {
    regions: { replicas: string[][] }[]
  }
  const url = config.regions[0]?.replicas[0]?.[0]
  const port = url === undefined ? NaN : Number(new URL(url).port)
  if (!Number.isInteger(port)) throw new Error(`no leader redis-server in ${configPath}`)
  return port
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

function rows(urls: string[], noop: string): Row[] {
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
  ): Row => ({
    name,
    label,
    group,
    exec: 'raw',
    env: { RAW_URL: url, WRITE_RATIO: String(writeRatio) },
  })
  // PUTs first: they fill the key space the GETs then read.
  return [
    sdk('put_eventual', 'PUT eventual', 1, 'eventual'),
    sdk('put_session', 'PUT session', 1, 'session'),
    sdk('get_eventual', 'GET eventual', 0, 'eventual'),
    sdk('get_session', 'GET session', 0, 'session'),
    sdk('mix_eventual', '50:50 eventual', 0.5, 'eventual'),
    sdk('mix_session', '50:50 session', 0.5, 'session'),
    raw(
      'raw_gateway_get',
      'GET eventual',
      'plain HTTP → gateway',
      `${urls[0]}/v1/kv/{key}?level=eventual`,
      0,
    ),
    raw(
      'raw_gateway_put',
      'PUT eventual',
      'plain HTTP → gateway',
      `${urls[0]}/v1/kv/{key}?level=eventual`,
      1,
    ),
    raw('noop_get', 'GET', 'plain HTTP → Fastify no-op', `${noop}/noop/{key}`, 0),
    raw('noop_put', 'PUT', 'plain HTTP → Fastify no-op', `${noop}/noop/{key}`, 1),
  ]
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
  const noopScript = fileURLToPath(new URL('../noop-server.js', import.meta.url))
  const rawRedis = async (port: number, db: number): Promise<RedisRow[]> => [
    ...(await redisBenchmark(port, vus, ctx.quick ? 20_000 : 200_000, VALUE_BYTES, db)),
    ...(await ioredisBenchmark(port, vus, ctx.quick ? 1 : 5, VALUE_BYTES, db)),
  ]
  let scenarios: GatewayResults['scenarios']
  let redisRows: RedisRow[] | undefined
  let redisSource = 'a fresh redis-server on loopback, no persistence'
  try {
    const noop = await startChild(process.execPath, [noopScript], (line) =>
      /^http:\/\//.test(line) ? line : undefined,
    )
    try {
      const plan = rows(dev.urls, noop.address)
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
      const groups = [
        ['put_eventual', 'put_session'],
        ['get_eventual', 'get_session'],
        ['mix_eventual', 'mix_session'],
        ['raw_gateway_get', 'noop_get'],
        ['raw_gateway_put', 'noop_put'],
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
      redisRows = await rawRedis(port, 1)
      redisSource = "the cluster's own leader redis-server of partition 0 in region 0 (its db 1)"
    }
  } finally {
    await dev.stop()
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
  return { cluster, vus, durationS, warmupS, rounds, scenarios, redis: redisRows, redisSource }
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
    '',
    'Every row:',
    '',
    table(
      ['load', 'calls', 'ops/s', 'avg ms', 'p50 ms', 'p99 ms', 'replica wait ms', 'failed'],
      all,
    ),
  ].join('\n')
}

export const gatewaySuite: Suite<GatewayResults> = {
  name: 'gateway',
  title: 'Gateway throughput: session vs eventual, and the limits of this machine',
  estimateS: (quick) => (quick ? 30 : 200),
  measure: run,
  report: (results) => ({ markdown: report(results), charts: [] }),
}
