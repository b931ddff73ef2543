/**
 * Suite `dvv`: the shape of the DVV paper's Table 1 (Gonçalves et al., "DVV in Riak"), side by
 * side in one run. Many logical clients do 60% GET / 10% blind PUT / 30% UPD (GET, 50 ms pause,
 * PUT with the context) on a skewed key space with 1 KB values, over 3 regions, against:
 *
 * - **Causeway**: a siblings namespace of `causeway dev` (DVVSet per key, regions as actors),
 *   through the real SDK with its session guarantees;
 * - **VV baseline** (bench only, `dvv/baseline-server.ts`): the same workload on an in-memory
 *   3-region store whose clocks are client-id version vectors pruned as Riak prunes them;
 * - **DVV in the baseline store**: the same store with Causeway's DVVSet instead, so the DVV/VV
 *   ratios of that pair show the clocks alone, without Causeway's other work.
 *
 * Also the DVVSet README's experiment (101 interleaved writes, siblings left), and clock sizes as
 * the number of writing clients grows.
 */
import { rm, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Causeway, connect, httpTransport } from '@causeway/client/node'
import { decodeCausalContextBytes } from '@causeway/core'
import { type ChildServer, startChild } from '../child-server.js'
import { FROM_SOURCE, causewayCommand } from '../cluster-process.js'
import { BaselineRegion, type ClockMode } from '../dvv/baseline-store.js'
import {
  type InterleavedStore,
  clientIdPerValueVvStore,
  clientIdVvStore,
  dvvSetStore,
  scenarioOne,
  scenarioTwo,
  serverIdVvStore,
} from '../dvv/interleaved.js'
import { baselineTarget, causewayTarget } from '../dvv/targets.js'
import { decodeVv } from '../dvv/vv-clock.js'
import {
  DvvWorkload,
  type DvvWorkloadOptions,
  type LatencyStats,
  type SliceResult,
  median,
} from '../dvv/workload.js'
import { fixed, table, times } from '../report/markdown.js'
import type { Suite, SuiteContext } from '../suite.js'

const REGIONS = 3
const WAN_DELAY_MS = 20
const NAMESPACE = 'bench'

/** Siblings left after the 101 interleaved writes, per store. */
export interface InterleavedRow {
  scenario: 1 | 2
  serverIdVv: number
  clientIdVv: number
  clientIdPerValueVv: number
  dvvSet: number
  causeway: number
}

/** Clock size of one hot key after `writers` clients updated it, per clock. */
export interface GrowthRow {
  writers: number
  vvBytes: number
  vvEntries: number
  dvvBytes: number
}

/** One store's numbers: latencies as the median over rounds, sizes over every read. */
export interface TargetSummary {
  target: string
  get: { mean: number; p95: number }
  put: { mean: number; p95: number }
  update: { mean: number; p95: number }
  /** Mean and largest clock read, in bytes (over every read of every measured round). */
  clockBytes: { mean: number; max: number }
  /** Mean and largest number of values read from a key that had any. */
  valuesPerKey: { mean: number; max: number }
  /** Median over rounds, operations per second. */
  throughput: number
  operations: number
  errors: number
  /** Each round's numbers, for the JSON. */
  rounds: { get: LatencyStats; put: LatencyStats; update: LatencyStats; throughput: number }[]
}

/** How the suite ran. */
export interface DvvSuiteConfig extends Omit<DvvWorkloadOptions, 'seed' | 'keyPrefix'> {
  wanDelayMs: number
  backend: string
  rounds: number
  sliceMs: number
  warmupMs: number
}

/** What the suite records. */
export interface DvvSuiteResults {
  config: DvvSuiteConfig
  causeway: TargetSummary
  causewayLww: TargetSummary
  vv: TargetSummary
  dvvControl: TargetSummary
  interleaved: InterleavedRow[]
  growth: GrowthRow[]
}

/** `causeway dev` with a siblings namespace, 3 regions; resolves once every region listens. */
async function startCauseway(ctx: SuiteContext): Promise<{ server: ChildServer; urls: string[] }> {
  const urls: string[] = []
  const args = [
    ...causewayCommand(),
    'dev',
    '--regions',
    String(REGIONS),
    '--partitions',
    '4',
    '--replicas',
    '2',
    '--port',
    '0',
    '--log-level',
    'silent',
    '--siblings',
    NAMESPACE,
  ]
  let dataDir: string | undefined
  if (ctx.backend === 'redis') args.push('--backend', 'redis')
  else {
    args.push('--wan-delay', String(WAN_DELAY_MS))
    if (ctx.backend === 'disk') {
      dataDir = await mkdtemp(join(tmpdir(), 'causeway-bench-dvv-'))
      args.push('--data', dataDir)
    } else args.push('--memory')
  }
  const server = await startChild(
    process.execPath,
    args,
    (line) => {
      const m = /^region (\d+) \([^)]*\) (http:\/\/\S+)$/.exec(line)
      if (m) urls[Number(m[1])] = m[2]!
      return urls.filter(Boolean).length === REGIONS ? 'ready' : undefined
    },
    60_000,
  )
  const stop = server.stop
  return {
    server: {
      ...server,
      stop: async () => {
        await stop()
        if (dataDir) await rm(dataDir, { recursive: true, force: true })
      },
    },
    urls,
  }
}

/** The baseline server in `mode`; resolves once every region listens. */
async function startBaseline(mode: ClockMode): Promise<{ server: ChildServer; urls: string[] }> {
  // Built: dist/dvv/baseline-server.js; from source (tests, tsx): the .ts file through tsx.
  const fromSource = import.meta.url.endsWith('.ts')
  const script = fileURLToPath(
    new URL(`../dvv/baseline-server.${fromSource ? 'ts' : 'js'}`, import.meta.url),
  )
  const urls: string[] = []
  const run = fromSource ? [...FROM_SOURCE, script] : [script]
  const server = await startChild(
    process.execPath,
    [...run, '--mode', mode, '--regions', String(REGIONS), '--delay-ms', String(WAN_DELAY_MS)],
    (line) => {
      const m = /^region (\d+) (http:\/\/\S+)$/.exec(line)
      if (m) urls[Number(m[1])] = m[2]!
      return line === 'ready' ? 'ready' : undefined
    },
  )
  return { server, urls }
}

/** The interleaved-writes experiment on Causeway: two SDK clients of region 0, one fresh key. */
function causewayStore(a: Causeway, b: Causeway, key: string): InterleavedStore<string> {
  return {
    async put(client, value, context) {
      await (client === 1 ? a : b).put(key, value, { context: context ?? null })
    },
    async get() {
      const r = await a.get<string>(key)
      return { values: r.siblings ?? [], context: r.context! }
    },
  }
}

/**
 * Clock size of one key after `writers` clients each updated it (read, then write with the
 * context) in turn, each client in region `client % 3` of the baseline store, every write shipped
 * at once: client-id VVs grow with the writers until pruning caps them; a DVVSet has one entry per
 * region that wrote.
 */
export function clockGrowth(writers: number, rounds = 3): GrowthRow {
  const sizes: Record<ClockMode, { bytes: number; entries: number }> = {
    vv: { bytes: 0, entries: 0 },
    dvv: { bytes: 0, entries: 0 },
  }
  for (const mode of ['vv', 'dvv'] as const) {
    // Each write 30 s after the last, so old entries are old enough to prune as Riak would.
    let now = 1_700_000_000_000
    const regions = Array.from(
      { length: REGIONS },
      (_, d) => new BaselineRegion(d, mode, () => (now += 30_000)),
    )
    let seq = 0
    for (let round = 0; round < rounds; round++)
      for (let client = 0; client < writers; client++) {
        const home = regions[client % REGIONS]!
        const context = home.read('hot').context
        const object = home.write('hot', { value: '"v"', context, client, seq: ++seq })
        for (const other of regions) if (other !== home) other.receive('hot', object)
      }
    const context = regions[0]!.read('hot').context
    const entries =
      mode === 'vv' ? decodeVv(context).length : decodeCausalContextBytes(context).length
    sizes[mode] = { bytes: context.length, entries }
  }
  return {
    writers,
    vvBytes: sizes.vv.bytes,
    vvEntries: sizes.vv.entries,
    dvvBytes: sizes.dvv.bytes,
  }
}

function row(name: string, r: TargetSummary): string[] {
  return [
    name,
    fixed(r.get.mean),
    fixed(r.get.p95),
    fixed(r.put.mean),
    fixed(r.put.p95),
    fixed(r.update.mean),
    fixed(r.update.p95),
    fixed(r.clockBytes.mean, 0),
    fixed(r.valuesPerKey.mean, 3),
  ]
}

function ratioRow(name: string, a: TargetSummary, b: TargetSummary): string[] {
  const r = (x: number, y: number) => `**${times(x / y)}**`
  return [
    name,
    r(a.get.mean, b.get.mean),
    r(a.get.p95, b.get.p95),
    r(a.put.mean, b.put.mean),
    r(a.put.p95, b.put.p95),
    r(a.update.mean, b.update.mean),
    r(a.update.p95, b.update.p95),
    b.clockBytes.mean > 0 ? r(a.clockBytes.mean, b.clockBytes.mean) : '–',
    r(a.valuesPerKey.mean, b.valuesPerKey.mean),
  ]
}

function markdown(results: DvvSuiteResults): string {
  const c = results.config
  const header = [
    'store',
    'GET mean (ms)',
    'GET p95',
    'PUT mean',
    'PUT p95',
    'UPD mean',
    'UPD p95',
    'clock (bytes)',
    'values per key',
  ]
  const { causeway, causewayLww, vv, dvvControl } = results
  const load = (r: TargetSummary) =>
    `${r.target}: ${fixed(r.throughput, 0)} ops/s (median of rounds), ${r.operations} operations, ${r.errors} errors, largest clock ${r.clockBytes.max} bytes, most values ${r.valuesPerKey.max}`
  return [
    `${c.clients} logical clients per store (each in a home region, round robin over ${c.regions} regions, WAN delay ${c.wanDelayMs} ms), ` +
      `60% GET / 10% blind PUT / 30% UPD (GET, 50 ms pause, PUT with the context), ${c.keys} keys drawn Pareto-style as basho_bench does (20% of them get 80% of the accesses), ` +
      `${c.valueBytes ?? 1024}-byte values, a mean think time of ${c.thinkMs} ms between a client's operations. ` +
      `The stores take turns: ${c.rounds} rounds of ${fixed(c.sliceMs / 1000, 0)} s each, after ${fixed(c.warmupMs / 1000, 0)} s of warm-up each; ` +
      "latencies are medians over the rounds of each round's mean and p95, so a burst of other work on the machine does not decide a comparison; " +
      'clock sizes and values per key are over every read. ' +
      `Causeway runs \`causeway dev --siblings ${NAMESPACE}\` (${c.backend} backend) and is driven through the SDK at the \`session\` level; ` +
      'its last-writer-wins row is the same workload on keys of another namespace, in the same cluster. ' +
      'The baselines are one in-memory 3-region store with two clocks (`bench/src/dvv/`), behind the same Fastify and HTTP client: ' +
      'Riak-style objects (one client-id version vector per object for all its values, merged on conflict, pruned as Riak prunes), ' +
      "and, as the control, Causeway's DVVSet with the regions as actors.",
    '',
    table(header, [
      row('Causeway, siblings (DVV)', causeway),
      row('VV baseline (Riak: client ids, pruned)', vv),
      ratioRow('Causeway DVV / VV', causeway, vv),
      row('DVV in the baseline store', dvvControl),
      ratioRow('DVV / VV, same store', dvvControl, vv),
      row('Causeway, last-writer-wins', causewayLww),
      ratioRow('Causeway siblings / LWW', causeway, causewayLww),
    ]),
    '',
    'UPD latency is its GET plus its PUT, without the 50 ms pause. Clock: the binary size of the context a read returned ' +
      '(Causeway: `causeway-context` before base64url; VV: one (client id, counter, timestamp) varint triple per entry, as Riak keeps a timestamp per entry for pruning). ' +
      'Values per key: values a read returned, over reads of keys that had any. ' +
      'VV pruning is riak_core `vclock:prune` with the bucket defaults (small 20, big 50, young 20 s, old 1 day): clocks keep 20 to 50 entries once old enough.',
    '',
    ...[causeway, vv, dvvControl, causewayLww].map((r) => `- ${load(r)}`),
    '',
    findings(results),
    '',
    '### 101 interleaved writes (the DVVSet README experiment)',
    '',
    'One key, 101 writes from two clients taking turns. Scenario 1: C1 writes with the context of its last read and reads; another client writes blind. ' +
      'Scenario 2: A and B each write with the context of their own last read, then read. Siblings left at the end:',
    '',
    table(
      [
        'scenario',
        'Riak VV, server ids',
        'Riak VV, client ids (the baseline)',
        'VV, client ids, a clock per value',
        'DVVSet (core)',
        'Causeway (gateway)',
      ],
      results.interleaved.map((r) => [
        String(r.scenario),
        String(r.serverIdVv),
        String(r.clientIdVv),
        String(r.clientIdPerValueVv),
        String(r.dvvSet),
        String(r.causeway),
      ]),
    ),
    '',
    'Exact causality leaves 2 (the last write and the one it could not see). Riak keeps one clock per object, merged when writes conflict, ' +
      'so a write that saw a value but not its newest sibling supersedes nothing: with server ids (vnode vclocks) or client ids alike every write stays. ' +
      'Client-id clocks kept per value are exact, but each value then carries a clock that grows with the number of clients.',
    '',
    '### Clock size as writers grow',
    '',
    'One key updated (read, then write with the context) by each of N clients in turn (client i in region i mod 3), 3 rounds, writes 30 s apart, ' +
      'so that Riak pruning applies (it never drops entries younger than 20 s): the client-id clock grows with the writers until pruning holds it near 50 entries (merges of clocks pruned in other regions can hold a few more); ' +
      'the DVV clock has one entry per region.',
    '',
    table(
      ['writers', 'VV entries', 'VV clock (bytes)', 'DVV clock (bytes)', 'DVV / VV'],
      results.growth.map((g) => [
        String(g.writers),
        String(g.vvEntries),
        String(g.vvBytes),
        String(g.dvvBytes),
        times(g.dvvBytes / g.vvBytes),
      ]),
    ),
  ].join('\n')
}

/** What the numbers say, in words, from the numbers themselves. */
function findings(results: DvvSuiteResults): string {
  const { causeway, causewayLww, vv, dvvControl } = results
  const last = results.growth.at(-1)!
  return [
    `**Clocks.** Causeway's contexts average ${fixed(causeway.clockBytes.mean, 0)} bytes (largest ${causeway.clockBytes.max}): one counter per region that wrote the key, whatever the number of clients. ` +
      `The Riak-style clocks average ${fixed(vv.clockBytes.mean, 0)} bytes (largest ${vv.clockBytes.max}) and grow with the number of clients that wrote a key, until pruning stops them near 50 entries ` +
      `(${last.vvBytes} bytes with ${last.writers} writers, against ${last.dvvBytes} for DVV, in the table below).`,
    `**Values per key.** The VV store returns ${fixed(vv.valuesPerKey.mean / dvvControl.valuesPerKey.mean, 2)}× as many values per read as the same store with DVV: ` +
      'with one merged clock per object (and pruning), a write that saw a value but not a concurrent sibling supersedes neither, so causally outdated values linger (false conflicts); ' +
      'DVV keeps exactly the writes that did not see each other.',
    `**Latency.** In the same store DVV is ${times(dvvControl.get.mean / vv.get.mean)} the VV latency for GET and ${times(dvvControl.update.mean / vv.update.mean)} for UPD: ` +
      `on loopback, with VV clocks of ${fixed(vv.clockBytes.mean, 0)} bytes next to 1 KB values, the bytes a clock saves do not decide latency ` +
      '(the paper gained from moving ~1.8 KB against ~1.2 KB per object over a network, with ~800-byte clocks). ' +
      'Causeway is slower than the baseline store for reasons other than the clock (sessions, the HLC, the log, followers, LevelDB, the SDK): ' +
      `its siblings namespace costs ${times(causeway.get.mean / causewayLww.get.mean)} the latency of a last-writer-wins namespace for the same GETs and ${times(causeway.update.mean / causewayLww.update.mean)} for UPDs, ` +
      "with every read listing every sibling and every write shipping the key's whole set.",
  ].join('\n\n')
}

/** Folds a store's measured rounds into its summary. */
function summarise(target: string, rounds: readonly SliceResult[]): TargetSummary {
  const clocks = rounds.flatMap((r) => r.clockBytes)
  const values = rounds.flatMap((r) => r.values)
  const stat = (pick: (r: SliceResult) => LatencyStats) => ({
    mean: median(rounds.map((r) => pick(r).mean)),
    p95: median(rounds.map((r) => pick(r).p95)),
  })
  const sizes = (xs: number[]) => ({
    mean: xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length),
    max: xs.reduce((a, x) => Math.max(a, x), 0),
  })
  return {
    target,
    get: stat((r) => r.get),
    put: stat((r) => r.put),
    update: stat((r) => r.update),
    clockBytes: sizes(clocks),
    valuesPerKey: sizes(values),
    throughput: median(rounds.map((r) => r.throughput)),
    operations: rounds.reduce((a, r) => a + r.get.count + r.put.count + r.update.count, 0),
    errors: rounds.reduce((a, r) => a + r.errors, 0),
    rounds: rounds.map((r) => ({
      get: r.get,
      put: r.put,
      update: r.update,
      throughput: r.throughput,
    })),
  }
}

/** The suite. */
export const dvvSuite: Suite<DvvSuiteResults> = {
  name: 'dvv',
  title: 'Causal contexts: DVV vs client-id version vectors',
  estimateS: (quick) => (quick ? 28 : 210),
  report: (results) => ({ markdown: markdown(results), charts: [] }),
  async measure(ctx) {
    const config: DvvSuiteConfig = {
      clients: ctx.quick ? 100 : 150,
      regions: REGIONS,
      keys: ctx.quick ? 1_000 : 2_000,
      valueBytes: 1024,
      thinkMs: 200,
      updatePauseMs: 50,
      wanDelayMs: ctx.backend === 'redis' ? 0 : WAN_DELAY_MS,
      backend: ctx.backend,
      rounds: ctx.quick ? 1 : 6,
      sliceMs: ctx.quick ? 2_500 : 7_000,
      warmupMs: ctx.quick ? 500 : 2_000,
    }
    const transport = httpTransport({ maxSockets: 256, maxFreeSockets: 256 })
    const servers: ChildServer[] = []
    try {
      const [cw, vvStore, dvvStore] = await Promise.all([
        startCauseway(ctx),
        startBaseline('vv'),
        startBaseline('dvv'),
      ])
      servers.push(cw.server, vvStore.server, dvvStore.server)
      const options = (keyPrefix: string): DvvWorkloadOptions => ({ ...config, seed: 5, keyPrefix })
      const workloads = [
        new DvvWorkload(
          causewayTarget('Causeway, siblings', cw.urls, transport),
          options(NAMESPACE),
        ),
        new DvvWorkload(baselineTarget('VV baseline', vvStore.urls, transport), options('k')),
        new DvvWorkload(
          baselineTarget('DVV in the baseline store', dvvStore.urls, transport),
          options('k'),
        ),
        // Same cluster, a namespace that is not `siblings`: the last-writer-wins reference.
        new DvvWorkload(
          causewayTarget('Causeway, last-writer-wins', cw.urls, transport),
          options('lww'),
        ),
      ]
      for (const w of workloads) await w.open()
      ctx.log(`warm-up: ${config.warmupMs / 1000} s per store`)
      for (const w of workloads) await w.slice(config.warmupMs)
      const measured: SliceResult[][] = workloads.map(() => [])
      for (let round = 0; round < config.rounds; round++) {
        ctx.log(`round ${round + 1}/${config.rounds}: ${config.sliceMs / 1000} s per store`)
        // Each round starts with another store.
        for (let k = 0; k < workloads.length; k++) {
          const i = (round + k) % workloads.length
          measured[i]!.push(await workloads[i]!.slice(config.sliceMs))
        }
      }
      const [causeway, vv, dvvControl, causewayLww] = workloads.map((w, i) =>
        summarise(w.target.name, measured[i]!),
      ) as [TargetSummary, TargetSummary, TargetSummary, TargetSummary]

      ctx.log('101 interleaved writes')
      const a = await connect({ url: cw.urls[0]!, transport })
      const b = await connect({ url: cw.urls[0]!, transport })
      const run = `${NAMESPACE}:interleaved:${Date.now()}`
      const onCauseway = [
        await scenarioOne(causewayStore(a, b, `${run}:1`)),
        await scenarioTwo(causewayStore(a, b, `${run}:2`)),
      ]
      const interleaved: InterleavedRow[] = []
      for (const scenario of [1, 2] as const) {
        const play = scenario === 1 ? scenarioOne : scenarioTwo
        interleaved.push({
          scenario,
          serverIdVv: await play(serverIdVvStore()),
          clientIdVv: await play(clientIdVvStore()),
          clientIdPerValueVv: await play(clientIdPerValueVvStore()),
          dvvSet: await play(dvvSetStore()),
          causeway: onCauseway[scenario - 1]!,
        })
      }
      const growth = [3, 10, 30, 100, 300].map((writers) => clockGrowth(writers))
      return { config, causeway, causewayLww, vv, dvvControl, interleaved, growth }
    } finally {
      await Promise.all(servers.map((s) => s.stop()))
      await transport.close?.()
    }
  },
}
