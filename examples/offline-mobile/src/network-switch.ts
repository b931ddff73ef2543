/**
 * The phone's network, as a switch: the demo shows two phones in one browser, so "offline" for
 * one of them cannot be the browser's network. Everything the SDK sends goes through this
 * `fetch` (its transport and its change feed): switched off, it fails the way a dropped network
 * does (`TypeError: Failed to fetch`), in-flight requests and open streams included.
 */
export class NetworkSwitch {
  #on = true
  readonly #inflight = new Set<AbortController>()
  readonly #listeners = new Set<(on: boolean) => void>()

  /** Whether the switch lets requests through. */
  get on(): boolean {
    return this.#on
  }

  /** Switches the network on or off; off cuts every request in flight. */
  set(on: boolean): void {
    if (on === this.#on) return
    this.#on = on
    if (!on) {
      for (const c of this.#inflight) c.abort(dropped())
      this.#inflight.clear()
    }
    for (const listener of this.#listeners) listener(on)
  }

  /** Calls `listener` on every change of the switch. */
  onChange(listener: (on: boolean) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** A `fetch` that goes through the switch. */
  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    if (!this.#on) throw dropped()
    const controller = new AbortController()
    const signal =
      init?.signal == null ? controller.signal : AbortSignal.any([init.signal, controller.signal])
    this.#inflight.add(controller)
    let streaming = false
    try {
      const res = await globalThis.fetch(input, { ...init, signal })
      if (res.body === null) return res
      // The body may still be arriving (a change feed never ends): keep it cuttable until read.
      streaming = true
      const done = (): void => {
        this.#inflight.delete(controller)
      }
      const body = res.body.pipeThrough(new TransformStream({ flush: done }), {
        signal: controller.signal,
      })
      controller.signal.addEventListener('abort', done, { once: true })
      return new Response(body, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      })
    } finally {
      if (!streaming) this.#inflight.delete(controller)
    }
  }
}

function dropped(): TypeError {
  return new TypeError('Failed to fetch (this phone is offline: its network switch is off)')
}
