/**
 * Suite `bigsets`: CRDT sets that stay fast at any size (issue 6), the Bigsets paper's runs side
 * by side in one run, at two levels:
 *
 * - storage: in process, one replica of the embedded cluster (LevelDB in memory, or on disk with
 *   fsync for `--backend disk`; in memory for `--backend redis`), through its region service:
 *   what the data structure costs, without HTTP or replication;
 * - end to end: SDK → HTTP → gateway → replicas, with a follower and a second region replicating
 *   every write, against one cluster started like every other suite's (any `--backend`).
 *
 * At both levels:
 * - writes: one set grown to 1k, 5k, 10k, 45k and 100k elements of 4 bytes; at each size,
 *   single-element inserts measured one at a time and from 16 concurrent clients, for our
 *   decomposed set, against a naive set stored as one value (a JSON array under one key) and
 *   inserted into by read-modify-write, which can only be driven one at a time (concurrent
 *   read-modify-writes of one value lose inserts);
 * - reads: a full scan of 1k, 10k and 100k sets, and `has` on the largest set against a plain
 *   key read.
 *
 * Targets (issue 6): insert throughput at 100k within 15% of 1k; at least 100× the naive set at
 * 45k; `has` on a 100k set as fast as a key read.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, type Causeway } from '@causeway/client/node'
import { HLC_ZERO, partitionOf } from '@causeway/core'
import { EmbeddedCluster } from '@causeway/gateway'
import { type ClusterConfig, startCluster } from '../cluster-process.js'
import { lineChart } from '../report/chart.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import type { Suite, SuiteContext } from '../suite.js'

/** Where a row was measured (see the module comment). */
export type Level = 'storage' | 'end to end'

/** One measured window of inserts. */
export interface InsertRow {
  level: Level
  store: 'decomposed' | 'naive'
  /** Clients inserting at once. */
  concurrency: number
  /** Target size: the set holds about this many elements while measured. */
  size: number
  ops: number
  opsPerS: number
  meanMs: number
  p95Ms: number
}

/** One full scan (median of the repeats). */
export interface ScanRow {
  level: Level
  size: number
  via: 'service' | 'sdk' | 'stream'
  ms: number
  elementsPerS: number
}

/** Point reads on the largest set and on a key. */
export interface PointRow {
  level: Level
  case: 'has' | 'get'
  /** Elements of the set `has` read (0 for the key). */
  size: number
  ops: number
  meanMs: number
  p95Ms: number
}

/** What the suite records. */
export interface BigsetsResults {
  cluster: ClusterConfig
  /** What the storage level ran on. */
  storage: 'memory' | 'disk'
  inserts: InsertRow[]
  scans: ScanRow[]
  points: PointRow[]
}

interface Plan {
  sizes: number[]
  /** Sequential inserts measured per size. */
  sequential: number
  /** Concurrent inserts measured per size. */
  concurrent: number
  concurrency: number
  /** Naive inserts measured per size (each rewrites the whole set). */
  naive: (size: number) => number
  scanSizes: number[]
  scanRepeats: number
  points: number
  /** Storage-level windows are this many times longer (they are much faster). */
  storageScale: number
}

const FULL: Plan = {
  sizes: [1_000, 5_000, 10_000, 45_000, 100_000],
  sequential: 400,
  concurrent: 1_600,
  concurrency: 16,
  naive: (size) => (size <= 10_000 ? 60 : 20),
  scanSizes: [1_000, 10_000, 100_000],
  scanRepeats: 3,
  points: 2_000,
  storageScale: 4,
}

const QUICK: Plan = {
  sizes: [1_000, 10_000, 45_000],
  sequential: 120,
  concurrent: 480,
  concurrency: 16,
  naive: (size) => (size <= 10_000 ? 12 : 6),
  scanSizes: [1_000, 10_000, 45_000],
  scanRepeats: 1,
  points: 400,
  storageScale: 2,
}

const WRITE_BATCH = 1_000
const SPACE = 36 ** 4
const SET = 'bench:grow'
const NAIVE_KEY = 'bench:naive-set'
const KEY = 'bench:key'

/** The `i`-th element: a 4-character string, all distinct below 36⁴, in scattered order. */
function element(i: number): string {
  // 1,000,003 is coprime with 36⁴ = 2⁸·3⁸, so this is a permutation of 0..36⁴-1.
  return ((i * 1_000_003 + 12_345) % SPACE).toString(36).padStart(4, '0')
}

/** What a level measures through. */
interface Driver {
  level: Level
  add(name: string, elements: string[]): Promise<unknown>
  has(name: string, element: string): Promise<boolean>
  get(key: string): Promise<unknown>
  put(key: string, value: unknown): Promise<unknown>
  /** Every element of a set, counted. */
  scan(name: string, via: ScanRow['via']): Promise<number>
  /** Waits until every replica applied what was written so far. */
  quiesce(name: string): Promise<void>
}

/** The SDK over HTTP against a cluster in a child process. */
function sdkDriver(db: Causeway, url: string): Driver {
  return {
    level: 'end to end',
    add: (name, elements) => db.set(name).add(elements),
    has: async (name, e) => (await db.set(name).has(e)).found,
    get: async (key) => (await db.get(key)).value,
    put: (key, value) => db.put(key, value),
    async scan(name, via) {
      if (via === 'stream') {
        // One request, streamed by the gateway as it walks the set (the leader: no wait).
        const res = await fetch(`${url}/v1/sets/${encodeURIComponent(name)}/scan?replica=leader`)
        return ((await res.json()) as { elements: string[] }).elements.length
      }
      let n = 0
      for await (const _ of db.set(name).scan()) n++
      return n
    },
    async quiesce(name) {
      // A session read on each region's follower waits for everything this session wrote.
      for (const region of ['r0', 'r1'])
        await db.set(name).size({ region, replica: 'follower', timeoutMs: 60_000 })
      await db.get(NAIVE_KEY, { region: 'r1', replica: 'follower', timeoutMs: 60_000 })
    },
  }
}

/** One replica in process, through its region service. */
function storageDriver(cluster: EmbeddedCluster): Driver {
  const service = cluster.service(0)
  const sets = service.sets!
  const partitions = cluster.partitions
  const read = { replica: 'leader', timeoutMs: 5_000, level: 'eventual' } as const
  return {
    level: 'storage',
    add: (name, elements) =>
      sets.write({
        name,
        partition: partitionOf(name, partitions),
        op: 'add',
        elements: elements.map((e) => ({ element: e })),
        dt: HLC_ZERO,
        durability: 'leader',
        level: 'eventual',
        timeoutMs: 5_000,
      }),
    has: async (name, e) =>
      (await sets.has({ name, partition: partitionOf(name, partitions), element: e, ...read }))
        .found,
    async get(key) {
      const r = await service.read({ key, partition: partitionOf(key, partitions), ...read })
      return r.version?.value === undefined ? undefined : JSON.parse(r.version.value)
    },
    put: (key, value) =>
      service.write({
        key,
        partition: partitionOf(key, partitions),
        value: JSON.stringify(value),
        dt: HLC_ZERO,
        durability: 'leader',
        level: 'eventual',
      }),
    async scan(name) {
      const scan = await sets.scan({
        name,
        partition: partitionOf(name, partitions),
        ...read,
        limit: Number.MAX_SAFE_INTEGER,
      })
      let n = 0
      for await (const _ of scan.elements) n++
      return n
    },
    quiesce: async () => {},
  }
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
}

function summarise(latencies: number[], elapsedMs: number) {
  const sorted = [...latencies].sort((a, b) => a - b)
  return {
    ops: latencies.length,
    opsPerS: (latencies.length / elapsedMs) * 1000,
    meanMs: latencies.reduce((s, x) => s + x, 0) / Math.max(1, latencies.length),
    p95Ms: percentile(sorted, 0.95),
  }
}

/** Runs `op(i)` for i in [0, count) from `concurrency` loops; per-op latencies in ms. */
async function timed(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<{ latencies: number[]; elapsedMs: number }> {
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++
        const t = performance.now()
        await op(i)
        latencies.push(performance.now() - t)
      }
    }),
  )
  return { latencies, elapsedMs: performance.now() - started }
}

/** Adds elements `from..to-1` to a set in batches (not measured). */
async function fill(driver: Driver, name: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += WRITE_BATCH) {
    const batch: string[] = []
    for (let j = i; j < Math.min(to, i + WRITE_BATCH); j++) batch.push(element(j))
    await driver.add(name, batch)
  }
}

/** Inserts into a sorted array (the naive set's "modify"). */
function sortedInsert(values: string[], value: string): void {
  let lo = 0
  let hi = values.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (values[mid]! < value) lo = mid + 1
    else hi = mid
  }
  if (values[lo] !== value) values.splice(lo, 0, value)
}

async function naiveInsert(driver: Driver, e: string): Promise<void> {
  const set = ((await driver.get(NAIVE_KEY)) as string[] | undefined) ?? []
  sortedInsert(set, e)
  await driver.put(NAIVE_KEY, set)
}

/** Warms the code paths (JIT, connections) on scratch data before anything is measured. */
async function warmUp(driver: Driver): Promise<void> {
  // JIT and connections: the first few thousand calls of a path run several times slower.
  const inserts = driver.level === 'storage' ? 4_000 : 1_500
  await timed(inserts, 1, (i) => driver.add('bench:warm-up', [element(500_000 + i)]))
  await timed(inserts, 16, (i) => driver.add('bench:warm-up', [element(550_000 + i)]))
  await driver.put(KEY, 'a small value')
  await timed(inserts / 4, 1, (i) => driver.has('bench:warm-up', element(500_000 + i)))
  await timed(inserts / 4, 1, () => driver.get(KEY))
  await timed(20, 1, (i) => naiveInsert(driver, element(600_000 + i)))
  await driver.quiesce('bench:warm-up')
}

async function measureInserts(
  driver: Driver,
  plan: Plan,
  log: (line: string) => void,
): Promise<InsertRow[]> {
  const rows: InsertRow[] = []
  const scale = driver.level === 'storage' ? plan.storageScale : 1
  const sequential = plan.sequential * scale
  const concurrent = plan.concurrent * scale
  const window = sequential + concurrent
  let size = 0
  let next = 0
  for (const target of plan.sizes) {
    // Fill so that the measured inserts straddle the target size, then let replication settle.
    const start = Math.max(size, target - Math.floor(window / 2))
    await fill(driver, SET, next, next + (start - size))
    next += start - size
    size = start
    await driver.quiesce(SET)
    const base = next
    const seq = await timed(sequential, 1, (i) => driver.add(SET, [element(base + i)]))
    const conc = await timed(concurrent, plan.concurrency, (i) =>
      driver.add(SET, [element(base + sequential + i)]),
    )
    next += window
    size += window
    const row = (concurrency: number, t: { latencies: number[]; elapsedMs: number }) => ({
      level: driver.level,
      store: 'decomposed' as const,
      concurrency,
      size: target,
      ...summarise(t.latencies, t.elapsedMs),
    })
    rows.push(row(1, seq), row(plan.concurrency, conc))
    log(
      `${driver.level}, decomposed ~${target}: 1 client ${whole(rows.at(-2)!.opsPerS)}/s, ` +
        `${plan.concurrency} clients ${whole(rows.at(-1)!.opsPerS)}/s`,
    )

    // The naive set: written whole at the size, then grown by read-modify-write inserts.
    const count = plan.naive(target) * scale
    const values: string[] = []
    for (let i = 0; i < target - Math.floor(count / 2); i++)
      sortedInsert(values, element(1_000_000 + i))
    await driver.put(NAIVE_KEY, values)
    await driver.quiesce(SET)
    const naiveBase = 1_000_000 + values.length
    const naive = await timed(count, 1, (i) => naiveInsert(driver, element(naiveBase + i)))
    rows.push({
      level: driver.level,
      store: 'naive',
      concurrency: 1,
      size: target,
      ...summarise(naive.latencies, naive.elapsedMs),
    })
    log(`${driver.level}, naive ~${target}: ${fixed(rows.at(-1)!.opsPerS, 1)}/s`)
  }
  return rows
}

async function measurePoints(driver: Driver, plan: Plan, size: number): Promise<PointRow[]> {
  await driver.put(KEY, 'a small value')
  await driver.quiesce(SET)
  // Interleaved rounds, so drift on a shared machine hits both alike.
  const has: number[] = []
  const get: number[] = []
  let hasMs = 0
  let getMs = 0
  const rounds = 10
  for (let round = 0; round < rounds; round++) {
    const offset = round * plan.points
    const h = await timed(plan.points / rounds, 1, (i) =>
      driver.has(SET, element(((offset + i) * 7919) % size)),
    )
    const g = await timed(plan.points / rounds, 1, () => driver.get(KEY))
    has.push(...h.latencies)
    get.push(...g.latencies)
    hasMs += h.elapsedMs
    getMs += g.elapsedMs
  }
  const row = (c: PointRow['case'], latencies: number[], elapsed: number, n: number) => {
    const s = summarise(latencies, elapsed)
    return { level: driver.level, case: c, size: n, ops: s.ops, meanMs: s.meanMs, p95Ms: s.p95Ms }
  }
  return [row('has', has, hasMs, size), row('get', get, getMs, 0)]
}

async function measureScans(
  driver: Driver,
  plan: Plan,
  log: (line: string) => void,
): Promise<ScanRow[]> {
  const rows: ScanRow[] = []
  const ways: ScanRow['via'][] = driver.level === 'storage' ? ['service'] : ['sdk', 'stream']
  for (const size of plan.scanSizes) {
    const name = `bench:scan-${size}`
    await fill(driver, name, 0, size)
    await driver.quiesce(name)
    for (const via of ways) {
      const runs: number[] = []
      for (let r = 0; r < plan.scanRepeats; r++) {
        const t = performance.now()
        const n = await driver.scan(name, via)
        runs.push(performance.now() - t)
        if (n !== size) throw new Error(`scan of ${name} returned ${n} elements, not ${size}`)
      }
      const ms = [...runs].sort((a, b) => a - b)[Math.floor(runs.length / 2)]!
      rows.push({ level: driver.level, size, via, ms, elementsPerS: (size / ms) * 1000 })
      log(`${driver.level}, scan ${size} (${via}): ${fixed(ms, 1)} ms`)
    }
  }
  return rows
}

async function measureLevel(driver: Driver, plan: Plan, log: (line: string) => void) {
  await warmUp(driver)
  const inserts = await measureInserts(driver, plan, log)
  const points = await measurePoints(driver, plan, plan.sizes.at(-1)!)
  const scans = await measureScans(driver, plan, log)
  return { inserts, points, scans }
}

export const bigsetsSuite: Suite<BigsetsResults> = {
  name: 'bigsets',
  title: 'CRDT sets at any size (Bigsets)',
  estimateS: (quick) => (quick ? 45 : 90),

  async measure(ctx: SuiteContext): Promise<BigsetsResults> {
    const plan = ctx.quick ? QUICK : FULL
    const storage = ctx.backend === 'disk' ? 'disk' : 'memory'

    const dataDir =
      storage === 'disk' ? await mkdtemp(join(tmpdir(), 'causeway-bigsets-')) : undefined
    const local = await EmbeddedCluster.start({
      regions: 1,
      partitions: 1,
      replicas: 1,
      ...(dataDir === undefined ? {} : { dataDir }),
    })
    let atStorage: Awaited<ReturnType<typeof measureLevel>>
    try {
      atStorage = await measureLevel(storageDriver(local), plan, ctx.log)
    } finally {
      await local.close()
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true })
    }

    const cluster: ClusterConfig = { backend: ctx.backend, regions: 2, partitions: 4, replicas: 2 }
    const running = await startCluster(cluster)
    try {
      const db = await connect({ url: running.urls[0]!, defaults: { timeoutMs: 60_000 } })
      try {
        const endToEnd = await measureLevel(sdkDriver(db, running.urls[0]!), plan, ctx.log)
        return {
          cluster,
          storage,
          inserts: [...atStorage.inserts, ...endToEnd.inserts],
          scans: [...atStorage.scans, ...endToEnd.scans],
          points: [...atStorage.points, ...endToEnd.points],
        }
      } finally {
        await db.close()
      }
    } finally {
      await running.stop()
    }
  },

  report(results: BigsetsResults, quick: boolean) {
    const { inserts, scans, points } = results
    const levels: Level[] = ['storage', 'end to end']
    const at = (level: Level, store: InsertRow['store'], concurrency: number, size: number) =>
      inserts.find(
        (r) =>
          r.level === level &&
          r.store === store &&
          r.concurrency === concurrency &&
          r.size === size,
      )
    const sizes = [...new Set(inserts.map((r) => r.size))]
    const smallest = sizes[0]!
    const largest = sizes.at(-1)!
    const concurrency = Math.max(...inserts.map((r) => r.concurrency))
    const compare = sizes.includes(45_000) ? 45_000 : largest
    const c = results.cluster

    const insertTable = (level: Level) =>
      table(
        [
          'elements',
          'decomposed, 1 client: inserts/s',
          'mean ms',
          'p95 ms',
          `decomposed, ${concurrency} clients: inserts/s`,
          'mean ms',
          'p95 ms',
          'naive (RMW): inserts/s',
          'mean ms',
          'p95 ms',
        ],
        sizes.map((size) => {
          const s = at(level, 'decomposed', 1, size)
          const k = at(level, 'decomposed', concurrency, size)
          const n = at(level, 'naive', 1, size)
          return [
            whole(size),
            whole(s?.opsPerS),
            fixed(s?.meanMs, 3),
            fixed(s?.p95Ms, 3),
            whole(k?.opsPerS),
            fixed(k?.meanMs, 3),
            fixed(k?.p95Ms, 3),
            fixed(n?.opsPerS, 1),
            fixed(n?.meanMs, 1),
            fixed(n?.p95Ms, 1),
          ]
        }),
      )

    const targetRows = levels.flatMap((level) => {
      const growth = (k: number) =>
        (at(level, 'decomposed', k, largest)?.opsPerS ?? NaN) /
        (at(level, 'decomposed', k, smallest)?.opsPerS ?? NaN)
      const naive = at(level, 'naive', 1, compare)?.opsPerS ?? NaN
      const vsSeq = (at(level, 'decomposed', 1, compare)?.opsPerS ?? NaN) / naive
      const vsConc = (at(level, 'decomposed', concurrency, compare)?.opsPerS ?? NaN) / naive
      const has = points.find((p) => p.level === level && p.case === 'has')
      const get = points.find((p) => p.level === level && p.case === 'get')
      const hasRatio = (has?.meanMs ?? NaN) / (get?.meanMs ?? NaN)
      const verdict = (ok: boolean) => (ok ? 'met' : '**not met**')
      return [
        [
          level,
          `inserts/s at ${whole(largest)} within 15% of ${whole(smallest)}`,
          `${times(growth(1))} (1 client), ${times(growth(concurrency))} (${concurrency} clients)`,
          verdict(growth(1) >= 0.85 && growth(concurrency) >= 0.85),
        ],
        [
          level,
          `≥ 100× the naive set at ${whole(compare)}`,
          `${times(vsConc)} (${concurrency} clients; naive: 1), ${times(vsSeq)} (1 client each)`,
          verdict(vsConc >= 100),
        ],
        [
          level,
          `\`has\` on ${whole(has?.size)} elements as fast as a key read`,
          `${times(hasRatio)} the key read's mean latency`,
          verdict(hasRatio <= 1.15),
        ],
      ]
    })

    const markdown = [
      'Two levels, the same runs. **Storage**: one replica in process (the embedded cluster,',
      `LevelDB ${results.storage === 'disk' ? 'on disk, fsync per commit' : 'in memory'}), called through its region service: what the data structures`,
      `cost. **End to end**: \`causeway dev\` (${c.backend} backend, ${c.regions} regions × ${c.partitions} partitions × ${c.replicas}`,
      'replicas, so every write is also applied by a follower and shipped to the other region), driven',
      'through the SDK over HTTP from the benchmark process. Elements are 4-byte strings in scattered',
      'order. "Naive" stores the whole set as one JSON array under one key and inserts by',
      'read-modify-write (`get`, insert, `put`): the baseline the Bigsets paper measured Riak against',
      '(6.89 inserts/s at 45k elements, its Table 1). It runs one client only: concurrent',
      'read-modify-writes of one value lose inserts, while the decomposed set is a CRDT that any number',
      'of clients may write at once. Each size is reached by bulk adds (not measured) and the cluster is',
      'left to apply them everywhere before the inserts are measured around that size.',
      quick ? '\n_Quick run: smaller sets and windows; the numbers are indicative only._' : '',
      '',
      ...levels.flatMap((level) => [
        `### Inserts while the set grows (${level})`,
        '',
        insertTable(level),
        '',
      ]),
      '### Reads',
      '',
      table(
        [
          'full scan',
          'storage: ms',
          'SDK iterator (pages of 1,000): ms',
          'one streamed request: ms',
          'elements/s (streamed)',
        ],
        [...new Set(scans.map((r) => r.size))].map((size) => {
          const get = (via: ScanRow['via']) => scans.find((r) => r.size === size && r.via === via)
          return [
            whole(size),
            fixed(get('service')?.ms, 1),
            fixed(get('sdk')?.ms, 1),
            fixed(get('stream')?.ms, 1),
            whole(get('stream')?.elementsPerS),
          ]
        }),
      ),
      '',
      table(
        ['point read (one client)', 'level', 'calls', 'mean ms', 'p95 ms'],
        points.map((p) => [
          p.case === 'has' ? `\`has\` on a ${whole(p.size)}-element set` : '`get` of a small key',
          p.level,
          whole(p.ops),
          fixed(p.meanMs, 3),
          fixed(p.p95Ms, 3),
        ]),
      ),
      '',
      '### Against the targets',
      '',
      table(['level', 'target', 'measured', ''], targetRows),
    ].join('\n')

    const chartRows = inserts.map((r) => ({
      size: r.size,
      opsPerS: r.opsPerS,
      level: r.level,
      series:
        r.store === 'naive'
          ? 'naive, 1 client'
          : `ours, ${r.concurrency} client${r.concurrency === 1 ? '' : 's'}`,
    }))
    return {
      markdown,
      charts: [
        {
          file: 'inserts',
          title: 'Insert throughput while one set grows (log scales)',
          spec: lineChart({
            rows: chartRows,
            x: { field: 'size', title: 'elements in the set', scale: { type: 'log' } },
            y: { field: 'opsPerS', title: 'inserts/s', scale: { type: 'log' } },
            series: { field: 'series', title: 'store' },
            facet: { field: 'level', title: 'level', sort: ['storage', 'end to end'] },
            title: 'Insert throughput while one set grows',
          }),
        },
      ],
    }
  },
}
