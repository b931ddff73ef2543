/**
 * The health of one destination region's gateways, as the HTTP shipping links to that region see
 * it: each gateway's `GET /healthz` is asked every `intervalMs`, and one that does not answer 200
 * within `timeoutMs` (a hung process, one draining for shutdown, one that refuses connections) is
 * down until it answers again. Links send to the gateway {@link GatewayHealth.pick} names and
 * abort a request to a gateway as soon as it is found down ({@link GatewayHealth.onDown}), so a
 * frozen gateway costs at most about `intervalMs + timeoutMs` rather than a request timeout.
 *
 * One instance serves every link of a process to the region (they share the probes); it probes
 * only while some link holds it ({@link GatewayHealth.retain}).
 */
import type { ShippingFetch } from './keep-alive-fetch.js'

/** Options of a {@link GatewayHealth}. */
export interface GatewayHealthOptions {
  /** Base URLs of the region's gateways, in the order they are preferred. */
  gateways: readonly string[]
  /**
   * Pause between two health checks of a gateway, in ms.
   * @default 250
   */
  intervalMs?: number
  /**
   * A health check unanswered this long (ms) marks its gateway down.
   * @default 500
   */
  timeoutMs?: number
  /**
   * The fetch to use (tests inject one).
   * @default globalThis.fetch
   */
  fetch?: ShippingFetch
  /**
   * Told when a gateway goes down or comes back up.
   * @default nothing
   */
  onChange?: (gateway: string, up: boolean) => void
}

/** The path every gateway answers while it serves (`http/routes/health.ts`). */
export const HEALTH_PATH = '/healthz'

/** The health of one region's gateways, and which of them shipping uses now. */
export class GatewayHealth {
  /** The region's gateways, without a trailing slash. */
  readonly gateways: readonly string[]
  readonly #intervalMs: number
  readonly #timeoutMs: number
  readonly #fetch: ShippingFetch
  readonly #onChange: (gateway: string, up: boolean) => void
  /** Gateways are up until a health check says otherwise. */
  readonly #up: boolean[]
  readonly #downListeners: Set<() => void>[]
  readonly #sleeps = new Map<ReturnType<typeof setTimeout>, () => void>()
  readonly #aborts = new Set<AbortController>()
  /** The gateway requests go to while it stays up. */
  #current = 0
  #holders = 0
  /** Bumped by each start and stop, so a probe loop of an earlier run ends. */
  #run = 0

  constructor(options: GatewayHealthOptions) {
    if (options.gateways.length === 0) throw new RangeError('a region needs a gateway URL')
    this.gateways = options.gateways.map((u) => u.replace(/\/+$/, ''))
    this.#intervalMs = options.intervalMs ?? 250
    this.#timeoutMs = options.timeoutMs ?? 500
    this.#fetch = options.fetch ?? globalThis.fetch
    this.#onChange = options.onChange ?? (() => {})
    this.#up = this.gateways.map(() => true)
    this.#downListeners = this.gateways.map(() => new Set())
  }

  /** Whether `gateway`'s last health check succeeded (true before the first). */
  isUp(gateway: string): boolean {
    return this.#up[this.#index(gateway)] ?? false
  }

  /**
   * The gateway to send to: the one used last while it is up, else the next one that is up; when
   * none is, the one used last (each failed request moves on to the next: the health checks may
   * be what fails).
   */
  pick(): string {
    if (!this.#up[this.#current]) {
      const next = this.#nextUp(this.#current)
      if (next !== undefined) this.#current = next
    }
    return this.gateways[this.#current]!
  }

  /** A request to `gateway` failed: the next {@link pick} names another one, if any is up. */
  failed(gateway: string): void {
    const index = this.#index(gateway)
    if (index !== this.#current) return
    this.#current = this.#nextUp(index) ?? (index + 1) % this.gateways.length
  }

  /** Calls `listener` when `gateway` fails a health check; returns the unsubscribe function. */
  onDown(gateway: string, listener: () => void): () => void {
    const listeners = this.#downListeners[this.#index(gateway)]
    if (!listeners) return () => {}
    listeners.add(listener)
    return () => listeners.delete(listener)
  }

  /** A link starts using these gateways: the health checks run while any does. */
  retain(): void {
    if (this.#holders++ > 0) return
    const run = ++this.#run
    this.gateways.forEach((_, i) => void this.#probeLoop(i, run))
  }

  /** A link stopped using them; the last one stops the health checks. */
  release(): void {
    if (this.#holders === 0 || --this.#holders > 0) return
    this.#run++
    for (const [timer, wake] of this.#sleeps) {
      clearTimeout(timer)
      wake()
    }
    this.#sleeps.clear()
    for (const abort of this.#aborts) abort.abort(new Error('health checks stopped'))
    this.#aborts.clear()
  }

  async #probeLoop(i: number, run: number): Promise<void> {
    while (run === this.#run) {
      const started = performance.now()
      const up = await this.#probe(this.gateways[i]!)
      if (run !== this.#run) return
      this.#set(i, up)
      await this.#sleep(Math.max(0, this.#intervalMs - (performance.now() - started)))
    }
  }

  // Resolves after `ms`, or at once when the health checks stop.
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#sleeps.delete(timer)
        resolve()
      }, ms)
      this.#sleeps.set(timer, resolve)
    })
  }

  // Whether `gateway` answered 200 in time. A timer that fires late means this process itself was
  // not running (a pause, or a SIGSTOP of its own): the answer may be waiting unread, so it gets
  // one more timeout before the gateway is called down.
  async #probe(gateway: string): Promise<boolean> {
    const abort = new AbortController()
    this.#aborts.add(abort)
    let due = performance.now() + this.#timeoutMs
    let timer: ReturnType<typeof setTimeout>
    const expire = () => {
      if (performance.now() - due > this.#timeoutMs / 2) {
        due = performance.now() + this.#timeoutMs
        timer = setTimeout(expire, this.#timeoutMs)
      } else abort.abort(new Error('health check timed out'))
    }
    timer = setTimeout(expire, this.#timeoutMs)
    try {
      const res = await this.#fetch(gateway + HEALTH_PATH, {
        method: 'GET',
        headers: {},
        body: null,
        signal: abort.signal,
      })
      // Read to the end, so the connection is free for the next request.
      await res.json().catch(() => undefined)
      return res.status === 200
    } catch {
      return false
    } finally {
      clearTimeout(timer)
      this.#aborts.delete(abort)
    }
  }

  #set(i: number, up: boolean): void {
    if (this.#up[i] === up) return
    this.#up[i] = up
    this.#onChange(this.gateways[i]!, up)
    if (up) return
    for (const listener of [...this.#downListeners[i]!]) listener()
  }

  #nextUp(from: number): number | undefined {
    const n = this.gateways.length
    for (let step = 1; step <= n; step++) {
      const i = (from + step) % n
      if (this.#up[i]) return i
    }
    return undefined
  }

  #index(gateway: string): number {
    return this.gateways.indexOf(gateway.replace(/\/+$/, ''))
  }
}
