/**
 * The number of ops in the outbox as the app sees it (the `pending` event), kept exact while this
 * client and the others sharing its store change the outbox.
 *
 * This client counts its own changes as it makes them. What other clients did is learnt by
 * counting the store again (`recount`, on their `changed` message), which is only right when
 * none of this client's changes is half done: a commit asked whose count is not adjusted yet. So
 * each change is bracketed by `begin()`/`end()`; a recount waits until none is open, and is
 * dropped when one ran during its read: otherwise it would count a write twice or not at all.
 */
import type { EventHub } from './events.js'
import type { LocalStore } from './local-store.js'
import type { TabChannel } from './tab-channel.js'

export class OutboxCount {
  readonly #store: LocalStore
  readonly #events: EventHub
  readonly #channel: TabChannel
  readonly #isClosed: () => boolean
  #count = 0
  /** Changes begun and not ended (see the module comment). */
  #open = 0
  #epoch = 0
  readonly #idle: (() => void)[] = []
  #changedPost: ReturnType<typeof setTimeout> | undefined

  constructor(store: LocalStore, events: EventHub, channel: TabChannel, isClosed: () => boolean) {
    this.#store = store
    this.#events = events
    this.#channel = channel
    this.#isClosed = isClosed
  }

  /** Ops in the outbox, as last counted. */
  get value(): number {
    return this.#count
  }

  /** Whether a change of this client is under way (its count not adjusted yet). */
  get changing(): boolean {
    return this.#open > 0
  }

  /** A change of the outbox's count begins. */
  begin(): void {
    this.#open++
  }

  /** ... and is in the store and in the count. */
  end(): void {
    this.#open--
    this.#epoch++
    if (this.#open === 0) for (const wake of this.#idle.splice(0)) wake()
  }

  /** Adjusts the count without telling anyone (an op that shows only if it fails). */
  adjustSilently(delta: number): void {
    this.#count += delta
  }

  /** Adjusts the count, tells the app, and (once per burst) the other clients. */
  counted(delta: number): void {
    this.#count = Math.max(0, this.#count + delta)
    this.announce()
    // Other tabs recount from the store: once per burst is enough (a post per write costs).
    if (this.#changedPost !== undefined) return
    this.#changedPost = setTimeout(() => {
      this.#changedPost = undefined
      this.#channel.post({ t: 'changed' })
    }, 20)
    ;(this.#changedPost as { unref?: () => void }).unref?.()
  }

  /** Tells the app the count (the `pending` event). */
  announce(): void {
    this.#events.emit('pending', { count: this.#count })
  }

  /** Sets the count from a count of the store, telling the app when it changed. */
  set(count: number): void {
    if (count === this.#count) return
    this.#count = count
    this.announce()
  }

  /** Counts the outbox again from the store: what other clients of the store did. */
  async recount(): Promise<void> {
    for (let attempt = 0; attempt < 10 && !this.#isClosed(); attempt++) {
      while (this.#open > 0 && !this.#isClosed())
        await new Promise<void>((resolve) => this.#idle.push(resolve))
      const epoch = this.#epoch
      const count = (await this.#store.entries('outbox')).length
      if (epoch === this.#epoch && this.#open === 0) {
        this.set(count)
        return
      }
    }
  }

  /** Stops: wakes a waiting recount (it gives up), drops the pending post. */
  close(): void {
    for (const wake of this.#idle.splice(0)) wake()
    clearTimeout(this.#changedPost)
  }
}
