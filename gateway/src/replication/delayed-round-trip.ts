/**
 * An emulated WAN round trip: a call reaches the far side `delayMs` after it is made and its
 * answer comes back `delayMs` after the far side settled it. Calls travel one FIFO line each way,
 * so pipelined batches arrive in the order they were sent. Shared by the in-process shipping link
 * and the delay put in front of an HTTP link (`causeway dev --backend redis --wan-delay`).
 */
import { DelayLine } from './delay-line.js'

/** Round trips with a fixed one-way delay; {@link close} fails the ones still travelling. */
export class DelayedRoundTrip {
  readonly #there: DelayLine
  readonly #back: DelayLine
  readonly #pending = new Set<(error: Error) => void>()
  #closed = false

  /** @param delayMs one-way delay in ms (0 still answers asynchronously). */
  constructor(delayMs: number) {
    this.#there = new DelayLine(delayMs)
    this.#back = new DelayLine(delayMs)
  }

  /** Runs `atDestination` one delay from now, in FIFO order, and answers one delay after it settles. */
  call<T>(atDestination: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('shipping link closed'))
    return new Promise<T>((resolve, reject) => {
      this.#pending.add(reject)
      const answer = (settle: () => void) => {
        if (this.#closed) return
        this.#back.push(() => {
          this.#pending.delete(reject)
          settle()
        })
      }
      this.#there.push(() => {
        atDestination().then(
          (value) => answer(() => resolve(value)),
          (error: unknown) => answer(() => reject(error)),
        )
      })
    })
  }

  /** Stops both lines and fails every call still on its way. */
  close(): void {
    this.#closed = true
    this.#there.close()
    this.#back.close()
    const error = new Error('shipping link closed')
    for (const reject of this.#pending) reject(error)
    this.#pending.clear()
  }
}
