/**
 * How far other regions' leaders have written, asked over HTTP (`GET /v1/internal/written/:p`
 * with the cluster secret): what a gateway that serves one region checks a read vector's other
 * regions against (`ReplicaRouterOptions.writtenElsewhere`), so that a vector naming an index its
 * region never wrote is `VECTOR_UNREACHABLE` at once instead of a wait to the deadline (issue
 * 23.6). The embedded cluster knows every leader in process and needs none of this.
 *
 * An answer holds for any read that arrived before its request was sent (a region's leader only
 * writes more), and an index at most an answer's is reachable for good; so answers are kept, and
 * a request in flight is shared by the reads that arrived before it started. A region that does
 * not answer in time is not asked about again for a while: its reads wait as before.
 */
import type { ShippingFetch } from './keep-alive-fetch.js'
import { RegionRequests } from './region-requests.js'

/** Options of {@link OtherRegionsWritten}. */
export interface OtherRegionsWrittenOptions {
  /** `gateways[d]`: the gateway URLs of region `d` (none for this region). */
  gateways: readonly (readonly string[])[]
  /** The cluster secret. */
  secret: string
  /** How long a question may take, in ms. @default 2000 */
  timeoutMs?: number
  /** How long a region that did not answer is not asked again, in ms. @default 5000 */
  quietMs?: number
  /** @default a keep-alive `node:http` client of its own per region */
  fetch?: ShippingFetch
}

/** How far a region's leader of a partition has written, and in which epoch. */
export interface RegionWritten {
  written: number
  epoch: number
}

interface Answer {
  /** `Date.now()` when the request that got it was sent. */
  sentAt: number
  value: RegionWritten
}

/** See the module comment. */
export class OtherRegionsWritten {
  readonly #requests: (RegionRequests | undefined)[]
  readonly #quietMs: number
  readonly #answers = new Map<string, Answer>()
  readonly #inFlight = new Map<string, { sentAt: number; answer: Promise<Answer | undefined> }>()
  /** By region: until when it is not asked (it did not answer). */
  readonly #quietUntil: number[]

  constructor(options: OtherRegionsWrittenOptions) {
    this.#quietMs = options.quietMs ?? 5000
    this.#quietUntil = options.gateways.map(() => 0)
    this.#requests = options.gateways.map((urls) => {
      if (urls.length === 0) return undefined
      const gateways = urls.map((u) => u.replace(/\/+$/, ''))
      let next = 0
      return new RegionRequests({
        gateways: { pick: () => gateways[next % gateways.length]!, failed: () => void next++ },
        secret: options.secret,
        timeoutMs: options.timeoutMs ?? 2000,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        name: 'written lookup',
      })
    })
  }

  /**
   * How far region `d`'s leader of `p` has written, as of a moment after `since`, or at least
   * `need` (then possibly older); undefined when the region cannot be asked or did not answer.
   */
  async lookUp(
    d: number,
    p: number,
    need: number,
    since: number,
  ): Promise<RegionWritten | undefined> {
    const requests = this.#requests[d]
    if (requests === undefined || requests.closed) return undefined
    const key = `${d}:${p}`
    const known = this.#answers.get(key)
    if (known !== undefined && (known.sentAt >= since || need <= known.value.written))
      return known.value
    let flight = this.#inFlight.get(key)
    if (flight === undefined || flight.sentAt < since) {
      if (Date.now() < this.#quietUntil[d]!) return undefined
      flight = { sentAt: Date.now(), answer: this.#ask(requests, d, p) }
      const mine = flight
      this.#inFlight.set(key, mine)
      void mine.answer.finally(() => {
        if (this.#inFlight.get(key) === mine) this.#inFlight.delete(key)
      })
    }
    const answer = await flight.answer
    return answer?.value
  }

  /** Stops asking; questions in flight fail (their reads wait as before). */
  close(): void {
    for (const requests of this.#requests) requests?.close()
  }

  async #ask(requests: RegionRequests, d: number, p: number): Promise<Answer | undefined> {
    const sentAt = Date.now()
    try {
      const reply = await requests.request('GET', `/v1/internal/written/${p}`)
      const { written, epoch } = reply as { written?: unknown; epoch?: unknown }
      if (!Number.isSafeInteger(written) || !Number.isSafeInteger(epoch)) return undefined
      const answer: Answer = {
        sentAt,
        value: { written: written as number, epoch: epoch as number },
      }
      const key = `${d}:${p}`
      const known = this.#answers.get(key)
      if (known === undefined || known.sentAt <= sentAt) this.#answers.set(key, answer)
      return answer
    } catch {
      this.#quietUntil[d] = Date.now() + this.#quietMs
      return undefined
    }
  }
}
