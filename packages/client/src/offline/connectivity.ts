/**
 * Whether the gateway can be reached, as this client last found out, and when to try again.
 *
 * Any reply from a gateway (whatever its status) means online; a request that got no reply (a
 * refused connection, a dropped network) means offline. While offline a probe runs with backoff
 * (1 s doubling to 30 s, with jitter), at once on the browser's `online` event, and again when a
 * read is served locally and the last probe is more than a second old, so an app that keeps
 * reading notices the network's return quickly. The browser's `offline` event and
 * `navigator.onLine === false` count as offline at once, so nothing waits for a timeout.
 */
import type { CausewayError } from '@causeway/core'
import type { EventHub } from './events.js'

const FIRST_RETRY_MS = 1000
const MAX_RETRY_MS = 30_000
/**
 * The longest wait between probes while writes are queued: a gateway that was down while the
 * browser stayed online (so no `online` event comes) is found within this of its return, not up
 * to 30 s later. A probe is one small request.
 */
const QUEUED_MAX_RETRY_MS = 4000

/** What the probe does: true when the gateway answered. */
export type Probe = () => Promise<boolean>

interface BrowserScope {
  addEventListener?(type: string, listener: () => void): void
  removeEventListener?(type: string, listener: () => void): void
  navigator?: { onLine?: unknown }
}

/** The connectivity of one client. */
export class Connectivity {
  readonly #events: EventHub
  readonly #onOnline: () => void
  #probe: Probe = async () => false
  #queued: () => boolean = () => false
  #online = true
  #failures = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  #probing: Promise<boolean> | undefined
  #lastProbe = 0
  #closed = false
  readonly #scope = globalThis as BrowserScope
  readonly #browserOnline = () => void this.probeNow()
  readonly #browserOffline = () => this.markOffline(undefined)

  /** `onOnline` runs each time the client goes from offline to online (the engine syncs). */
  constructor(events: EventHub, onOnline: () => void) {
    this.#events = events
    this.#onOnline = onOnline
    this.#scope.addEventListener?.('online', this.#browserOnline)
    this.#scope.addEventListener?.('offline', this.#browserOffline)
  }

  /** Sets whether writes wait to be sent (then the backoff stops at {@link QUEUED_MAX_RETRY_MS}). */
  setQueued(queued: () => boolean): void {
    this.#queued = queued
  }

  /** Sets what a probe does (the engine's sync, or a topology fetch). */
  setProbe(probe: Probe): void {
    this.#probe = probe
  }

  /** Whether calls should go to the network: not known offline, nor the browser offline. */
  get online(): boolean {
    if (this.#scope.navigator?.onLine === false) {
      if (this.#online) this.markOffline(undefined)
      return false
    }
    return this.#online
  }

  /** A gateway answered. */
  markOnline(): void {
    if (this.#closed) return
    // A retry was due (the network was down, or a replay stopped on a transient failure): a
    // reply now is the reconnect it waited for.
    const retrying = this.#timer !== undefined
    this.#failures = 0
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (!this.#online) {
      this.#online = true
      this.#events.emit('online', { at: Date.now() })
    } else if (!retrying) return
    this.#onOnline()
  }

  /** A request got no reply (`error`), or the browser says it is offline (undefined). */
  markOffline(error: CausewayError | undefined): void {
    if (this.#closed) return
    if (this.#online) {
      this.#online = false
      const reason =
        error ??
        ({ code: 'OFFLINE', message: 'the browser reports that it is offline' } as CausewayError)
      this.#events.emit('offline', { at: Date.now(), error: reason })
    }
    this.retryLater()
  }

  /** Schedules the next probe with backoff (after an offline spell or a transient failure). */
  retryLater(): void {
    if (this.#closed || this.#timer !== undefined) return
    const max = this.#queued() ? QUEUED_MAX_RETRY_MS : MAX_RETRY_MS
    const base = Math.min(max, FIRST_RETRY_MS * 2 ** this.#failures)
    this.#failures = Math.min(this.#failures + 1, 10)
    const delay = base / 2 + Math.random() * (base / 2)
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.probeNow()
    }, delay)
    // A pending retry must not keep a Node process alive on its own.
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Probes unless a probe is running or ran less than `minGapMs` ago. */
  probeSoon(minGapMs = 1000): void {
    if (this.#online || Date.now() - this.#lastProbe < minGapMs) return
    void this.probeNow()
  }

  /** Probes now; resolves whether the gateway answered. */
  probeNow(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false)
    if (this.#probing !== undefined) return this.#probing
    this.#lastProbe = Date.now()
    this.#probing = this.#probe()
      .catch(() => false)
      .then((ok) => {
        this.#probing = undefined
        if (!ok && !this.#closed) this.retryLater()
        return ok
      })
    return this.#probing
  }

  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#scope.removeEventListener?.('online', this.#browserOnline)
    this.#scope.removeEventListener?.('offline', this.#browserOffline)
  }
}
