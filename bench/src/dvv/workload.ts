/**
 * The workload of the DVV paper's generic benchmark (its Table 1), against any store that reads
 * siblings with a context: many logical clients, each in a home region, doing GET, blind PUT
 * (no context) and UPD (GET, a 50 ms pause standing for the client's own latency, then a PUT with
 * the context the GET returned), on a Pareto-distributed key space (basho_bench's `pareto_int`:
 * 20% of the keys get 80% of the accesses) with 1 KB values. Each client pauses between operations (exponential think time), so the load
 * is the same for every store, whatever its speed.
 *
 * A {@link DvvWorkload} runs in slices, so several stores can take turns (interleaved rounds: a
 * burst of other work on the machine then hits every store, not one). The clients, their random
 * streams and the stores' data carry over from slice to slice, as in one long run.
 *
 * Recorded per slice: latency per operation type (UPD without its pause: its GET plus its PUT),
 * the size of every context read (the clock, in bytes) and how many values every read returned.
 */

/** What a read of the store returned. */
export interface TargetRead {
  /** Number of values (siblings) read; tombstones are not counted. */
  values: number
  /** The context to send back with a write; undefined when the store returned none. */
  context: string | undefined
  /** Size of the clock the context carries, in bytes (binary, before any text encoding). */
  clockBytes: number
}

/** One logical client's connection to the store. */
export interface TargetClient {
  get(key: string): Promise<TargetRead>
  /** Writes `value` (JSON text of a string); with `context`, superseding what that read saw. */
  put(key: string, value: string, context: string | undefined): Promise<void>
}

/** A store under test. */
export interface Target {
  name: string
  /** A client with id `client` (a small integer) whose home is `region`. */
  client(client: number, region: number): Promise<TargetClient>
}

/** Options of a {@link DvvWorkload}. */
export interface DvvWorkloadOptions {
  /** Logical clients (the paper used 500; the issue asks for at least 100). */
  clients: number
  regions: number
  /** Number of keys. */
  keys: number
  /** Size of each value, in bytes of JSON. @default 1024 */
  valueBytes?: number
  /** Mean pause between a client's operations, ms. */
  thinkMs: number
  /** UPD's pause between its GET and its PUT, ms. @default 50 */
  updatePauseMs?: number
  /** Shares of GET, blind PUT and UPD. @default { get: 0.6, put: 0.1, update: 0.3 } */
  mix?: { get: number; put: number; update: number }
  /** Seed of every random choice. @default 1 */
  seed?: number
  /** Keys are `<keyPrefix>:<i>`. @default 'bench' */
  keyPrefix?: string
}

/** Latency of one kind of operation, ms. */
export interface LatencyStats {
  count: number
  mean: number
  p95: number
  p99: number
}

/** What one slice measured. */
export interface SliceResult {
  get: LatencyStats
  put: LatencyStats
  update: LatencyStats
  /** Every clock read, in bytes. */
  clockBytes: number[]
  /** How many values each read returned, for reads of keys that had any. */
  values: number[]
  /** Operations per second, all kinds. */
  throughput: number
  errors: number
}

/** A seeded PRNG (mulberry32): every run makes the same choices. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// basho_bench's `pareto_int` (the paper's key generator): a Pareto of shape 1.5 whose mean is a
// fifth of the key space, wrapped into it; 20% of the keys get 80% of the draws.
const PARETO_SHAPE = 1.5

/** A key index in `0..keys-1`, Pareto-distributed as basho_bench's `pareto_int` draws keys. */
export function skewedIndex(random: () => number, keys: number): number {
  const mean = keys * 0.2
  const u = 1 - random() // (0, 1]
  const x = Math.floor((u ** (-1 / PARETO_SHAPE) - 1) * mean * (PARETO_SHAPE - 1))
  return x % keys
}

/** Mean and percentiles of `samples`. */
export function latencyStats(samples: readonly number[]): LatencyStats {
  if (samples.length === 0) return { count: 0, mean: NaN, p95: NaN, p99: NaN }
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  const mean = sorted.reduce((s, x) => s + x, 0) / sorted.length
  return { count: sorted.length, mean, p95: at(0.95), p99: at(0.99) }
}

/** The median of `values` (NaN for none). */
export function median(values: readonly number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface ClientState {
  client: TargetClient
  id: number
  random: () => number
  n: number
}

/** The workload on one store, run slice by slice (see the module comment). */
export class DvvWorkload {
  readonly target: Target
  readonly #options: DvvWorkloadOptions
  #clients: ClientState[] = []

  constructor(target: Target, options: DvvWorkloadOptions) {
    this.target = target
    this.#options = options
  }

  /** Connects every logical client. */
  async open(): Promise<void> {
    const o = this.#options
    this.#clients = await Promise.all(
      Array.from({ length: o.clients }, async (_, id) => ({
        client: await this.target.client(id, id % o.regions),
        id,
        random: seeded((o.seed ?? 1) * 7919 + id),
        n: 0,
      })),
    )
  }

  /**
   * Runs every client for `durationMs`: each starts within one think time and finishes the
   * operation it is in at the end.
   */
  async slice(durationMs: number): Promise<SliceResult> {
    const o = this.#options
    const mix = o.mix ?? { get: 0.6, put: 0.1, update: 0.3 }
    const valueBytes = o.valueBytes ?? 1024
    const pauseMs = o.updatePauseMs ?? 50
    const filler = 'x'.repeat(valueBytes)
    const latency = { get: [] as number[], put: [] as number[], update: [] as number[] }
    const clockBytes: number[] = []
    const values: number[] = []
    let errors = 0
    const observe = (read: TargetRead): void => {
      clockBytes.push(read.clockBytes)
      if (read.values > 0) values.push(read.values)
    }
    const started = performance.now()
    const end = started + durationMs
    await Promise.all(
      this.#clients.map(async (state) => {
        const { client, id, random } = state
        await sleep(random() * o.thinkMs)
        while (performance.now() < end) {
          const key = `${o.keyPrefix ?? 'bench'}:${skewedIndex(random, o.keys)}`
          const tag = `${id}#${state.n++}:`
          // A JSON string of `valueBytes` bytes (its quotes included).
          const value = JSON.stringify(tag + filler.slice(tag.length + 2))
          const draw = random()
          try {
            if (draw < mix.get) {
              const t0 = performance.now()
              observe(await client.get(key))
              latency.get.push(performance.now() - t0)
            } else if (draw < mix.get + mix.put) {
              const t0 = performance.now()
              await client.put(key, value, undefined)
              latency.put.push(performance.now() - t0)
            } else {
              const t0 = performance.now()
              const read = await client.get(key)
              const t1 = performance.now()
              observe(read)
              await sleep(pauseMs)
              const t2 = performance.now()
              await client.put(key, value, read.context)
              latency.update.push(t1 - t0 + (performance.now() - t2))
            }
          } catch {
            errors++
          }
          await sleep(-Math.log(1 - random()) * o.thinkMs)
        }
      }),
    )
    const elapsed = performance.now() - started
    const ops = latency.get.length + latency.put.length + latency.update.length
    return {
      get: latencyStats(latency.get),
      put: latencyStats(latency.put),
      update: latencyStats(latency.update),
      clockBytes,
      values,
      throughput: (ops / elapsed) * 1000,
      errors,
    }
  }
}

/** Bytes of a base64url text (no padding). */
export function base64urlBytes(text: string | undefined): number {
  return text === undefined ? 0 : Math.floor((text.length * 3) / 4)
}
