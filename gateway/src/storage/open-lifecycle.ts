/**
 * The open/close life of a store (a partition replica, a transaction log): `new` → `opening` →
 * `open` → `closing` → `closed`, reopenable once closed. Concurrent opens share one; a close
 * waits for an open under way and then runs once; an open while closing is refused.
 */
import { CausewayError } from '@causeway/core'

/** Where a store is in its life. */
export type LifecycleState = 'new' | 'opening' | 'open' | 'closing' | 'closed'

export class OpenLifecycle {
  #state: LifecycleState = 'new'
  #opening: Promise<void> | undefined
  #closing: Promise<void> | undefined

  /** @param name what the store is, for the `SHUTTING_DOWN` refusal of an open while closing */
  constructor(readonly name: () => string) {}

  get state(): LifecycleState {
    return this.#state
  }

  /** Runs `open` unless the store is open or opening (then it shares that). */
  open(open: () => Promise<void>): Promise<void> {
    if (this.#state === 'open') return Promise.resolve()
    if (this.#opening) return this.#opening
    if (this.#state === 'closing')
      return Promise.reject(new CausewayError('SHUTTING_DOWN', `${this.name()} is closing`))
    this.#state = 'opening'
    this.#opening = open()
      .then(
        () => {
          this.#state = 'open'
        },
        (error: unknown) => {
          this.#state = 'closed'
          throw error
        },
      )
      .finally(() => {
        this.#opening = undefined
      })
    return this.#opening
  }

  /** Runs `close` once the store is open (after an open under way); nothing when it never was. */
  close(close: () => Promise<void>): Promise<void> {
    if (this.#state === 'new' || this.#state === 'closed') return Promise.resolve()
    this.#closing ??= (async () => {
      if (this.#opening) await this.#opening.catch(() => {})
      if (this.#state !== 'open') return
      this.#state = 'closing'
      try {
        await close()
      } finally {
        this.#state = 'closed'
      }
    })().finally(() => {
      this.#closing = undefined
    })
    return this.#closing
  }
}
