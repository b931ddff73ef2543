/**
 * A closed-loop write load over plain HTTP for the `eunomia` suite: `concurrency` writers, each
 * with one request in flight (`PUT /v1/kv/:key?level=...`), spread over the regions' gateways,
 * on kept-alive `node:http` connections (the load generator's own cost stays small and the same
 * for both shipping modes). Bounded in time and in count.
 */
import { Agent, request } from 'node:http'

/** Options of {@link writeLoad}. */
export interface WriteLoadOptions {
  /** The gateways written to, round robin by writer. */
  urls: readonly string[]
  /** Writers with one request in flight each. */
  concurrency: number
  /** Writes not counted, at the start (the cluster warms up). */
  warmupMs: number
  /** The measured window. */
  measureMs: number
  /** The write level (`session` on a FIFO cluster, `causal` on a causal one). */
  level: string
  /** Distinct keys per writer. @default 64 */
  keysPerWriter?: number
  /** Key prefix, so rounds do not share keys. */
  prefix: string
  /** Upper bound on writes in all, whatever the time. @default 2,000,000 */
  maxWrites?: number
}

/** What one load measured. */
export interface WriteLoadResult {
  /** Acknowledged writes per second over the measured window. */
  opsPerS: number
  /** Acknowledged writes in the window. */
  ok: number
  /** Writes refused or failed in the window. */
  failed: number
  /** Median write latency in the window, ms. */
  medianMs: number
}

/** Runs the load and measures the acknowledged writes per second over its window. */
export async function writeLoad(options: WriteLoadOptions): Promise<WriteLoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency })
  const keys = options.keysPerWriter ?? 64
  const maxWrites = options.maxWrites ?? 2_000_000
  const start = performance.now()
  const windowStart = start + options.warmupMs
  const end = windowStart + options.measureMs
  let sent = 0
  let ok = 0
  let failed = 0
  const latencies: number[] = []
  const put = (url: string, body: string): Promise<number> =>
    new Promise((resolve) => {
      const req = request(
        url,
        {
          method: 'PUT',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
          res.on('error', () => resolve(0))
        },
      )
      req.on('error', () => resolve(0))
      req.setTimeout(10_000, () => req.destroy())
      req.end(body)
    })
  const writer = async (w: number): Promise<void> => {
    const base = `${options.urls[w % options.urls.length]}/v1/kv/`
    for (let n = 0; performance.now() < end && sent < maxWrites; n++) {
      sent++
      const key = encodeURIComponent(`${options.prefix}:${w}:${n % keys}`)
      const began = performance.now()
      const status = await put(`${base}${key}?level=${options.level}`, `{"value":${n}}`)
      const done = performance.now()
      if (began < windowStart || done > end) continue
      if (status === 200) {
        ok++
        latencies.push(done - began)
      } else failed++
    }
  }
  try {
    await Promise.all(Array.from({ length: options.concurrency }, (_, w) => writer(w)))
  } finally {
    agent.destroy()
  }
  latencies.sort((a, b) => a - b)
  return {
    opsPerS: (ok * 1000) / options.measureMs,
    ok,
    failed,
    medianMs: latencies[latencies.length >> 1] ?? Number.NaN,
  }
}
