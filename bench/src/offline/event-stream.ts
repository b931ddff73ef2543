/**
 * A minimal server-sent events reader over `fetch`, for the offline suite's change-feed cases:
 * opens `GET /v1/watch` and hands each event on as it arrives.
 */

/** One server-sent event. */
export interface StreamEvent {
  event: string
  id?: string
  data: string
}

/** An open event stream. */
export interface EventStream {
  /** The next event (waits for it), or rejects after `timeoutMs` or when the stream ends. */
  next(timeoutMs: number): Promise<StreamEvent>
  close(): void
}

/** Opens `url` as an event stream; throws with the reply body when the server refuses it. */
export async function openEventStream(url: string): Promise<EventStream> {
  const abort = new AbortController()
  const res = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: abort.signal })
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream'))
    throw new Error(`watch refused (${res.status}): ${await res.text()}`)
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  const queue: StreamEvent[] = []
  let buffer = ''
  let ended = false
  let wake: (() => void) | undefined
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const event: StreamEvent = { event: 'message', data: '' }
          const data: string[] = []
          for (const line of buffer.slice(0, cut).split('\n')) {
            const colon = line.indexOf(':')
            if (colon <= 0) continue
            const value = line.slice(colon + 1).replace(/^ /, '')
            const field = line.slice(0, colon)
            if (field === 'event') event.event = value
            else if (field === 'id') event.id = value
            else if (field === 'data') data.push(value)
          }
          buffer = buffer.slice(cut + 2)
          event.data = data.join('\n')
          queue.push(event)
          wake?.()
        }
      }
    } catch {
      // closed
    } finally {
      ended = true
      wake?.()
    }
  })()
  return {
    async next(timeoutMs) {
      const deadline = Date.now() + timeoutMs
      while (queue.length === 0) {
        if (ended) throw new Error('the event stream ended')
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`)
        let timer: ReturnType<typeof setTimeout> | undefined
        await new Promise<void>((resolve) => {
          wake = resolve
          timer = setTimeout(resolve, left)
        })
        clearTimeout(timer)
        wake = undefined
      }
      return queue.shift()!
    },
    close: () => abort.abort(),
  }
}
