/**
 * Suite `eunomia`: causal shipping (issue 17) measured as the Eunomia thesis does, every number a
 * ratio within one run:
 *
 * - `ordering`: the ordering service alone at saturation, the stabiliser (Alg. 3) vs a
 *   synchronous sequencer in a separate process, fed by the same number of partitions
 *   (`eunomia/ordering.ts`). Goal: >= 7.7x (the thesis: 370k vs 48k ops/s).
 * - `throughput`: write throughput of the same cluster with `--shipping causal` vs `fifo`, both
 *   clusters up side by side and measured in alternating rounds. Goal: >= 0.95x.
 * - `visibility`: a write in region 0 until it is visible in region 1, both modes, against the
 *   injected one-way WAN delay. Goal: causal p50 <= delay + theta + Delta + 5 ms.
 * - `tradeoff`: causal write throughput and remote visibility for a grid of theta and Delta.
 */
import { type Backend, type ClusterProcess, startCluster } from '../cluster-process.js'
import { type OrderingResults, measureOrdering } from '../eunomia/ordering.js'
import { measureVisibility, quantile } from '../eunomia/visibility.js'
import { type WriteLoadResult, writeLoad } from '../eunomia/write-load.js'
import { lineChart } from '../report/chart.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import type { Chart, Suite, SuiteContext } from '../suite.js'

type Mode = 'fifo' | 'causal'

/** The cluster every end-to-end case starts (with its shipping mode, theta and Delta). */
const CLUSTER = { regions: 2, partitions: 4, replicas: 2 } as const
/** The defaults of `causeway dev --shipping causal`. */
const DEFAULT_THETA_MS = 5
const DEFAULT_DELTA_MS = 10

/** One round of the throughput case. */
export interface ThroughputRound extends WriteLoadResult {
  mode: Mode
}

/** The visibility of one mode. */
export interface VisibilityRow {
  mode: Mode
  samples: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  writeMedianMs: number
  /** The latencies, sorted (for the CDF). */
  latenciesMs: number[]
}

/** One point of the theta/Delta grid. */
export interface TradeoffRow {
  thetaMs: number
  deltaMs: number
  opsPerS: number
  /** The FIFO cluster's writes/s, measured next to it. */
  fifoOpsPerS: number
  /** `opsPerS / fifoOpsPerS`: the machine's load drifts, a ratio of neighbours much less. */
  vsFifo: number
  visibilityP50Ms: number
  visibilityP99Ms: number
}

/** What the suite records. */
export interface EunomiaResults {
  backend: Backend
  cluster: typeof CLUSTER
  ordering: OrderingResults
  throughput: {
    concurrency: number
    measureS: number
    rounds: ThroughputRound[]
    fifoOpsPerS: number
    causalOpsPerS: number
    ratio: number
  }
  visibility: {
    wanDelayMs: number
    thetaMs: number
    deltaMs: number
    /** delay + theta + Delta + 5 ms: the goal for the causal p50. */
    boundMs: number
    rows: VisibilityRow[]
  }
  tradeoff: {
    wanDelayMs: number
    concurrency: number
    measureS: number
    rows: TradeoffRow[]
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const startMode = (
  backend: Backend,
  mode: Mode,
  extra: { wanDelayMs?: number; thetaMs?: number; deltaMs?: number } = {},
): Promise<ClusterProcess> =>
  startCluster({
    backend,
    ...CLUSTER,
    shipping: mode,
    ...extra,
  })

async function throughputCase(ctx: SuiteContext): Promise<EunomiaResults['throughput']> {
  const concurrency = 32
  const rounds = ctx.quick ? 1 : 5
  const warmupMs = ctx.quick ? 300 : 800
  const measureMs = ctx.quick ? 1500 : 3000
  // Both clusters up at once, so the rounds alternate without a start in between.
  const clusters = await Promise.all([
    startMode(ctx.backend, 'fifo'),
    startMode(ctx.backend, 'causal'),
  ])
  try {
    const results: ThroughputRound[] = []
    for (let r = 0; r < rounds; r++) {
      const order: Mode[] = r % 2 === 0 ? ['fifo', 'causal'] : ['causal', 'fifo']
      for (const mode of order) {
        const cluster = clusters[mode === 'fifo' ? 0 : 1]
        const result = await writeLoad({
          urls: cluster.urls,
          concurrency,
          warmupMs,
          measureMs,
          level: mode === 'causal' ? 'causal' : 'session',
          prefix: `t${r}`,
        })
        results.push({ mode, ...result })
        ctx.log(
          `throughput, ${mode}: ${whole(result.opsPerS)} writes/s (median ${fixed(result.medianMs, 1)} ms, ${result.failed} failed)`,
        )
      }
    }
    const fifoOpsPerS = median(results.filter((r) => r.mode === 'fifo').map((r) => r.opsPerS))
    const causalOpsPerS = median(results.filter((r) => r.mode === 'causal').map((r) => r.opsPerS))
    return {
      concurrency,
      measureS: measureMs / 1000,
      rounds: results,
      fifoOpsPerS,
      causalOpsPerS,
      ratio: causalOpsPerS / fifoOpsPerS,
    }
  } finally {
    await Promise.all(clusters.map((c) => c.stop()))
  }
}

async function visibilityCase(ctx: SuiteContext): Promise<EunomiaResults['visibility']> {
  const wanDelayMs = ctx.quick ? 20 : 50
  const samples = ctx.quick ? 20 : 300
  const rows: VisibilityRow[] = []
  for (const mode of ['fifo', 'causal'] as const) {
    const cluster = await startMode(ctx.backend, mode, { wanDelayMs })
    try {
      const v = await measureVisibility({ urls: cluster.urls, samples, wanDelayMs, prefix: 'vis' })
      rows.push({
        mode,
        samples: v.latenciesMs.length,
        p50Ms: v.p50Ms,
        p90Ms: quantile(v.latenciesMs, 0.9),
        p99Ms: v.p99Ms,
        writeMedianMs: v.writeMedianMs,
        latenciesMs: v.latenciesMs.map((x) => Math.round(x * 100) / 100),
      })
      ctx.log(
        `visibility, ${mode}, WAN ${wanDelayMs} ms: p50 ${fixed(v.p50Ms, 1)} ms, p99 ${fixed(v.p99Ms, 1)} ms`,
      )
    } finally {
      await cluster.stop()
    }
  }
  return {
    wanDelayMs,
    thetaMs: DEFAULT_THETA_MS,
    deltaMs: DEFAULT_DELTA_MS,
    boundMs: wanDelayMs + DEFAULT_THETA_MS + DEFAULT_DELTA_MS + 5,
    rows,
  }
}

async function tradeoffCase(ctx: SuiteContext): Promise<EunomiaResults['tradeoff']> {
  const wanDelayMs = 20
  const concurrency = 32
  const thetas = ctx.quick ? [50] : [1, 5, 20, 50]
  const deltas = ctx.quick ? [10] : [1, 10, 50]
  const warmupMs = ctx.quick ? 300 : 800
  const measureMs = ctx.quick ? 800 : 2500
  const samples = ctx.quick ? 10 : 60
  const rows: TradeoffRow[] = []
  // A FIFO cluster stays up throughout: each point's throughput is measured next to its own.
  const fifo = await startMode(ctx.backend, 'fifo', { wanDelayMs })
  const load = (urls: readonly string[], level: string, prefix: string) =>
    writeLoad({ urls, concurrency, warmupMs, measureMs, level, prefix })
  try {
    let n = 0
    for (const deltaMs of deltas)
      for (const thetaMs of thetas) {
        const cluster = await startMode(ctx.backend, 'causal', { wanDelayMs, thetaMs, deltaMs })
        try {
          // Alternate which goes first, so neither always follows a cluster start.
          const first = n++ % 2 === 0
          const before = first ? await load(fifo.urls, 'session', `f${n}`) : undefined
          const causal = await load(cluster.urls, 'causal', 'tr')
          const fifoLoad = before ?? (await load(fifo.urls, 'session', `f${n}`))
          const v = await measureVisibility({
            urls: cluster.urls,
            samples,
            wanDelayMs,
            prefix: 'trv',
          })
          rows.push({
            thetaMs,
            deltaMs,
            opsPerS: causal.opsPerS,
            fifoOpsPerS: fifoLoad.opsPerS,
            vsFifo: causal.opsPerS / fifoLoad.opsPerS,
            visibilityP50Ms: v.p50Ms,
            visibilityP99Ms: v.p99Ms,
          })
          ctx.log(
            `tradeoff, theta ${thetaMs} ms, Delta ${deltaMs} ms: ${whole(causal.opsPerS)} writes/s (fifo ${whole(fifoLoad.opsPerS)}), visibility p50 ${fixed(v.p50Ms, 1)} ms`,
          )
        } finally {
          await cluster.stop()
        }
      }
  } finally {
    await fifo.stop()
  }
  return { wanDelayMs, concurrency, measureS: measureMs / 1000, rows }
}

const verdict = (met: boolean): string => (met ? '**met**' : '**not met**')

function report(results: EunomiaResults, quick: boolean): { markdown: string; charts: Chart[] } {
  const { ordering: o, throughput: t, visibility: v, tradeoff: tr } = results
  const causal = v.rows.find((r) => r.mode === 'causal')
  const fifo = v.rows.find((r) => r.mode === 'fifo')
  const lines = [
    `Two regions × ${CLUSTER.partitions} partitions × ${CLUSTER.replicas} replicas (${results.backend} backend) for the end-to-end cases; every goal is a ratio or a bound within this one run${quick ? ' (a `--quick` run: short windows, one round, few samples)' : ''}.`,
    '',
    '| goal | measured | verdict |',
    '|---|--:|---|',
    `| ordering service vs a synchronous sequencer >= 7.7x | ${times(o.ratio)} | ${verdict(o.ratio >= 7.7)} |`,
    `| causal vs fifo write throughput >= 0.95x | ${times(t.ratio)} | ${verdict(t.ratio >= 0.95)} |`,
    `| causal remote visibility p50 <= delay + theta + Delta + 5 ms = ${v.boundMs} ms | ${fixed(causal?.p50Ms, 1)} ms | ${verdict((causal?.p50Ms ?? Infinity) <= v.boundMs)} |`,
    '',
    '### Ordering service at saturation',
    '',
    `${o.partitions} partitions, each on its own TCP connection to the service in a child process. The sequencer answers each request with the next number and the partition waits for it before its next operation; the stabiliser (the gateway's own \`Stabiliser\`) takes hybrid-clock-stamped labels in batches every ${o.batchMs} ms and, every theta = ${o.thetaMs} ms, orders what is stable and serialises it as the label envelopes a leader ships. Counted at the service over ${o.measureS} s windows after a warm-up; services alternate, each number is the median of its rounds.`,
    '',
    table(
      ['service', 'ops/s (median)', 'rounds'],
      [
        [
          'synchronous sequencer',
          whole(o.sequencerOpsPerS),
          o.rounds
            .filter((r) => r.service === 'sequencer')
            .map((r) => whole(r.opsPerS))
            .join(', '),
        ],
        [
          'stabiliser (Eunomia)',
          whole(o.stabiliserOpsPerS),
          o.rounds
            .filter((r) => r.service === 'stabiliser')
            .map((r) => whole(r.opsPerS))
            .join(', '),
        ],
        ['ratio', times(o.ratio), 'thesis: 370k / 48k = 7.7x'],
      ],
    ),
    '',
    '### Write throughput: causal vs fifo',
    '',
    `${t.concurrency} closed-loop writers (one request in flight each) over both regions' gateways, \`PUT /v1/kv/:key\` at level \`session\` (fifo) or \`causal\`, ${t.measureS} s windows after a warm-up; both clusters up side by side, rounds alternating; medians.`,
    '',
    table(
      ['mode', 'writes/s (median)', 'rounds', 'failed'],
      (['fifo', 'causal'] as const).map((mode) => {
        const rounds = t.rounds.filter((r) => r.mode === mode)
        return [
          mode,
          whole(mode === 'fifo' ? t.fifoOpsPerS : t.causalOpsPerS),
          rounds.map((r) => whole(r.opsPerS)).join(', '),
          String(rounds.reduce((sum, r) => sum + r.failed, 0)),
        ]
      }),
    ),
    '',
    `causal / fifo: ${times(t.ratio)}.`,
    '',
    '### Remote visibility',
    '',
    `One write at a time to region 0 (keys over every partition), timed from sending it until region 1's change feed shows it; one-way WAN delay ${v.wanDelayMs} ms; causal mode with theta = ${v.thetaMs} ms, Delta = ${v.deltaMs} ms. The goal for the causal p50 is ${v.wanDelayMs} + ${v.thetaMs} + ${v.deltaMs} + 5 = ${v.boundMs} ms.`,
    '',
    table(
      ['mode', 'writes', 'p50', 'p90', 'p99', 'p50 − delay', 'write round trip (median)'],
      v.rows.map((r) => [
        r.mode,
        String(r.samples),
        `${fixed(r.p50Ms, 1)} ms`,
        `${fixed(r.p90Ms, 1)} ms`,
        `${fixed(r.p99Ms, 1)} ms`,
        `${fixed(r.p50Ms - v.wanDelayMs, 1)} ms`,
        `${fixed(r.writeMedianMs, 1)} ms`,
      ]),
    ),
    '',
    causal && fifo
      ? `Causal mode adds ${fixed(causal.p50Ms - fifo.p50Ms, 1)} ms at the median over fifo: a remote update waits for its label, which leaves once every partition of its region has passed its time (a heartbeat every Delta when idle) at the next stabilisation (every theta).`
      : '',
    '',
    '### Throughput and visibility vs theta and Delta',
    '',
    `One causal cluster per (theta, Delta), WAN delay ${tr.wanDelayMs} ms: ${tr.concurrency} writers for ${tr.measureS} s, next to the same load on a FIFO cluster that stays up throughout (the ratio is what to read: the machine's load drifts between points), then the visibility probe.`,
    '',
    table(
      [
        'theta',
        'Delta',
        'causal writes/s',
        'fifo writes/s',
        'causal / fifo',
        'visibility p50',
        'visibility p99',
      ],
      tr.rows.map((r) => [
        `${r.thetaMs} ms`,
        `${r.deltaMs} ms`,
        whole(r.opsPerS),
        whole(r.fifoOpsPerS),
        times(r.vsFifo),
        `${fixed(r.visibilityP50Ms, 1)} ms`,
        `${fixed(r.visibilityP99Ms, 1)} ms`,
      ]),
    ),
  ]
  const cdf = v.rows.flatMap((r) =>
    r.latenciesMs.map((ms, i) => ({ mode: r.mode, ms, fraction: (i + 1) / r.latenciesMs.length })),
  )
  const charts: Chart[] = [
    {
      file: 'visibility-cdf',
      title: `Remote visibility, CDF (WAN delay ${v.wanDelayMs} ms)`,
      spec: {
        ...lineChart({
          rows: cdf,
          x: { field: 'ms', title: 'write to visible in the other region (ms)' },
          y: { field: 'fraction', title: 'fraction of writes', scale: { domain: [0, 1] } },
          series: { field: 'mode', title: 'shipping', sort: ['fifo', 'causal'] },
          title: `Remote visibility, CDF (WAN delay ${v.wanDelayMs} ms)`,
        }),
        // A CDF is a step line without points.
        mark: { type: 'line', interpolate: 'step-after', strokeWidth: 1.5 },
      },
    },
    {
      file: 'tradeoff-throughput',
      title: 'Causal write throughput (over fifo) vs theta, by Delta',
      spec: lineChart({
        rows: tr.rows.map((r) => ({ ...r, delta: `${r.deltaMs} ms` })),
        x: { field: 'thetaMs', title: 'theta (ms)', scale: { type: 'log' } },
        y: { field: 'vsFifo', title: 'causal / fifo writes per second' },
        series: { field: 'delta', title: 'Delta' },
        title: 'Causal write throughput (over fifo) vs theta, by Delta',
      }),
    },
    {
      file: 'tradeoff-visibility',
      title: 'Remote visibility p50 vs theta, by Delta',
      spec: lineChart({
        rows: tr.rows.map((r) => ({ ...r, delta: `${r.deltaMs} ms` })),
        x: { field: 'thetaMs', title: 'theta (ms)', scale: { type: 'log' } },
        y: { field: 'visibilityP50Ms', title: 'visibility p50 (ms)' },
        series: { field: 'delta', title: 'Delta' },
        title: 'Remote visibility p50 vs theta, by Delta',
      }),
    },
  ]
  return { markdown: lines.join('\n'), charts }
}

/** The `eunomia` suite. */
export const eunomiaSuite: Suite<EunomiaResults> = {
  name: 'eunomia',
  title: 'Causal shipping (Eunomia): ordering service, throughput, visibility, theta/Delta',
  estimateS: (quick) => (quick ? 45 : 330),
  async measure(ctx) {
    ctx.log('case ordering: the stabiliser vs a synchronous sequencer')
    const ordering = await measureOrdering({
      partitions: 60,
      thetaMs: DEFAULT_THETA_MS,
      rounds: ctx.quick ? 1 : 3,
      warmupS: ctx.quick ? 0.5 : 1,
      measureS: ctx.quick ? 1 : 3,
      log: ctx.log,
    })
    ctx.log('case throughput: causal vs fifo')
    const throughput = await throughputCase(ctx)
    ctx.log('case visibility: a write in region 0 until visible in region 1')
    const visibility = await visibilityCase(ctx)
    ctx.log('case tradeoff: theta and Delta')
    const tradeoff = await tradeoffCase(ctx)
    return { backend: ctx.backend, cluster: CLUSTER, ordering, throughput, visibility, tradeoff }
  },
  report,
}
