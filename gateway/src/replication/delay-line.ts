/**
 * A FIFO line with a fixed delay: what is pushed comes out `delayMs` later, in push order. One
 * timer for the whole line (the head's), so many messages in flight cost one timer, not many.
 * With no delay the line delivers on the next turn of the event loop (`setImmediate`), not after
 * a timer's minimum of 1 ms.
 */

interface Message {
  due: number
  deliver: () => void
}

/** Delivers callbacks after a fixed delay, in the order they were pushed. */
export class DelayLine {
  readonly delayMs: number
  #queue: Message[] = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #immediate: ReturnType<typeof setImmediate> | undefined
  #closed = false

  /** @param delayMs how long each message takes; 0 still delivers asynchronously. */
  constructor(delayMs: number) {
    if (!(delayMs >= 0))
      throw new RangeError(`delay must be a non-negative number of ms, not ${delayMs}`)
    this.delayMs = delayMs
  }

  /** Messages pushed and not yet delivered. */
  get size(): number {
    return this.#queue.length
  }

  /** Schedules `deliver` to run `delayMs` from now, after everything pushed before it. */
  push(deliver: () => void): void {
    if (this.#closed) throw new Error('delay line is closed')
    this.#queue.push({ due: Date.now() + this.delayMs, deliver })
    if (this.#timer === undefined && this.#immediate === undefined) this.#arm()
  }

  /** Stops the line; undelivered messages are dropped, as a network drops them. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    clearImmediate(this.#immediate)
    this.#timer = undefined
    this.#immediate = undefined
    this.#queue = []
  }

  #arm(): void {
    const head = this.#queue[0]
    if (!head) return
    if (this.delayMs === 0) this.#immediate = setImmediate(() => this.#fire())
    else this.#timer = setTimeout(() => this.#fire(), Math.max(0, head.due - Date.now()))
  }

  #fire(): void {
    this.#timer = undefined
    this.#immediate = undefined
    const now = Date.now()
    let delivered = 0
    while (delivered < this.#queue.length && this.#queue[delivered]!.due <= now) {
      this.#queue[delivered++]!.deliver()
      if (this.#closed) return
    }
    this.#queue.splice(0, delivered)
    // A delivery may have pushed (and armed the line) already.
    if (this.#timer === undefined && this.#immediate === undefined) this.#arm()
  }
}
