/**
 * One call's deadline: a single abort signal that fires when the call's time budget runs out, when
 * the caller's own signal aborts, or when the client is closed, and the translation of whichever
 * fired into the error the call rejects with; and an attempt's own, earlier cutoff within it.
 */
import { CausewayError } from '@causeway/core'

/** What stopped a call. */
export type Cause = 'none' | 'timeout' | 'caller' | 'closed'

function onTimer(deadline: CallDeadline): void {
  deadline.abort('timeout')
}

// The live deadlines of each client's close signal. One listener per client rather than one per
// call: dozens of concurrent calls would otherwise trip Node's max-listeners warning.
const liveByClosing = new WeakMap<AbortSignal, Set<CallDeadline>>()

function track(closing: AbortSignal, deadline: CallDeadline): void {
  let live = liveByClosing.get(closing)
  if (!live) {
    const calls = new Set<CallDeadline>()
    live = calls
    liveByClosing.set(closing, calls)
    closing.addEventListener(
      'abort',
      () => {
        for (const call of calls) call.abort('closed')
      },
      { once: true },
    )
  }
  live.add(deadline)
}

/** A call's time budget and abort signal. Call {@link CallDeadline.dispose} when the call ends. */
export class CallDeadline {
  /** When the budget runs out, in `Date.now()` milliseconds. */
  readonly at: number
  readonly timeoutMs: number
  readonly #controller = new AbortController()
  readonly #timer: ReturnType<typeof setTimeout>
  readonly #caller: AbortSignal | undefined
  readonly #closing: AbortSignal
  #cause: Cause = 'none'

  constructor(timeoutMs: number, caller: AbortSignal | undefined, closing: AbortSignal) {
    this.timeoutMs = timeoutMs
    this.at = Date.now() + timeoutMs
    this.#caller = caller
    this.#closing = closing
    // Listeners are this object (handleEvent) and a module function: no closure per call.
    this.#timer = setTimeout(onTimer, timeoutMs, this)
    if (caller?.aborted) this.abort('caller')
    else caller?.addEventListener('abort', this)
    if (closing.aborted) this.abort('closed')
    else track(closing, this)
  }

  /** Aborts every request of the call. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  /** What stopped the call, if anything: its deadline, the caller's signal or `close()`. */
  get stoppedBy(): Cause {
    return this.#cause
  }

  /** Milliseconds left, never negative. */
  remaining(): number {
    return Math.max(0, this.at - Date.now())
  }

  /** @internal Event listener for the caller's signal. */
  handleEvent(): void {
    this.abort('caller')
  }

  /** @internal */
  abort(cause: Cause): void {
    if (this.#cause !== 'none') return
    this.#cause = cause
    this.#controller.abort()
  }

  /**
   * Throws what the call must reject with if the deadline, the caller or `close()` stopped it:
   * `TIMEOUT`, the caller's abort reason, or `SHUTTING_DOWN`. `what` names the interrupted step.
   */
  throwIfStopped(what: string, details?: Record<string, unknown>): void {
    switch (this.#cause) {
      case 'none':
        return
      case 'caller':
        throw this.#caller?.reason
      case 'closed':
        throw new CausewayError('SHUTTING_DOWN', `${what}: the client was closed`, details)
      case 'timeout':
        throw new CausewayError(
          'TIMEOUT',
          `${what}: no reply within the call's deadline of ${this.timeoutMs} ms`,
          details,
        )
    }
  }

  /** Stops the timer and the listeners. */
  dispose(): void {
    clearTimeout(this.#timer)
    this.#caller?.removeEventListener('abort', this)
    liveByClosing.get(this.#closing)?.delete(this)
  }
}

function onCutoff(cutoff: AttemptCutoff): void {
  cutoff.fire()
}

/**
 * One request's cutoff inside a call: its signal aborts at `afterMs` from now, or when the call's
 * own signal does. A read that may still fall back home gives up on its region this way, so a
 * gateway that never answers does not eat the home region's share. Call
 * {@link AttemptCutoff.dispose} when the request ends.
 */
export class AttemptCutoff {
  readonly #controller = new AbortController()
  readonly #call: AbortSignal
  readonly #timer: ReturnType<typeof setTimeout>
  #fired = false

  constructor(call: CallDeadline, afterMs: number) {
    this.#call = call.signal
    this.#timer = setTimeout(onCutoff, Math.max(0, afterMs), this)
    if (this.#call.aborted) this.#controller.abort()
    else this.#call.addEventListener('abort', this)
  }

  /** Aborts the request. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  /** Whether the cutoff, not the call, aborted the request. */
  get fired(): boolean {
    return this.#fired
  }

  /** @internal Event listener for the call's signal. */
  handleEvent(): void {
    this.#controller.abort()
  }

  /** @internal */
  fire(): void {
    if (this.#controller.signal.aborted) return
    this.#fired = true
    this.#controller.abort()
  }

  /** Stops the timer and the listener. */
  dispose(): void {
    clearTimeout(this.#timer)
    this.#call.removeEventListener('abort', this)
  }
}
