/**
 * One call's deadline: a single abort signal that fires when the call's time budget runs out, when
 * the caller's own signal aborts, or when the client is closed, and the translation of whichever
 * fired into the error the call rejects with.
 */
import { CausewayError } from '@causeway/core'

type Cause = 'none' | 'timeout' | 'caller' | 'closed'

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
