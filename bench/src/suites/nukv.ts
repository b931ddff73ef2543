/**
 * Suite `nukv`: the NuKV evaluation (paper section 6) on Causeway. Two regions × three
 * replicas, 16-byte keys, 64-byte values; every k6 VU is one client thread with a real SDK
 * session, homed in one region, that picks put or get at random (50:50 unless swept) and, for
 * reads, one of its region's replicas at random, as the paper's clients do. The seven cases of
 * Table 1: E, and M/E, E/M, M/M (write guarantee / read guarantee) without HLC (a cluster
 * started with `--without-hlc`: writes wait for their dependencies) and with HLC (the normal
 * cluster). Client load stepped as in Figures 2–3, 100% local traffic and 10% remote traffic
 * (emulated 16 ms round trip between regions, both for shipping and for a client calling the
 * other region), and the write-proportion sweep of Figures 6–7. Both clusters run side by side
 * and one k6 run interleaves every case at every point; each case is compared with E measured
 * on its own cluster at the same point.
 */
import { type ClusterConfig, type ClusterProcess, startCluster } from '../cluster-process.js'
import { type PlannedScenario, type ScenarioResult, interleave, runPlan } from '../k6-runner.js'
import { groupedBars, lineChart } from '../report/chart.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import type { Chart, Suite, SuiteContext } from '../suite.js'
import { CASES, type CaseName, paperLatencyByThreads, paperLatencyByWrites } from './nukv-paper.js'

/**
 * `local`: every call in the client's home region. `remote`: 10% of calls in the other region,
 * the client paying the inter-region round trip to get there (the paper's setup). `near`: the
 * same 10%, but the client reaches the other region as fast as its own (a client between the
 * two, or one that moved), so shipping is slower than the client and session guarantees wait.
 */
type Traffic = 'local' | 'remote' | 'near'

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
  /** Mean wait of a put at its leader for its dependencies (the cases without HLC only). */
  writeWaitMs: number | undefined
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
  /** Interleaved rounds per case and point; each number is the median over them. */
  rounds: number
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
  const writes = quick ? [] : [0, 0.25, 0.75, 1] // 0.5 comes from the load sweep
  const load: Point[] = []
  const sweep: Point[] = []
  for (const traffic of ['local', 'remote'] as const) {
    for (const t of threads) load.push({ traffic, threads: t, writeRatio: 0.5 })
    for (const w of writes) sweep.push({ traffic, threads: sweepThreads, writeRatio: w })
  }
  // The harsher variant, at the headline load only.
  sweep.push({ traffic: 'near', threads: sweepThreads, writeRatio: 0.5 })
  return { load, sweep, threads, sweepThreads }
}

function clusterConfig(ctx: SuiteContext, hlc: boolean): ClusterConfig {
  return {
    backend: ctx.backend,
    regions: REGIONS,
    partitions: 8,
    replicas: 3,
    wanDelayMs: WAN_ONE_WAY_MS,
    withoutHlc: !hlc,
  }
}

type Run = NukvRow['run']
const RUNS: Run[] = ['hlc', 'without-hlc']
const BASES = Object.keys(LEVELS) as (keyof typeof LEVELS)[]

/**
 * Both clusters run side by side (the idle one costs next to nothing) and one k6 run measures
 * all seven cases, plus E on each cluster, interleaved at every load point.
 */
async function run(ctx: SuiteContext): Promise<NukvResults> {
  const durationS = ctx.quick ? 2.5 : 3
  const warmupS = 1
  const rounds = ctx.quick ? 1 : 2
  const { load, sweep } = points(ctx.quick)
  const all = [...load, ...sweep]
  const runs = RUNS
  const configs = runs.map((r) => clusterConfig(ctx, r === 'hlc'))
  const cases = runs.flatMap((run) => BASES.map((base) => ({ run, base })))
  const groups = (urls: string[][]): PlannedScenario[][] =>
    all.map((point) =>
      cases.map(({ run, base }) => ({
        name: scenarioName(run.replace('-', '_'), base, point),
        exec: 'mixed' as const,
        vus: point.threads * REGIONS,
        durationS,
        env: {
          CAUSEWAY_URL: urls[runs.indexOf(run)]![0]!,
          READ_LEVEL: LEVELS[base].read,
          WRITE_LEVEL: LEVELS[base].write,
          WRITE_RATIO: String(point.writeRatio),
          REMOTE_RATIO: point.traffic === 'local' ? '0' : '0.1',
          REMOTE_RTT_MS: point.traffic === 'remote' ? String(2 * WAN_ONE_WAY_MS) : '0',
          REPLICA: 'random',
          HOME_REGION: 'spread',
          KEYS: String(KEYS),
          KEY_BYTES: '16',
          VALUE_BYTES: '64',
          WARMUP_S: String(warmupS),
          WITHOUT_HLC: run === 'hlc' ? 'false' : 'true',
        },
      })),
    )
  ctx.log(
    `clusters: ${runs.map((r) => (r === 'hlc' ? 'causeway dev' : 'causeway dev --without-hlc')).join(' and ')} ` +
      `(${ctx.backend}, 2 regions × 8 partitions × 3 replicas, WAN ${configs[0]!.wanDelayMs} ms one way)`,
  )
  const devs: ClusterProcess[] = []
  let results: ScenarioResult[][]
  try {
    // Started together: a Redis cluster is 48 redis-servers and its gateways.
    const started = await Promise.allSettled(configs.map((config) => startCluster(config)))
    for (const s of started) if (s.status === 'fulfilled') devs.push(s.value)
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw failed.reason
    const { plan, combine } = interleave(groups(devs.map((d) => d.urls)), rounds)
    ctx.log(
      `k6: ${plan.length} scenarios × ${durationS} s (${all.length} points × ${cases.length} cases × ${rounds} round${rounds > 1 ? 's' : ''})`,
    )
    results = combine(await runPlan(plan))
  } finally {
    await Promise.all(devs.map((d) => d.stop()))
  }
  const measured = all.flatMap((point, g) =>
    cases.map(({ run, base }, i) => ({ run, base, point, r: results[g]![i]! })),
  )
  const eventual = (run: Run, p: Point): ScenarioResult | undefined =>
    measured.find(
      (x) =>
        x.run === run &&
        x.base === 'E' &&
        x.point.traffic === p.traffic &&
        x.point.threads === p.threads &&
        x.point.writeRatio === p.writeRatio,
    )?.r
  const rows = measured.map(({ run, base, point, r }): NukvRow => {
    const e = eventual(run, point)
    return {
      case: caseName(base, run === 'hlc'),
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
      writeWaitMs: r.writeWaitMs,
      failed: r.failed,
      latencyVsE: e ? r.latency.avg / e.latency.avg : NaN,
      throughputVsE: e ? r.throughput / e.throughput : NaN,
    }
  })
  return {
    clusters: configs,
    durationS,
    warmupS,
    rounds,
    remoteRttMs: 2 * WAN_ONE_WAY_MS,
    keys: KEYS,
    rows,
  }
}

const TRAFFIC: Record<Traffic, string> = {
  local: '100% local',
  remote: '10% remote',
  near: '10% remote, no client delay',
}

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
        'write wait ms',
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
          x?.run === 'without-hlc' ? fixed(x.writeWaitMs, 3) : '–',
          fixed(paper),
          paper && paperE ? times(paper / paperE) : traffic === 'local' ? '≤ +1 ms' : 'n/a',
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
        .filter((x) => x.threadsPerRegion === sweepThreads && x.traffic !== 'near')
        .map((x) => x.writeRatio),
    ),
  ].sort((a, b) => a - b)
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
    `Setup: 2 regions × 3 replicas (8 partitions), \`causeway dev ${{ memory: '--memory', disk: '--data DIR', redis: '--backend redis' }[r.clusters[0]!.backend]} --wan-delay ${r.clusters[0]!.wanDelayMs}\` ` +
      `for the HLC cases and a second one with \`--without-hlc\` for M/E, E/M, M/M, both running side by side; 16-byte keys over ${r.keys.toLocaleString('en-US')} keys, 64-byte values. ` +
      `Each k6 VU is one client thread with its own SDK session, homed in one region; reads pick one of the region's 3 replicas at random. ` +
      `"10% remote": a tenth of the calls go to the other region, paying an emulated ${r.remoteRttMs} ms round trip (the paper: ~15 ms). ` +
      `Each case ran ${r.rounds} time${r.rounds > 1 ? 's' : ''} per point for ${r.durationS} s (the first ${r.warmupS} s not recorded), interleaved with the other cases of that point (on both clusters, in one k6 run) in alternating order; ` +
      `${r.rounds > 2 ? 'the numbers are medians over the rounds' : r.rounds === 2 ? 'the numbers are the mean of the two rounds' : 'one round'}. "vs E" is the ratio to E measured at the same point on the same cluster ` +
      `(E of the without-HLC cluster, for M/E, E/M, M/M). Latency is the time on the wire per call as the SDK sees it (retries and emulated delay included). ` +
      `"Replica wait" is how long a read waited for its replica to cover the session, "write wait" how long a put of the cases without HLC waited at its leader for its dependencies ` +
      `(the cost HLC saves; the HLC cases never wait), both as the gateway reports them.`,
    '',
    `**Headline: ${head} client threads per region, 50:50 put:get, 10% remote traffic** (paper: Figure 3a at ${head} threads):`,
    '',
    headline('remote'),
    '',
    `E measured on the without-HLC cluster: ${fixed(eOther('remote')?.latencyMs)} ms, ${whole(eOther('remote')?.throughputPerRegion)} ops/s per region (E is the same protocol on both clusters: the spread between the two is the noise floor).`,
    '',
    `**100% local traffic, ${head} threads per region** (paper: Figure 2, where every level stays within 1 ms of E):`,
    '',
    headline('local'),
    '',
    `**Harsher than the paper: 10% remote traffic where the client reaches the other region with no delay, ${head} threads per region.** ` +
      `Shipping still takes ${WAN_ONE_WAY_MS} ms one way, so a session call in the other region can arrive before what it depends on; ` +
      'this is where waiting shows, and where HLC spares writes from it:',
    '',
    headline('near'),
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
  const load = data.filter((x) => x.writeRatio === 0.5 && x.traffic !== TRAFFIC.near)
  const sweep = data.filter(
    (x) => x.threadsPerRegion === sweepThreads && x.traffic !== TRAFFIC.near,
  )
  const series = { field: 'case', title: 'case', sort: [...CASES] }
  const facet = { field: 'traffic', title: '', sort: ['100% local', '10% remote'] }
  const threads = { field: 'threadsPerRegion', title: 'client threads per region' }
  const writes = { field: 'writeRatio', title: 'write proportion' }
  // Overhead over E, ours and the paper's (Figure 3a), at the headline load with 10% remote.
  const head = quick ? points(quick).threads[0]! : 40
  const overhead = CASES.flatMap((c) => {
    const ours = find(r.rows, c, 'remote', head, 0.5)?.latencyVsE
    const paper = paperLatencyByThreads(c, head)
    const paperE = paperLatencyByThreads('E', head)
    return [
      { case: c, source: 'Causeway', ratio: ours },
      { case: c, source: 'NuKV paper', ratio: paper && paperE ? paper / paperE : undefined },
    ].filter((x) => x.ratio !== undefined && Number.isFinite(x.ratio))
  })
  return [
    {
      file: 'overhead-vs-paper',
      title: 'Latency over E per case: Causeway and the NuKV paper (10% remote traffic)',
      spec: groupedBars({
        rows: overhead,
        x: { field: 'case', title: 'case', sort: [...CASES] },
        y: { field: 'ratio', title: 'average latency / E' },
        group: { field: 'source', title: '', sort: ['Causeway', 'NuKV paper'] },
        title: `Latency relative to E, ${head} threads per region, 50:50, 10% remote`,
      }),
    },
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
    return 8 * (load.length + sweep.length) * (quick ? 3 : 2 * 3.5) + 20
  },
  measure: run,
  report: (results, quick) => ({
    markdown: report(results, quick),
    charts: charts(results, quick),
  }),
}
