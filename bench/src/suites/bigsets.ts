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
 *   single-element inserts measured one at a time and from 16 concurrent clients into our
 *   decomposed set, and one at a time into two sets stored whole as one value under one key and
 *   inserted into by read-modify-write through the same get and put (`bigsets/whole-value-sets.ts`):
 *   riak_dt's ORSWOT (what Riak sets are; the baseline the 100× target is judged against) and a
 *   plain array (not a CRDT; the least any whole-value set must read and write); then the smallest
 *   size once more on a fresh set, since sizes run in order of growth and warm-up favours later ones;
 * - reads: a full scan of 1k, 10k and 100k sets, and `has` on the largest set against a plain
 *   key read.
 *
 * Targets (issue 6): insert throughput at 100k within 15% of 1k; at least 100× the naive set at
 * 45k; `has` on a 100k set as fast as a key read. The report is `bigsets/report.ts`.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, type Causeway } from '@causeway/client/node'
import { HLC_ZERO, partitionOf } from '@causeway/core'
import { EmbeddedCluster } from '@causeway/gateway'
import { bigsetsReport } from '../bigsets/report.js'
import type { BigsetsResults, InsertRow, Level, PointRow, ScanRow } from '../bigsets/results.js'
import {
  type ValueStore,
  type WholeValueKind,
  grownValue,
  insertInto,
  survivors,
} from '../bigsets/whole-value-sets.js'
import { type ClusterConfig, startCluster } from '../cluster-process.js'
import { fixed, whole } from '../report/markdown.js'
import type { Suite, SuiteContext } from '../suite.js'

export type { BigsetsResults, InsertRow, Level, PointRow, ScanRow } from '../bigsets/results.js'

interface Plan {
  sizes: number[]
  /**
   * The size at which the ORSWOT is also written by `concurrency` clients at once (its surviving
   * inserts counted), for a comparison at equal concurrency.
   */
  concurrentWholeAt: number
  /** Interleaved rounds each size's windows are split into (see `measureInserts`). */
  rounds: number
  /** Sequential inserts measured per size. */
  sequential: number
  /** Concurrent inserts measured per size. */
  concurrent: number
  concurrency: number
  /** Whole-value inserts measured per size and set (each rewrites the whole set)... */
  wholeOps: (size: number) => number
  /** ...unless the window has run this long (ms): a whole-value insert at 100k takes long. */
  wholeMaxMs: number
  scanSizes: number[]
  scanRepeats: number
  /** Point reads of each case. */
  points: number
  /** Small keys the key reads pick from, for a set of `size` elements. */
  pointKeys: (size: number) => number
  /** Storage-level windows are this many times longer (they are much faster). */
  storageScale: number
  /** Inserts that warm the code paths before anything is measured (storage, end to end). */
  warmUp: { storage: number; endToEnd: number }
}

const FULL: Plan = {
  sizes: [1_000, 5_000, 10_000, 45_000, 100_000],
  rounds: 7,
  concurrentWholeAt: 45_000,
  sequential: 1_400,
  concurrent: 7_000,
  concurrency: 16,
  wholeOps: (size) => (size <= 10_000 ? 60 : 20),
  wholeMaxMs: 3_000,
  scanSizes: [1_000, 10_000, 100_000],
  scanRepeats: 3,
  points: 3_000,
  pointKeys: (size) => size,
  storageScale: 2,
  warmUp: { storage: 10_000, endToEnd: 2_000 },
}

/** Sizes up to 45k (the comparison point), short windows: about 20 s of the suite's own time. */
const QUICK: Plan = {
  sizes: [1_000, 10_000, 45_000],
  rounds: 1,
  concurrentWholeAt: 45_000,
  sequential: 100,
  concurrent: 400,
  concurrency: 16,
  wholeOps: (size) => (size <= 10_000 ? 10 : 6),
  wholeMaxMs: 1_500,
  scanSizes: [1_000, 10_000],
  scanRepeats: 1,
  points: 400,
  pointKeys: (size) => Math.min(size, 5_000),
  storageScale: 2,
  warmUp: { storage: 4_000, endToEnd: 800 },
}

const WRITE_BATCH = 1_000
/** The end-to-end cluster's value limit: the ORSWOT of 100k 4-byte elements is ~1.7 MB. */
const WHOLE_VALUE_MAX_BYTES = 4 * 1024 * 1024
const SPACE = 36 ** 4
const SET = 'bench:grow'
const AGAIN_SET = 'bench:grow-again'
const WHOLE_VALUE_KEYS: Record<WholeValueKind, string> = {
  orswot: 'bench:orswot-set',
  array: 'bench:array-set',
}
const WHOLE_VALUE_KINDS: WholeValueKind[] = ['orswot', 'array']
const KEY = 'bench:key'

/** The `i`-th element: a 4-character string, all distinct below 36⁴, in scattered order. */
function element(i: number): string {
  // 1,000,003 is coprime with 36⁴ = 2⁸·3⁸, so this is a permutation of 0..36⁴-1.
  return ((i * 1_000_003 + 12_345) % SPACE).toString(36).padStart(4, '0')
}

/** What a level measures through. */
export interface Driver extends ValueStore {
  level: Level
  /** The region that coordinates this driver's writes: the ORSWOT's actor. */
  actor: string
  add(name: string, elements: string[]): Promise<unknown>
  has(name: string, element: string): Promise<boolean>
  /** Every element of a set, counted. */
  scan(name: string, via: ScanRow['via']): Promise<number>
  /**
   * Waits until every replica applied what this driver wrote to set `name` and to `keys` (by
   * default both whole-value keys).
   */
  quiesce(name: string, keys?: readonly string[]): Promise<void>
}

/** The SDK over HTTP against a cluster in a child process. */
function sdkDriver(db: Causeway, url: string): Driver {
  const followers = { replica: 'follower', timeoutMs: 60_000 } as const
  return {
    level: 'end to end',
    actor: db.home.name,
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
    async quiesce(name, keys = Object.values(WHOLE_VALUE_KEYS)) {
      // A session read on each region's follower waits for what this session wrote there.
      for (const { name: region } of db.regions) {
        await db.set(name).size({ region, ...followers })
        for (const key of keys) await db.get(key, { region, ...followers })
      }
    },
  }
}

/** One replica in process, through its region service. */
export function storageDriver(cluster: EmbeddedCluster): Driver {
  const service = cluster.service(0)
  const sets = service.sets!
  const partitions = cluster.partitions
  const read = { replica: 'leader', timeoutMs: 5_000, level: 'eventual' } as const
  return {
    level: 'storage',
    actor: cluster.regionNames[0]!,
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
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
  }
}

/** A window's calls: per-call latencies and when each reply came, in ms from the start. */
interface Timed {
  latencies: number[]
  /** Completion times in order of completion (ms since the window started). */
  doneAt: number[]
  elapsedMs: number
}

/**
 * Runs `op(i)` for i in [0, count) from `concurrency` loops, starting no new call once `maxMs`
 * have passed; per-call latencies in ms (each the whole call: all the work it does).
 */
async function timed(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
  maxMs = Infinity,
): Promise<Timed> {
  const latencies: number[] = []
  const doneAt: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() - started < maxMs) {
        const i = next++
        const t = performance.now()
        await op(i)
        const now = performance.now()
        latencies.push(now - t)
        doneAt.push(now - started)
      }
    }),
  )
  return { latencies, doneAt, elapsedMs: performance.now() - started }
}

/** Parts a window's rate is the median of. */
const WINDOW_PARTS = 5

/**
 * A window's rate (calls/s): the median of the rates of its {@link WINDOW_PARTS} consecutive
 * parts (equal numbers of calls, by completion), so one collector pause or burst of other work
 * on the machine, which halves the rate of a part, does not decide the window.
 */
export function windowRate({ doneAt, elapsedMs }: Pick<Timed, 'doneAt' | 'elapsedMs'>): number {
  const n = doneAt.length
  if (n < 2 * WINDOW_PARTS) return (n / elapsedMs) * 1000
  const rates: number[] = []
  for (let part = 0; part < WINDOW_PARTS; part++) {
    const from = Math.floor((part * n) / WINDOW_PARTS)
    const to = Math.floor(((part + 1) * n) / WINDOW_PARTS)
    const spanMs = doneAt[to - 1]! - (from === 0 ? 0 : doneAt[from - 1]!)
    rates.push(((to - from) / Math.max(spanMs, 1e-3)) * 1000)
  }
  return rates.sort((a, b) => a - b)[Math.floor(WINDOW_PARTS / 2)]!
}

/** Adds elements `from..to-1` to a set in batches (not measured). */
async function fill(driver: Driver, name: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += WRITE_BATCH) {
    const batch: string[] = []
    for (let j = i; j < Math.min(to, i + WRITE_BATCH); j++) batch.push(element(j))
    await driver.add(name, batch)
  }
}

/** How long (ms) until every replica has applied what was written to set `name` and `keys`. */
async function settle(driver: Driver, name: string, keys: readonly string[]): Promise<number> {
  const t = performance.now()
  await driver.quiesce(name, keys)
  return performance.now() - t
}

/** The store's refusal of a value over its limit, if that is what `error` is. */
function tooLarge(error: unknown): { bytes: number; limit: number } | undefined {
  const e = error as { code?: unknown; details?: { bytes?: unknown; limit?: unknown } }
  if (e?.code !== 'VALUE_TOO_LARGE') return undefined
  const { bytes, limit } = e.details ?? {}
  return { bytes: Number(bytes), limit: Number(limit) }
}

/** Warms the code paths (JIT, connections) on scratch data before anything is measured. */
async function warmUp(driver: Driver, plan: Plan, wholeValues: Driver): Promise<void> {
  // JIT and connections: the first few thousand calls of a path run several times slower. The
  // sequential adds come last, right before the first measured window, which is of those.
  const inserts = driver.level === 'storage' ? plan.warmUp.storage : plan.warmUp.endToEnd
  for (const kind of WHOLE_VALUE_KINDS)
    await timed(20, 1, (i) =>
      insertInto(
        kind,
        wholeValues,
        WHOLE_VALUE_KEYS[kind],
        wholeValues.actor,
        element(600_000 + i),
      ),
    )
  await driver.put(KEY, 'a small value')
  await timed(inserts, 16, (i) => driver.add('bench:warm-up', [element(550_000 + i)]))
  await timed(inserts / 4, 1, (i) => driver.has('bench:warm-up', element(550_000 + i)))
  await timed(inserts / 4, 1, () => driver.get(KEY))
  if (wholeValues !== driver) {
    // A cluster of its own: its gets and puts warm up as ours' do.
    await wholeValues.put(KEY, 'a small value')
    await timed(inserts / 4, 1, () => wholeValues.get(KEY))
    await timed(inserts / 4, 1, () => wholeValues.put(KEY, 'a small value'))
  }
  await timed(inserts, 1, (i) => driver.add('bench:warm-up', [element(500_000 + i)]))
  await driver.quiesce('bench:warm-up')
}

/** One round's window: its calls, and how long replication took to settle after it. */
interface Round extends Timed {
  settleMs: number
  /** Whole-value sets written by several clients: the inserts that survived (see `survivors`). */
  survived?: number
  /** Whole-value sets: bytes of JSON of the value written before the round. */
  valueBytes?: number
}

/** A round's rate: {@link windowRate}, or for a round that lost inserts, the survivors per s. */
function roundRate(r: Round): number {
  return r.survived === undefined ? windowRate(r) : (r.survived / r.elapsedMs) * 1000
}

/**
 * A row from the rounds of one window: the rate is the median of the rounds' rates (each
 * {@link windowRate}), latencies are over every call of every round.
 */
function roundsRow(rounds: readonly Round[]) {
  const rates = rounds.map(roundRate).sort((a, b) => a - b)
  const latencies = rounds.flatMap((r) => r.latencies)
  const elapsedMs = rounds.reduce((sum, r) => sum + r.elapsedMs, 0)
  return {
    ...summarise(latencies, elapsedMs),
    opsPerS: rates[Math.floor(rates.length / 2)] ?? NaN,
    roundRates: rounds.map(roundRate),
    ...(rounds.some((r) => r.survived !== undefined)
      ? { survived: rounds.reduce((sum, r) => sum + (r.survived ?? 0), 0) }
      : {}),
    settleMs: Math.max(...rounds.map((r) => r.settleMs)),
  }
}

/**
 * One round of a whole-value set of `kind` at about `target` elements: written whole (not
 * measured) so that the measured inserts straddle the target, then grown by read-modify-write
 * inserts, one client. Undefined when the store refuses a value that large.
 */
async function wholeValueRound(
  driver: Driver,
  kind: WholeValueKind,
  target: number,
  count: number,
  maxMs: number,
  clients = 1,
): Promise<Round | { refused: { bytes: number; limit: number } }> {
  const key = WHOLE_VALUE_KEYS[kind]
  const initial: string[] = []
  for (let i = 0; i < target - Math.floor(count / 2); i++) initial.push(element(1_000_000 + i))
  const value = grownValue(kind, driver.actor, initial)
  const valueBytes = Buffer.byteLength(JSON.stringify(value))
  try {
    await driver.put(key, value)
    await driver.quiesce(SET)
    const next = 1_000_000 + initial.length
    const t = await timed(
      count,
      clients,
      (i) => insertInto(kind, driver, key, driver.actor, element(next + i)),
      maxMs,
    )
    const settleMs = await settle(driver, SET, [key])
    if (clients === 1) return { ...t, settleMs, valueBytes }
    const inserted = Array.from({ length: t.latencies.length }, (_, i) => element(next + i))
    return { ...t, settleMs, valueBytes, survived: await survivors(kind, driver, key, inserted) }
  } catch (error) {
    const refused = tooLarge(error)
    if (refused === undefined) throw error
    // Nothing of this size fits: write a small value back so the key stays usable.
    await driver.put(key, grownValue(kind, driver.actor, []))
    return { refused }
  }
}

/**
 * One round of ours: `sequential` inserts from 1 client, then `concurrent` from many, into set
 * `name` (elements from `base` on), each window followed by replication settling.
 */
async function decomposedRound(
  driver: Driver,
  plan: Plan,
  name: string,
  base: number,
  sequential: number,
  concurrent: number,
): Promise<[Round, Round]> {
  const seq = await timed(sequential, 1, (i) => driver.add(name, [element(base + i)]))
  const seqSettleMs = await settle(driver, name, [])
  const conc = await timed(concurrent, plan.concurrency, (i) =>
    driver.add(name, [element(base + sequential + i)]),
  )
  return [
    { ...seq, settleMs: seqSettleMs },
    { ...conc, settleMs: await settle(driver, name, []) },
  ]
}

/** Ours' two rows (1 client, `plan.concurrency` clients) from their rounds. */
function decomposedRows(
  driver: Driver,
  plan: Plan,
  target: number,
  rounds: readonly [Round, Round][],
  again: boolean,
): InsertRow[] {
  const row = (concurrency: number, which: 0 | 1): InsertRow => ({
    level: driver.level,
    store: 'decomposed',
    concurrency,
    size: target,
    ...roundsRow(rounds.map((r) => r[which])),
    ...(again ? { again } : {}),
  })
  return [row(1, 0), row(plan.concurrency, 1)]
}

/**
 * Inserts while the set grows. At each size the windows run in {@link Plan.rounds} interleaved
 * rounds (ours with 1 client, with many, then each whole-value set), and each row's rate is the
 * median of its rounds: a stretch of other work on the machine slows one round of each store,
 * not one store's whole window.
 */
async function measureInserts(
  driver: Driver,
  plan: Plan,
  log: (line: string) => void,
  wholeValues: Driver,
): Promise<InsertRow[]> {
  const rows: InsertRow[] = []
  const scale = driver.level === 'storage' ? plan.storageScale : 1
  const sequential = Math.ceil((plan.sequential * scale) / plan.rounds)
  const concurrent = Math.ceil((plan.concurrent * scale) / plan.rounds)
  const window = (sequential + concurrent) * plan.rounds
  const report = (r: InsertRow[], what: string) =>
    log(
      `${driver.level}, decomposed ${what}: 1 client ${whole(r[0]!.opsPerS)}/s, ` +
        `${plan.concurrency} clients ${whole(r[1]!.opsPerS)}/s`,
    )
  let size = 0
  let next = 0
  for (const [index, target] of plan.sizes.entries()) {
    // Fill to the target size (the windows grow the set from there), then let replication settle.
    const start = Math.max(size, target)
    const filling = performance.now()
    await fill(driver, SET, next, next + (start - size))
    next += start - size
    size = start
    await driver.quiesce(SET)
    const filledS = (performance.now() - filling) / 1000

    const ours: [Round, Round][] = []
    // Beside the largest size, in the same rounds, the smallest again on a fresh set: growth is
    // judged on these two side by side in time.
    const last = index === plan.sizes.length - 1
    const reference: [Round, Round][] = []
    const concurrentOrswot: Round[] = []
    if (last) await fill(driver, AGAIN_SET, 690_000, 690_000 + plan.sizes[0]!)
    const wholeRounds = new Map<
      WholeValueKind,
      Round[] | { refused: { bytes: number; limit: number } }
    >()
    const wholeCount = Math.max(2, Math.ceil((plan.wholeOps(target) * scale) / plan.rounds))
    for (let round = 0; round < plan.rounds; round++) {
      const big = () => decomposedRound(driver, plan, SET, next, sequential, concurrent)
      const small = () =>
        decomposedRound(
          driver,
          plan,
          AGAIN_SET,
          700_000 + round * (sequential + concurrent),
          sequential,
          concurrent,
        )
      // The two take turns going first.
      if (last && round % 2 === 1) reference.push(await small())
      ours.push(await big())
      if (last && round % 2 === 0) reference.push(await small())
      next += sequential + concurrent
      size += sequential + concurrent
      // The two whole-value sets take turns going first, so neither always follows ours.
      const kinds = (index + round) % 2 === 0 ? WHOLE_VALUE_KINDS : [...WHOLE_VALUE_KINDS].reverse()
      for (const kind of kinds) {
        const sofar = wholeRounds.get(kind) ?? []
        if (!Array.isArray(sofar)) continue
        const r = await wholeValueRound(
          wholeValues,
          kind,
          target,
          wholeCount,
          plan.wholeMaxMs / plan.rounds,
        )
        wholeRounds.set(kind, 'refused' in r ? r : [...sofar, r])
      }
      // At the comparison size, the ORSWOT from as many clients as ours: what survives of it.
      if (target === plan.concurrentWholeAt) {
        const r = await wholeValueRound(
          wholeValues,
          'orswot',
          target,
          plan.concurrency,
          plan.wholeMaxMs / plan.rounds,
          plan.concurrency,
        )
        if (!('refused' in r)) concurrentOrswot.push(r)
      }
      // Let the whole values' replication finish before the next window of ours.
      await wholeValues.quiesce(SET)
    }
    if (concurrentOrswot.length > 0) {
      const r: InsertRow = {
        level: driver.level,
        store: 'orswot',
        concurrency: plan.concurrency,
        size: target,
        valueBytes: concurrentOrswot[0]!.valueBytes!,
        ...roundsRow(concurrentOrswot),
      }
      rows.push(r)
      log(
        `${driver.level}, orswot ~${target}, ${plan.concurrency} clients: ${fixed(r.opsPerS, 1)}/s surviving (${r.survived} of ${r.ops} inserts survived)`,
      )
    }
    const decomposed = decomposedRows(driver, plan, target, ours, false)
    rows.push(...decomposed)
    report(
      decomposed,
      `${target} → ${target + window} (filled and settled in ${fixed(filledS, 1)} s)`,
    )
    for (const kind of WHOLE_VALUE_KINDS) {
      const measured = wholeRounds.get(kind)!
      const base = { level: driver.level, store: kind, concurrency: 1, size: target }
      const r: InsertRow = Array.isArray(measured)
        ? { ...base, valueBytes: measured[0]!.valueBytes!, ...roundsRow(measured) }
        : {
            ...base,
            valueBytes: measured.refused.bytes,
            ops: 0,
            opsPerS: NaN,
            meanMs: NaN,
            p95Ms: NaN,
            refused: measured.refused,
          }
      rows.push(r)
      log(
        r.refused === undefined
          ? `${driver.level}, ${kind} ~${target}: ${fixed(r.opsPerS, 1)}/s (${r.ops} inserts, ${whole(r.valueBytes! / 1024)} KiB)`
          : `${driver.level}, ${kind} ~${target}: refused, ${whole(r.refused.bytes)} bytes is over the limit of ${whole(r.refused.limit)}`,
      )
    }
    if (last) {
      const again = decomposedRows(driver, plan, plan.sizes[0]!, reference, true)
      rows.push(...again)
      report(again, `~${plan.sizes[0]!} again, on a fresh set in the same rounds`)
    }
  }
  return rows
}

/** The `i`-th of the small keys the point reads pick from. */
const pointKey = (i: number) => `bench:point:${i}`

/**
 * Point reads, one client: `has` of a random element of the largest set against a `get` of a
 * random one of as many small keys (each read finds one entry among `size`), and, as the best
 * case of a key read, a `get` of one key read over and over. The three alternate call by call, so
 * drift on a shared machine hits them alike.
 */
async function measurePoints(driver: Driver, plan: Plan, size: number): Promise<PointRow[]> {
  const keys = plan.pointKeys(size)
  let written = 0
  await timed(keys, 16, () => driver.put(pointKey(written++), 'a small value'))
  await driver.put(KEY, 'a small value')
  // A session read of a key waits for every write of the session to that key's partition, so
  // 64 keys (spread over the partitions by hash) leave no replication running into the reads.
  await driver.quiesce(SET, [
    KEY,
    ...Array.from({ length: Math.min(64, keys) }, (_, j) => pointKey(j)),
  ])
  const cases = [
    { case: 'has', size, read: (i: number) => driver.has(SET, element((i * 7919) % size)) },
    { case: 'get', size: keys, read: (i: number) => driver.get(pointKey((i * 7919) % keys)) },
    { case: 'get-one', size: 1, read: () => driver.get(KEY) },
  ] as const
  const latencies = cases.map(() => [] as number[])
  const elapsed = cases.map(() => 0)
  for (let i = 0; i < plan.points; i++) {
    for (const [c, { read }] of cases.entries()) {
      const t = performance.now()
      await read(i)
      const ms = performance.now() - t
      latencies[c]!.push(ms)
      elapsed[c]! += ms
    }
  }
  return cases.map((c, i) => {
    const s = summarise(latencies[i]!, elapsed[i]!)
    return {
      level: driver.level,
      case: c.case,
      size: c.size,
      ops: s.ops,
      meanMs: s.meanMs,
      p50Ms: s.p50Ms,
      p95Ms: s.p95Ms,
    }
  })
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

/**
 * Every measurement of one level; the whole-value sets through `wholeValues` (by default the same
 * store as ours).
 */
async function measureLevel(
  driver: Driver,
  plan: Plan,
  log: (line: string) => void,
  wholeValues: Driver = driver,
) {
  const started = performance.now()
  const phase = (what: string) =>
    log(`${driver.level}: ${what} done at ${fixed((performance.now() - started) / 1000, 1)} s`)
  await warmUp(driver, plan, wholeValues)
  phase('warm-up')
  const inserts = await measureInserts(driver, plan, log, wholeValues)
  phase('inserts')
  const points = await measurePoints(driver, plan, plan.sizes.at(-1)!)
  phase('point reads')
  const scans = await measureScans(driver, plan, log)
  phase('scans')
  return { inserts, points, scans }
}

export const bigsetsSuite: Suite<BigsetsResults> = {
  name: 'bigsets',
  title: 'CRDT sets at any size (Bigsets)',
  estimateS: (quick) => (quick ? 20 : 100),

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

    // 4 MiB values (the default is 1 MiB), so the whole-value baselines fit up to 100k elements.
    const cluster: ClusterConfig = {
      backend: ctx.backend,
      regions: 2,
      partitions: 4,
      replicas: 2,
      maxValueBytes: WHOLE_VALUE_MAX_BYTES,
    }
    // The whole-value sets get a cluster of their own, started the same way: each of their writes
    // leaves a log entry the size of the whole set in every replica (logs are not trimmed), and
    // in ours' process that heap would slow ours more with every round.
    const running = await startCluster(cluster)
    const runningWhole = await startCluster(cluster)
    try {
      const options = { defaults: { timeoutMs: 60_000 } }
      const db = await connect({ url: running.urls[0]!, ...options })
      const dbWhole = await connect({ url: runningWhole.urls[0]!, ...options })
      try {
        const endToEnd = await measureLevel(
          sdkDriver(db, running.urls[0]!),
          plan,
          ctx.log,
          sdkDriver(dbWhole, runningWhole.urls[0]!),
        )
        return {
          cluster,
          storage,
          cores: availableParallelism(),
          wholeValueMaxMs: plan.wholeMaxMs,
          rounds: plan.rounds,
          wholeValuesApart: true,
          inserts: [...atStorage.inserts, ...endToEnd.inserts],
          scans: [...atStorage.scans, ...endToEnd.scans],
          points: [...atStorage.points, ...endToEnd.points],
        }
      } finally {
        await db.close()
        await dbWhole.close()
      }
    } finally {
      await running.stop()
      await runningWhole.stop()
    }
  },

  report: bigsetsReport,
}
