/**
 * The `bigsets` suite's section of `docs/benchmarks.md`: what was compared and how, the tables,
 * the ratios against both whole-value sets (with the paper's), the targets, and for each missed
 * target the numbers that say why.
 */
import { lineChart } from '../report/chart.js'
import { fixed, table, times, whole } from '../report/markdown.js'
import type { SuiteReport } from '../suite.js'
import type { BigsetsResults, InsertRow, Level, Store } from './results.js'

/**
 * `has` counts as fast as a key read within this factor of its median latency (the mean, shown
 * too, moves with the few calls a collector pause lands on: 0.98–1.11× over six runs where the
 * median stayed at 1.03–1.05×).
 */
const HAS_TOLERANCE = 1.1

/** The Bigsets paper's Table 1 (one worker, one key): inserts/s by set size. */
const PAPER: Record<number, { riakSets: number; bigsets: number }> = {
  5_000: { riakSets: 81.57, bigsets: 7094.66 },
  10_000: { riakSets: 45.58, bigsets: 1040.0 },
  45_000: { riakSets: 6.89, bigsets: 1060.67 },
}

const LEVELS: Level[] = ['storage', 'end to end']
/** The level the targets are judged at: the client's view, as the paper measured. */
const JUDGED_LEVEL: Level = 'end to end'

const STORE_NAMES: Record<Store, string> = {
  decomposed: 'ours',
  orswot: 'ORSWOT as one value',
  array: 'array (not a CRDT)',
}

/** A row's inserts/s, NaN when it was not measured (refused, or null in saved JSON). */
const rate = (row: InsertRow | undefined): number =>
  row === undefined || row.refused !== undefined ? NaN : (row.opsPerS ?? NaN)
const mean = (row: InsertRow | undefined): number =>
  row === undefined || row.refused !== undefined ? NaN : (row.meanMs ?? NaN)
const kib = (bytes: number | undefined) => (bytes === undefined ? '–' : whole(bytes / 1024))
const percent = (x: number) => `${whole(x * 100)}%`

export function bigsetsReport(results: BigsetsResults, quick: boolean): SuiteReport {
  const { inserts, scans, points } = results
  const at = (level: Level, store: Store, concurrency: number, size: number) =>
    inserts.find(
      (r) =>
        r.level === level &&
        r.store === store &&
        r.concurrency === concurrency &&
        r.size === size &&
        r.again !== true,
    )
  /** Ours at the smallest size, measured again on a fresh set at the end of the run. */
  const again = (level: Level, concurrency: number) =>
    inserts.find((r) => r.level === level && r.concurrency === concurrency && r.again === true)
  const sizes = [...new Set(inserts.map((r) => r.size))]
  const smallest = sizes[0]!
  const largest = sizes.at(-1)!
  const concurrency = Math.max(...inserts.map((r) => r.concurrency))
  const compare = sizes.includes(45_000) ? 45_000 : largest
  const c = results.cluster
  const cores =
    results.cores === undefined ? "this machine's cores" : `this machine's ${results.cores} cores`
  const orswotAtCompare = at('storage', 'orswot', 1, compare)
  const bytesPerElement = (orswotAtCompare?.valueBytes ?? NaN) / compare
  const wholeOps = Math.max(...inserts.filter((r) => r.store !== 'decomposed').map((r) => r.ops), 0)
  const wholeMaxS =
    results.wholeValueMaxMs === undefined ? undefined : results.wholeValueMaxMs / 1000

  /** Ours over a whole-value set at one level and size: 16 clients vs 1, and 1 vs 1. */
  /**
   * `top` ÷ `bottom`: with rounds, the median of the rounds' ratios (the two ran side by side in
   * each round); otherwise the ratio of their rates.
   */
  const quotient = (top: InsertRow | undefined, bottom: InsertRow | undefined) => {
    const a = top?.roundRates
    const b = bottom?.roundRates
    if (a === undefined || b === undefined || a.length === 0 || a.length !== b.length)
      return rate(top) / rate(bottom)
    const each = a.map((x, i) => x / b[i]!).sort((x, y) => x - y)
    return each[Math.floor(each.length / 2)]!
  }
  const ratios = (level: Level, store: Store, size: number) => {
    const one = at(level, store, 1, size)
    const many = at(level, store, concurrency, size)
    const ours = at(level, 'decomposed', concurrency, size)
    // The whole value at its best: one client, or many counted by the inserts that survived.
    const best = many !== undefined && rate(many) > rate(one) ? many : one
    return {
      concurrent: quotient(ours, one),
      single: quotient(at(level, 'decomposed', 1, size), one),
      equal: many === undefined ? NaN : quotient(ours, many),
      best: quotient(ours, best),
      bestIsMany: best === many,
    }
  }

  const cell = (row: InsertRow | undefined, digits: number) =>
    row?.refused !== undefined
      ? ['refused', `over the ${kib(row.refused.limit)} KiB limit`]
      : [
          digits === 0 ? whole(rate(row)) : fixed(rate(row), digits),
          `${fixed(mean(row), digits === 0 ? 3 : 1)} / ${fixed(row?.p95Ms ?? NaN, digits === 0 ? 3 : 1)}`,
        ]
  const insertTable = (level: Level) =>
    table(
      [
        'elements',
        'ours, 1 client: inserts/s',
        'mean / p95 ms',
        `ours, ${concurrency} clients: inserts/s`,
        'mean / p95 ms',
        'ORSWOT as one value: inserts/s',
        'mean / p95 ms',
        'KiB',
        'array (not a CRDT): inserts/s',
        'mean / p95 ms',
        'KiB',
      ],
      [
        ...sizes.map((size) => [
          whole(size),
          ...cell(at(level, 'decomposed', 1, size), 0),
          ...cell(at(level, 'decomposed', concurrency, size), 0),
          ...cell(at(level, 'orswot', 1, size), 1),
          kib(at(level, 'orswot', 1, size)?.valueBytes),
          ...cell(at(level, 'array', 1, size), 1),
          kib(at(level, 'array', 1, size)?.valueBytes),
        ]),
        ...(again(level, 1) === undefined
          ? []
          : [
              [
                results.rounds === undefined
                  ? `${whole(smallest)} again (a fresh set, after all the above)`
                  : `${whole(smallest)} again (a fresh set, in the same rounds as ${whole(largest)})`,
                ...cell(again(level, 1), 0),
                ...cell(again(level, concurrency), 0),
                ...Array<string>(6).fill(''),
              ],
            ]),
      ],
    )

  const ratioTable = table(
    [
      'level',
      'elements',
      `ours ÷ ORSWOT, ${concurrency} vs 1`,
      `ours ÷ ORSWOT, ${concurrency} vs ${concurrency} (its surviving inserts)`,
      'ours ÷ ORSWOT, 1 vs 1',
      `ours ÷ array, ${concurrency} vs 1`,
      'ours ÷ array, 1 vs 1',
      'paper: Bigsets ÷ Riak sets, 1 vs 1',
    ],
    LEVELS.flatMap((level) =>
      sizes.map((size) => {
        const o = ratios(level, 'orswot', size)
        const a = ratios(level, 'array', size)
        const paper = PAPER[size]
        return [
          level,
          whole(size),
          times(o.concurrent),
          Number.isNaN(o.equal) ? '' : times(o.equal),
          times(o.single),
          times(a.concurrent),
          times(a.single),
          paper === undefined ? '' : times(paper.bigsets / paper.riakSets),
        ]
      }),
    ),
  )

  const misses: string[] = []
  /** Storage-level shortfalls: explained, not judged (the targets are the client's view). */
  const storageNotes: string[] = []
  const targetRows = LEVELS.flatMap((level) => {
    const judged = level === JUDGED_LEVEL
    const verdict = (x: number, ok: boolean) =>
      Number.isNaN(x)
        ? 'not measured'
        : !judged
          ? ok
            ? 'within the target (not judged here)'
            : 'short of the target (not judged here)'
          : ok
            ? 'met'
            : '**not met**'
    const notes = judged ? misses : storageNotes
    // Target 1: no slowdown with size. Round by round against the fresh set at the smallest size
    // measured in the same rounds (the median of the rounds' ratios); in results without rounds,
    // against the higher of the two windows at the smallest size.
    const growth = (k: number) => {
      const big = at(level, 'decomposed', k, largest)
      const ref = again(level, k)
      if (ref?.roundRates !== undefined) return quotient(big, ref)
      const small = Math.max(
        rate(at(level, 'decomposed', k, smallest)),
        ref === undefined ? -Infinity : rate(ref),
      )
      return rate(big) / small
    }
    const sideBySide = again(level, 1)?.roundRates !== undefined
    const g1 = growth(1)
    const gk = growth(concurrency)
    if (g1 < 0.85 || gk < 0.85) notes.push(growthMiss(level, g1, gk))

    // Target 2: ≥ 100× the ORSWOT, ours with its clients against the ORSWOT at its best (one
    // client, or as many as ours counted by the inserts that survive); the rest alongside.
    const o = ratios(level, 'orswot', compare)
    const a = ratios(level, 'array', compare)
    if (!(o.best >= 100)) notes.push(ratioMiss(level, o))
    const many = at(level, 'orswot', concurrency, compare)

    // Target 3: `has` like a key read (of a random one of as many keys).
    const has = points.find((p) => p.level === level && p.case === 'has')
    const get = points.find((p) => p.level === level && p.case === 'get')
    const hasMeanRatio = (has?.meanMs ?? NaN) / (get?.meanMs ?? NaN)
    // Results recorded before medians were kept are judged on the mean.
    const hasRatio =
      has?.p50Ms === undefined || get?.p50Ms === undefined ? hasMeanRatio : has.p50Ms / get.p50Ms
    if (!(hasRatio <= HAS_TOLERANCE))
      notes.push(
        has?.p50Ms === undefined || get?.p50Ms === undefined
          ? hasMiss(level, has?.meanMs ?? NaN, get?.meanMs ?? NaN, 'mean')
          : hasMiss(level, has.p50Ms, get.p50Ms, 'median'),
      )

    const orswotVerdict = verdict(o.best, o.best >= 100)
    const survivedNote =
      many?.survived === undefined
        ? ''
        : `; ${times(o.equal)} at ${concurrency} clients each (the ORSWOT counted by its surviving inserts: ${whole(many.survived)} of ${whole(many.ops)})`
    return [
      [
        level,
        sideBySide
          ? `inserts/s at ${whole(largest)} within 15% of ${whole(smallest)} (a fresh set, in the same rounds)`
          : `inserts/s at ${whole(largest)} within 15% of ${whole(smallest)} (the higher of its two windows)`,
        `${times(g1)} (1 client), ${times(gk)} (${concurrency} clients)`,
        verdict(g1 + gk, g1 >= 0.85 && gk >= 0.85),
      ],
      [
        level,
        `≥ 100× the naive set at ${whole(compare)}, judged against the ORSWOT as one value at its best`,
        `${times(o.best)} (ours with ${concurrency} clients against the ORSWOT with ${o.bestIsMany ? concurrency : 1})` +
          survivedNote +
          `; ${times(o.single)} with 1 client each (as the paper measured)` +
          `; against the array (not a CRDT): ${times(a.concurrent)} (${concurrency} vs 1), ${times(a.single)} (1 vs 1)`,
        orswotVerdict,
      ],
      [
        level,
        `\`has\` on ${whole(has?.size)} elements as fast as a key read (of a random one of ${whole(get?.size)} keys; median latency within ${percent(HAS_TOLERANCE - 1)})`,
        has?.p50Ms === undefined
          ? `${times(hasMeanRatio)} the key read's mean latency`
          : `${times(hasRatio)} the key read's median latency, ${times(hasMeanRatio)} its mean`,
        verdict(hasRatio, hasRatio <= HAS_TOLERANCE),
      ],
    ]
  })

  function growthMiss(level: Level, g1: number, gk: number): string {
    const worst = (k: number) =>
      sizes.reduce((w, s) =>
        rate(at(level, 'decomposed', k, s)) < rate(at(level, 'decomposed', k, w)) ? s : w,
      )
    const k = g1 < gk ? 1 : concurrency
    const low = worst(k)
    const why =
      low === largest
        ? `throughput is lowest at the largest size here. The number of keys an insert touches does not grow, but finding them does, a little: the store is an ordered tree (memory-level's red-black tree; LevelDB's levels on disk), so the seek for the element's keys is O(log n), and the process holds a larger heap for the collector to walk. At tens of microseconds per insert that shows; end to end, where an insert costs about ten times more, it does not`
        : `the lowest throughput (${k} client${k === 1 ? '' : 's'}) is at ${whole(low)} elements, not at the largest size: it does not follow the size, which points at run-to-run noise on a shared machine (each window runs seconds after the previous one), not at the set growing`
    return (
      `**${level}, inserts/s at ${whole(largest)} vs ${whole(smallest)}**: ${percent(g1)} (1 client) and ${percent(gk)} (${concurrency} clients) ` +
      `of the rate at ${whole(smallest)}. An insert reads only the set's clocks and writes one element key, so its work does not grow with the set; ${why}.`
    )
  }

  function ratioMiss(
    level: Level,
    o: { concurrent: number; single: number; best: number },
  ): string {
    const ours = mean(at(level, 'decomposed', 1, compare))
    const atStorage = mean(at('storage', 'decomposed', 1, compare))
    const orswot = at(level, 'orswot', 1, compare)
    const keyRead = points.find((p) => p.level === level && p.case === 'get-one')?.meanMs ?? NaN
    const gain =
      rate(at(level, 'decomposed', concurrency, compare)) /
      rate(at(level, 'decomposed', 1, compare))
    const which =
      o.concurrent >= 100
        ? `Met with ${concurrency} clients against 1 (${times(o.concurrent)}), not with one client each (${times(o.single)}), which is how the paper measured.`
        : o.single >= 100
          ? `Not met with ${concurrency} clients against 1 (${times(o.concurrent)}), which is what the target is judged on; met with one client each (${times(o.single)}), which is how the paper measured.`
          : `${times(o.concurrent)} with ${concurrency} clients against 1, ${times(o.single)} with one client each.`
    const quotient =
      o.single >= 100
        ? ''
        : `One client each, the ratio is about their quotient; 100× would need ours under ${fixed(mean(orswot) / 100, 3)} ms per insert. `
    const clients =
      gain >= 1
        ? `${concurrency} clients raise ours only ${times(gain)} over one`
        : `${concurrency} clients do not raise ours (${times(gain)} the rate of one)`
    const path =
      level === 'end to end'
        ? ` At the storage level the same insert takes ${fixed(atStorage, 3)} ms: the rest is the path every write takes (the SDK, HTTP, the gateway's session checks, the log that replicates it to a follower and to the other region), which a whole-value insert pays twice (its \`get\` and its \`put\`): a \`get\` of a small key alone takes ${fixed(keyRead, 3)} ms.`
        : ''
    return (
      `**${level}, ≥ 100× the ORSWOT at ${whole(compare)}**: ${which} An insert into ours takes ${fixed(ours, 3)} ms (1 client).${path} ` +
      `The ORSWOT insert at ${whole(compare)} takes ${fixed(mean(orswot), 1)} ms: it reads, checks, re-encodes and writes ${kib(orswot?.valueBytes)} KiB. ` +
      quotient +
      `${clients}: the clients, the gateway and every replica share ${cores}.` +
      (level === 'end to end' ? storageRatio() : '') +
      paperNote(level)
    )
  }

  /** What the same comparison gives without HTTP and replication. */
  function storageRatio(): string {
    const o = ratios('storage', 'orswot', compare)
    return ` At the storage level, without that path, the same comparison gives ${times(o.concurrent)} (${concurrency} vs 1) and ${times(o.single)} (1 vs 1).`
  }

  /** Where each side stands against the paper's own rates (other hardware: a 4-node Riak cluster). */
  function paperNote(level: Level): string {
    const paper = PAPER[compare]
    if (level !== 'end to end' || paper === undefined) return ''
    const ours = rate(at(level, 'decomposed', 1, compare))
    const orswot = rate(at(level, 'orswot', 1, compare))
    return (
      ` For scale, the paper's one-worker rates at ${whole(compare)} (a 4-node Riak cluster, other hardware) were ${fixed(paper.bigsets, 2)} inserts/s for Bigsets and ${fixed(paper.riakSets, 2)} for Riak sets (${times(paper.bigsets / paper.riakSets)}); ` +
      `here ours does ${whole(ours)}/s (${times(ours / paper.bigsets)} the paper's Bigsets) and the ORSWOT as one value ${fixed(orswot, 1)}/s (${times(orswot / paper.riakSets)} Riak sets)` +
      (ours / paper.bigsets >= 0.85 && orswot / paper.riakSets >= 2
        ? ": the gap to the paper's ratio is mostly a faster baseline, not a slower set."
        : '.')
    )
  }

  function hasMiss(level: Level, hasMs: number, getMs: number, which: string): string {
    return (
      `**${level}, \`has\` vs a key read**: ${fixed(hasMs, 3)} ms against ${fixed(getMs, 3)} ms, ${which}s (${times(hasMs / getMs)}). ` +
      `\`has\` does more than a key read: it seeks the element's keys on an open iterator (a key read is one \`get\`), checks them against the set-tombstone from the commits' cache, ` +
      `and signs the element's context (a keyed SHA-512/256) so that a later remove names exactly the insertions it saw; its reply carries that context and the set's stamp.`
    )
  }

  const maxSettle = (stores: Store[]) =>
    Math.max(
      ...inserts
        .filter((r) => r.level === 'end to end' && stores.includes(r.store))
        .map((r) => r.settleMs ?? NaN)
        .filter(Number.isFinite),
    )
  const settleOurs = maxSettle(['decomposed'])
  const settleWhole = maxSettle(['orswot', 'array'])
  const settleNote = Number.isFinite(settleOurs + settleWhole)
    ? ` (end to end it took at most ${whole(settleOurs)} ms after a window of ours and ${whole(settleWhole)} ms after a whole-value window, the checking reads included)`
    : ''
  // Ours' inserts measured at the smallest size, per level: what the windows add to a set.
  const added = (level: Level) =>
    inserts
      .filter(
        (r) =>
          r.level === level && r.store === 'decomposed' && r.size === smallest && r.again !== true,
      )
      .reduce((sum, r) => sum + r.ops, 0)
  const windowNote2 = LEVELS.map(
    (level) =>
      `${whole(added(level))} elements ${level === 'storage' ? 'at the storage level' : level}`,
  ).join(', ')
  const roundsNote =
    (results.rounds ?? 1) > 1
      ? ` At each size the windows run in ${results.rounds} interleaved rounds (ours with 1 client, ours with ${concurrency}, then each whole-value set), and a row's rate is the median of its rounds' rates: a stretch of other work slows one round of every store rather than one store's whole window.`
      : ''
  const windowNote =
    wholeMaxS === undefined
      ? `at most ${wholeOps} inserts each`
      : `at most ${wholeOps} inserts each, and no new insert starts after ${fixed(wholeMaxS, 1)} s`
  const markdown = [
    'Two levels, the same runs. **Storage**: one replica in process (the embedded cluster,',
    `LevelDB ${results.storage === 'disk' ? 'on disk, fsync per commit' : 'in memory'}), called through its region service: what the data structures`,
    `cost. **End to end**: \`causeway dev\` (${c.backend} backend, ${c.regions} regions × ${c.partitions} partitions × ${c.replicas}`,
    'replicas, so every write is also applied by a follower and shipped to the other region), driven',
    `through the SDK over HTTP from the benchmark process${results.wholeValuesApart === true ? '; the whole-value sets run on a second cluster started the same way, since each of their writes leaves a log entry the size of the whole set in every replica (logs are not trimmed), which in one process would weigh on every later window of ours' : ''}. Elements are 4-byte strings in scattered`,
    'order. Each size is reached by bulk adds (not measured) and the cluster is left to apply them',
    `everywhere before the inserts from that size on are measured (the windows add ${windowNote2}). The sizes run in order as the set`,
    'grows, so whatever warms up during a run (JIT, heap sizing) would favour the larger sizes: the',
    'warm-up ends with the same single-client inserts that are measured first, and the smallest size',
    'is measured once more on a fresh set, in the same interleaved rounds as the largest: the growth',
    "target compares those two round by round (the median of the rounds' ratios), side by side in time.",
    '',
    'What is compared, at each level and size, in this one run:',
    '',
    `- **ours**: single-element \`add\`s into the decomposed set, from 1 client (one call at a time) and`,
    `  from ${concurrency} clients at once.`,
    "- **ORSWOT as one value** (the baseline the target is judged against): riak_dt's ORSWOT, which is",
    '  what Riak sets are and what the Bigsets paper measured (its Table 1: 6.89 inserts/s at 45k',
    '  elements). A version vector plus, per element, its dots, stored as one JSON value under one key:',
    '  `{"clock":[["r0",45000]],"elements":["0a1b",…],"dots":[1,0,17,…]}` (per element its number of',
    "  dots, then each dot as its actor's position in the clock and its counter; two flat arrays parse",
    `  faster than an array per element), about ${fixed(bytesPerElement, 1)} bytes per element. An insert reads the value (\`get\`), checks it, adds the`,
    "  element with a new dot (the writing region's clock entry, incremented; a re-add replaces the",
    "  element's dots) and writes the value back whole (`put`): through the SDK end to end, through the",
    '  same region service at the storage level. Like ours it is a CRDT, with add-wins observed-remove',
    '  semantics across regions.',
    '- **array, not a CRDT: a lower bound for any whole-value set**: the sorted elements as one JSON',
    '  array under one key, inserted into by the same `get`, insert, `put`. Without dots or a clock it',
    '  cannot merge concurrent adds and removes from two regions. It is here because no set stored as',
    '  one value reads and writes less per insert, so the ratio against it holds for any whole-value',
    '  design, not only the ORSWOT.',
    '',
    "An insert's latency is the whole call, from before the read to after the write: reading, parsing",
    "and checking the value, the insert, encoding and writing it back. A window's rate is the median",
    'of the rates of its five consecutive fifths (equal numbers of inserts, in order of their replies),',
    'so one collector pause or burst of other work, which halves the rate of a fifth, does not decide',
    `a row; the mean and p95 latency are over all its inserts.${roundsNote} Replication is asynchronous for both: after`,
    'each window the run waits until every replica of both regions has applied its writes before going',
    `on, so no window pays for another's backlog${settleNote}. The whole-value sets are written`,
    "by 1 client: concurrent read-modify-writes of one last-writer-wins key lose each other's inserts",
    '(Riak keeps such writes as siblings and merges them on the next read; each insert still reads and',
    `writes the whole value, so more clients would queue for the same cores). Ours takes ${concurrency} clients at`,
    `once because it admits concurrent writers by design. To check that more clients do not help a whole value, at ${whole(compare)}`,
    `the ORSWOT is also written by ${concurrency} clients at once and counted by the inserts its value still holds`,
    `afterwards (the others were overwritten by a concurrent write of the whole value). The whole-value windows are short (${windowNote}),`,
    'and where one holds only a few inserts its p95 is close to its maximum. The gateways run with',
    '`--max-value-bytes 4194304` so the whole-value sets fit (the ORSWOT of 100k elements is ~1.7 MB); with',
    'the default 1 MiB limit a deployment would refuse that ORSWOT beyond about 60k elements, and a row',
    'shows "refused" when a value is over the limit. The storage level has no such limit.',
    '',
    "**Ratios** are ours' inserts/s divided by a whole-value set's inserts/s at the same level and size,",
    `in this run${(results.rounds ?? 1) > 1 ? " (with rounds: the median of the rounds' quotients, each round having run both side by side)" : ''}. "${concurrency} vs 1": ours with ${concurrency} clients against the whole value's one; "1 vs 1": one client`,
    'each, as the paper\'s Table 1 was measured (one worker, one key). The target "≥ 100× the naive set',
    `at 45k" is judged against the ORSWOT as one value at its best (1 client, or ${concurrency} counted by their surviving`,
    `inserts), ours with ${concurrency} clients: each at the most it can do. The 1 vs 1 ratio, the paper's setting, and the`,
    'ratios against the array are shown beside it.',
    quick ? '\n_Quick run: smaller sets and windows; the numbers are indicative only._' : '',
    '',
    ...LEVELS.flatMap((level) => [
      `### Inserts while the set grows (${level})`,
      '',
      insertTable(level),
      '',
    ]),
    '### Ratios: ours against the whole-value sets',
    '',
    ratioTable,
    '',
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
        const get = (via: (typeof scans)[number]['via']) =>
          scans.find((r) => r.size === size && r.via === via)
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
      ['point read (one client)', 'level', 'calls', 'mean ms', 'p50 ms', 'p95 ms'],
      points.map((p) => [
        p.case === 'has'
          ? `\`has\` of a random element of a ${whole(p.size)}-element set`
          : p.case === 'get'
            ? `\`get\` of a random one of ${whole(p.size)} small keys`
            : '`get` of one small key, read every time',
        p.level,
        whole(p.ops),
        fixed(p.meanMs, 3),
        fixed(p.p50Ms, 3),
        fixed(p.p95Ms, 3),
      ]),
    ),
    '',
    '### Against the targets',
    '',
    table(['level', 'target', 'measured', ''], targetRows),
    '',
    `The targets are judged ${JUDGED_LEVEL}, where the paper measured (its clients called a Riak cluster) and what an application sees; the storage level shows where the time goes.`,
    '',
    '### Where we miss a target, and why',
    '',
    misses.length === 0
      ? `Every target is met ${JUDGED_LEVEL}.`
      : misses.map((m) => `- ${m}`).join('\n'),
    ...(storageNotes.length === 0
      ? []
      : ['', '### At the storage level', '', storageNotes.map((m) => `- ${m}`).join('\n')]),
  ].join('\n')

  const chartRows = inserts
    .filter((r) => Number.isFinite(rate(r)) && r.again !== true)
    .map((r) => ({
      size: r.size,
      opsPerS: r.opsPerS,
      level: r.level,
      series: `${STORE_NAMES[r.store]}, ${r.concurrency} client${r.concurrency === 1 ? '' : 's'}`,
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
}
