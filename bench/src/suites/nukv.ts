/**
 * Suite `nukv`: the NuKV evaluation (paper section 6) on Causeway. Two regions × three
 * replicas, 16-byte keys, 64-byte values; every k6 VU is one client thread with a real SDK
 * session, homed in one region, that picks put or get at random (50:50 unless swept) and, for
 * reads, one of its region's replicas at random, as the paper's clients do. The seven cases of
 * Table 1: E, and M/E, E/M, M/M (write guarantee / read guarantee) without HLC (a cluster
 * started with `--without-hlc`: writes wait for their dependencies) and with HLC (the normal
 * cluster). Client load stepped as in Figures 2–3, 100% local traffic and 10% remote traffic
 * (emulated 16 ms round trip between regions, both for shipping and for a client calling the
 * other region), and the write-proportion sweep of Figures 6–7. Every case is compared with E
 * measured in the same cluster run, at the same load.
 */
import { type ClusterConfig, startCluster } from '../cluster-process.js'
import { type PlannedScenario, type ScenarioResult, runPlan } from '../k6-runner.js'
import { lineChart } from '../report/chart.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import type { Chart, Suite, SuiteContext } from '../suite.js'
import { CASES, type CaseName, paperLatencyByThreads, paperLatencyByWrites } from './nukv-paper.js'

type Traffic = 'local' | 'remote'

/** One measured point. */
export interface NukvRow {
  case: CaseName
  /** Which cluster run measured it (E is measured in both). */
  run: 'hlc' | 'without-hlc'
  traffic: Traffic
  threadsPerRegion: number
  writeRatio: number
  /** Total calls/s of the clients homed in one region (as the paper reports). */
  throughputPerRegion: number
  latencyMs: number
  p99Ms: number
  getMs: number | undefined
  putMs: number | undefined
  readWaitMs: number | undefined
  failed: number
  /** This row's latency over E's in the same run, traffic, load and mix. */
  latencyVsE: number
  throughputVsE: number
}

/** What the suite records. */
export interface NukvResults {
  clusters: ClusterConfig[]
  durationS: number
  warmupS: number
  remoteRttMs: number
  keys: number
  rows: NukvRow[]
}

const REGIONS = 2
const WAN_ONE_WAY_MS = 8 // `--wan-delay` takes whole ms: a 16 ms round trip (the paper: ~15 ms)
const KEYS = 10_000

interface Level {
  read: string
  write: string
}
const LEVELS: Record<'E' | 'M/E' | 'E/M' | 'M/M', Level> = {
  E: { write: 'eventual', read: 'eventual' },
  'M/E': { write: 'session', read: 'eventual' },
  'E/M': { write: 'eventual', read: 'session' },
  'M/M': { write: 'session', read: 'session' },
}

interface Point {
  traffic: Traffic
  threads: number
  writeRatio: number
}

function caseName(base: keyof typeof LEVELS, hlc: boolean): CaseName {
  return (base === 'E' || !hlc ? base : `${base}_HLC`) as CaseName
}

function scenarioName(run: string, base: string, p: Point): string {
  const c = base.replace('/', '')
  return `${run}_${c}_${p.traffic}_t${p.threads}_w${Math.round(p.writeRatio * 100)}`
}

/** The load points: the load sweep (50:50) and the write sweep (at the sweep's thread count). */
function points(quick: boolean): {
  load: Point[]
  sweep: Point[]
  threads: number[]
  sweepThreads: number
} {
  const threads = quick ? [10] : [10, 20, 30, 40, 50]
  const sweepThreads = quick ? 10 : 40
  const writes = quick ? [1] : [0, 0.25, 0.75, 1] // 0.5 comes from the load sweep
  const load: Point[] = []
  const sweep: Point[] = []
  for (const traffic of ['local', 'remote'] as const) {
    for (const t of threads) load.push({ traffic, threads: t, writeRatio: 0.5 })
    if (quick && traffic === 'local') continue
    for (const w of writes) sweep.push({ traffic, threads: sweepThreads, writeRatio: w })
  }
  return { load, sweep, threads, sweepThreads }
}

async function measureRun(
  ctx: SuiteContext,
  hlc: boolean,
  all: Point[],
  durationS: number,
  warmupS: number,
): Promise<{ cluster: ClusterConfig; rows: NukvRow[] }> {
  const cluster: ClusterConfig = {
    backend: ctx.backend,
    regions: REGIONS,
    partitions: 8,
    replicas: 3,
    wanDelayMs: WAN_ONE_WAY_MS,
    withoutHlc: !hlc,
  }
  const run = hlc ? 'hlc' : 'without-hlc'
  const planned: { scenario: PlannedScenario; base: keyof typeof LEVELS; point: Point }[] = []
  for (const point of all) {
    // Cases interleaved at each point, so E and the others see the same conditions.
    for (const base of Object.keys(LEVELS) as (keyof typeof LEVELS)[]) {
      const level = LEVELS[base]
      planned.push({
        base,
        point,
        scenario: {
          name: scenarioName(run.replace('-', '_'), base, point),
          exec: 'mixed',
          vus: point.threads * REGIONS,
          durationS,
          env: {
            READ_LEVEL: level.read,
            WRITE_LEVEL: level.write,
            WRITE_RATIO: String(point.writeRatio),
            REMOTE_RATIO: point.traffic === 'remote' ? '0.1' : '0',
            REMOTE_RTT_MS: String(2 * WAN_ONE_WAY_MS),
            REPLICA: 'random',
            HOME_REGION: 'spread',
            KEYS: String(KEYS),
            KEY_BYTES: '16',
            VALUE_BYTES: '64',
            WARMUP_S: String(warmupS),
            WITHOUT_HLC: hlc ? 'false' : 'true',
          },
        },
      })
    }
  }
  ctx.log(
    `cluster ${run}: causeway dev ${hlc ? '' : '--without-hlc '}(${ctx.backend}, 2 regions × 8 partitions × 3 replicas, WAN ${WAN_ONE_WAY_MS} ms one way); ` +
      `k6: ${planned.length} scenarios × ${durationS} s`,
  )
  const dev = await startCluster(cluster)
  let results: ScenarioResult[]
  try {
    results = await runPlan(
      planned.map((p) => ({
        ...p.scenario,
        env: { ...p.scenario.env, CAUSEWAY_URL: dev.urls[0]! },
      })),
    )
  } finally {
    await dev.stop()
  }
  const rows = results.map((r, i) => {
    const { base, point } = planned[i]!
    return { base, point, r }
  })
  const eventual = (p: Point): ScenarioResult | undefined =>
    rows.find(
      (x) =>
        x.base === 'E' &&
        x.point.traffic === p.traffic &&
        x.point.threads === p.threads &&
        x.point.writeRatio === p.writeRatio,
    )?.r
  return {
    cluster,
    rows: rows.map(({ base, point, r }) => {
      const e = eventual(point)
      return {
        case: caseName(base, hlc),
        run,
        traffic: point.traffic,
        threadsPerRegion: point.threads,
        writeRatio: point.writeRatio,
        throughputPerRegion: r.throughput / REGIONS,
        latencyMs: r.latency.avg,
        p99Ms: r.latency.p99,
        getMs: r.get?.avg,
        putMs: r.put?.avg,
        readWaitMs: r.readWaitMs,
        failed: r.failed,
        latencyVsE: e ? r.latency.avg / e.latency.avg : NaN,
        throughputVsE: e ? r.throughput / e.throughput : NaN,
      }
    }),
  }
}

async function run(ctx: SuiteContext): Promise<NukvResults> {
  const durationS = ctx.quick ? 2.5 : 8
  const warmupS = ctx.quick ? 1 : 2
  const { load, sweep } = points(ctx.quick)
  const all = [...load, ...sweep]
  const withHlc = await measureRun(ctx, true, all, durationS, warmupS)
  const without = await measureRun(ctx, false, all, durationS, warmupS)
  return {
    clusters: [withHlc.cluster, without.cluster],
    durationS,
    warmupS,
    remoteRttMs: 2 * WAN_ONE_WAY_MS,
    keys: KEYS,
    rows: [...withHlc.rows, ...without.rows],
  }
}

const TRAFFIC: Record<Traffic, string> = { local: '100% local', remote: '10% remote' }

/** The rows plotted and tabulated: E from the HLC run stands for E (the other E is in the JSON). */
function shown(rows: NukvRow[]): NukvRow[] {
  return rows.filter((r) => !(r.case === 'E' && r.run === 'without-hlc'))
}

function find(rows: NukvRow[], c: CaseName, traffic: Traffic, threads: number, writes: number) {
  return shown(rows).find(
    (r) =>
      r.case === c &&
      r.traffic === traffic &&
      r.threadsPerRegion === threads &&
      r.writeRatio === writes,
  )
}

function report(r: NukvResults, quick: boolean): string {
  const { threads, sweepThreads } = points(quick)
  const head = quick ? threads[0]! : 40
  const eOther = (traffic: Traffic) =>
    r.rows.find(
      (x) =>
        x.case === 'E' &&
        x.run === 'without-hlc' &&
        x.traffic === traffic &&
        x.threadsPerRegion === head &&
        x.writeRatio === 0.5,
    )
  const headline = (traffic: Traffic) =>
    table(
      [
        'case',
        'avg ms',
        'vs E',
        'ops/s per region',
        'vs E',
        'replica wait ms',
        'paper avg ms',
        'paper vs E',
      ],
      CASES.map((c) => {
        const x = find(r.rows, c, traffic, head, 0.5)
        const paper = traffic === 'remote' ? paperLatencyByThreads(c, head) : undefined
        const paperE = traffic === 'remote' ? paperLatencyByThreads('E', head) : undefined
        return [
          c,
          fixed(x?.latencyMs),
          times(x?.latencyVsE),
          whole(x?.throughputPerRegion),
          times(x?.throughputVsE),
          fixed(x?.readWaitMs, 3),
          fixed(paper),
          paper && paperE ? times(paper / paperE) : traffic === 'local' ? '≤ +1 ms' : '–',
        ]
      }),
    )
  const loadTable = (traffic: Traffic) =>
    table(
      [
        'case',
        ...threads.map((t) => `${t} thr: ms (vs E)`),
        ...threads.map((t) => `${t} thr: ops/s`),
      ],
      CASES.map((c) => [
        c,
        ...threads.map((t) => {
          const x = find(r.rows, c, traffic, t, 0.5)
          return `${fixed(x?.latencyMs)} (${times(x?.latencyVsE)})`
        }),
        ...threads.map((t) => whole(find(r.rows, c, traffic, t, 0.5)?.throughputPerRegion)),
      ]),
    )
  const writes = [
    ...new Set(
      shown(r.rows)
        .filter((x) => x.threadsPerRegion === sweepThreads)
        .map((x) => x.writeRatio),
    ),
  ].sort()
  const sweepTable = (traffic: Traffic) =>
    table(
      [
        'case',
        ...writes.map((w) => `w=${w}: ms (vs E)`),
        ...(traffic === 'remote' ? writes.map((w) => `paper w=${w}`) : []),
      ],
      CASES.map((c) => [
        c,
        ...writes.map((w) => {
          const x = find(r.rows, c, traffic, sweepThreads, w)
          return `${fixed(x?.latencyMs)} (${times(x?.latencyVsE)})`
        }),
        ...(traffic === 'remote'
          ? writes.map((w) => fixed(sweepThreads === 40 ? paperLatencyByWrites(c, w) : undefined))
          : []),
      ]),
    )
  const failed = r.rows.filter((x) => x.failed > 0)
  return [
    `Setup: 2 regions × 3 replicas (8 partitions), \`causeway dev --${r.clusters[0]!.backend === 'memory' ? 'memory' : r.clusters[0]!.backend} --wan-delay ${WAN_ONE_WAY_MS}\` ` +
      `for the HLC cases and the same plus \`--without-hlc\` for M/E, E/M, M/M; 16-byte keys over ${r.keys.toLocaleString('en-US')} keys, 64-byte values. ` +
      `Each k6 VU is one client thread with its own SDK session, homed in one region; reads pick one of the region's 3 replicas at random. ` +
      `"10% remote": a tenth of the calls go to the other region, paying an emulated ${r.remoteRttMs} ms round trip (the paper: ~15 ms). ` +
      `${r.durationS} s per point, the first ${r.warmupS} s not recorded. "vs E" is the ratio to E measured in the same cluster run at the same load and mix ` +
      `(E of the without-HLC run, for M/E, E/M, M/M). Latency is the time on the wire per call as the SDK sees it (retries and emulated delay included).`,
    '',
    `**Headline: ${head} client threads per region, 50:50 put:get, 10% remote traffic** (paper: Figure 3a at ${head} threads):`,
    '',
    headline('remote'),
    '',
    `E measured again in the without-HLC run: ${fixed(eOther('remote')?.latencyMs)} ms, ${whole(eOther('remote')?.throughputPerRegion)} ops/s per region (the spread between the two E runs is the noise floor).`,
    '',
    `**100% local traffic, ${head} threads per region** (paper: Figure 2, where every level stays within 1 ms of E):`,
    '',
    headline('local'),
    '',
    '**Load sweep, 50:50, 10% remote** (Figures 3a–b):',
    '',
    loadTable('remote'),
    '',
    '**Load sweep, 50:50, 100% local** (Figures 2a–b):',
    '',
    loadTable('local'),
    '',
    `**Write-proportion sweep, ${sweepThreads} threads per region, 10% remote** (Figure 7a; paper columns at 40 threads):`,
    '',
    sweepTable('remote'),
    ...(writes.length > 0 &&
    shown(r.rows).some(
      (x) => x.traffic === 'local' && x.threadsPerRegion === sweepThreads && x.writeRatio !== 0.5,
    )
      ? [
          '',
          `**Write-proportion sweep, ${sweepThreads} threads per region, 100% local** (Figure 6a):`,
          '',
          sweepTable('local'),
        ]
      : []),
    '',
    failed.length === 0
      ? 'No call failed.'
      : `Calls failed in ${failed.length} points (share per point): ${failed.map((x) => `${x.case} ${x.traffic} ${x.threadsPerRegion}thr w=${x.writeRatio}: ${(x.failed * 100).toFixed(2)}%`).join('; ')}.`,
  ].join('\n')
}

function charts(r: NukvResults, quick: boolean): Chart[] {
  const { sweepThreads } = points(quick)
  const data = shown(r.rows).map((x) => ({ ...x, traffic: TRAFFIC[x.traffic] }))
  const load = data.filter((x) => x.writeRatio === 0.5)
  const sweep = data.filter((x) => x.threadsPerRegion === sweepThreads)
  const series = { field: 'case', title: 'case', sort: [...CASES] }
  const facet = { field: 'traffic', title: '', sort: ['100% local', '10% remote'] }
  const threads = { field: 'threadsPerRegion', title: 'client threads per region' }
  const writes = { field: 'writeRatio', title: 'write proportion' }
  return [
    {
      file: 'latency-load',
      title: 'NuKV Figures 2a/3a on Causeway: latency against load',
      spec: lineChart({
        rows: load,
        x: threads,
        y: { field: 'latencyMs', title: 'average latency (ms)' },
        series,
        facet,
        title: 'Latency against load (50:50 put:get)',
      }),
    },
    {
      file: 'throughput-load',
      title: 'NuKV Figures 2b/3b on Causeway: throughput against load',
      spec: lineChart({
        rows: load,
        x: threads,
        y: { field: 'throughputPerRegion', title: 'ops/s per region' },
        series,
        facet,
        title: 'Throughput against load (50:50 put:get)',
      }),
    },
    {
      file: 'latency-writes',
      title: 'NuKV Figures 6a/7a on Causeway: latency against write proportion',
      spec: lineChart({
        rows: sweep,
        x: writes,
        y: { field: 'latencyMs', title: 'average latency (ms)' },
        series,
        facet,
        title: `Latency against write proportion (${sweepThreads} threads per region)`,
      }),
    },
    {
      file: 'throughput-writes',
      title: 'NuKV Figures 6b/7c on Causeway: throughput against write proportion',
      spec: lineChart({
        rows: sweep,
        x: writes,
        y: { field: 'throughputPerRegion', title: 'ops/s per region' },
        series,
        facet,
        title: `Throughput against write proportion (${sweepThreads} threads per region)`,
      }),
    },
  ]
}

export const nukvSuite: Suite<NukvResults> = {
  name: 'nukv',
  title:
    'NuKV reproduction (paper section 6): the cost of session guarantees, with and without HLC',
  estimateS: (quick) => {
    const { load, sweep } = points(quick)
    return 2 * 4 * (load.length + sweep.length) * ((quick ? 2.5 : 8) + 0.5) + 20
  },
  async run(ctx) {
    const results = await run(ctx)
    return { results, markdown: report(results, ctx.quick), charts: charts(results, ctx.quick) }
  },
}
