/**
 * A small server-sent events client for tests, over `fetch`: opens a stream, or returns the error
 * reply a refused one got, and reads its events one at a time with a deadline.
 */

/** One event of a stream. */
export interface SseEvent {
  event: string
  id?: string
  data: string
}

/** An open stream. */
export interface SseStream {
  status: number
  headers: Headers
  /** The next event; rejects when none arrives within `timeoutMs` or the stream ended. */
  next(timeoutMs?: number): Promise<SseEvent>
  /** The next event of kind `event`, skipping others. */
  nextOf(event: string, timeoutMs?: number): Promise<SseEvent>
  /** Resolves when the server ends the stream (or at once if it has). */
  ended(timeoutMs?: number): Promise<void>
  close(): void
}

/** What opening a watch gave: a stream, or an error reply. */
export type Opened =
  | { ok: true; stream: SseStream }
  | { ok: false; status: number; headers: Headers; body: Record<string, unknown> }

/** Opens `url` as an event stream. */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<Opened> {
  const abort = new AbortController()
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: abort.signal,
  })
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const body = (await res.json()) as Record<string, unknown>
    return { ok: false, status: res.status, headers: res.headers, body }
  }
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  const queue: SseEvent[] = []
  let buffer = ''
  let done = false
  let waiter: (() => void) | undefined
  const pump = async () => {
    try {
      for (;;) {
        const { value, done: end } = await reader.read()
        if (end) break
        buffer += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const event: SseEvent = { event: 'message', data: '' }
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue
            const colon = line.indexOf(':')
            const field = colon === -1 ? line : line.slice(0, colon)
            const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
            if (field === 'event') event.event = value
            else if (field === 'id') event.id = value
            else if (field === 'data') data.push(value)
          }
          event.data = data.join('\n')
          queue.push(event)
          waiter?.()
        }
      }
    } catch {
      // aborted
    } finally {
      done = true
      waiter?.()
    }
  }
  void pump()
  const wait = async (timeoutMs: number): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    await new Promise<void>((resolve, reject) => {
      waiter = resolve
      timer = setTimeout(() => reject(new Error(`no event within ${timeoutMs} ms`)), timeoutMs)
    }).finally(() => {
      clearTimeout(timer)
      waiter = undefined
    })
  }
  const stream: SseStream = {
    status: res.status,
    headers: res.headers,
    async next(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (queue.length === 0) {
        if (done) throw new Error('the stream ended')
        await wait(Math.max(1, deadline - Date.now()))
      }
      return queue.shift()!
    },
    async nextOf(event, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const e = await stream.next(Math.max(1, deadline - Date.now()))
        if (e.event === event) return e
      }
    },
    async ended(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (!done && Date.now() < deadline) {
        queue.splice(0)
        await wait(Math.max(1, deadline - Date.now())).catch(() => {})
      }
      if (!done) throw new Error('the stream did not end')
    },
    close: () => abort.abort(),
  }
  return { ok: true, stream }
}
