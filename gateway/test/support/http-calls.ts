/**
 * Plain `fetch` calls to a running gateway for the hostile-input tests, which run the same
 * scenarios against the embedded cluster and the Redis deployment: each reply as its status,
 * headers and parsed JSON body.
 */
import { vi } from 'vitest'

/** One reply. */
export interface Reply {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

/** Options of {@link call}. */
export interface CallInit {
  method?: string
  /** A JSON body (sent with `content-type: application/json`). */
  json?: unknown
  /** A raw body, sent as it is. */
  body?: string
  headers?: Record<string, string>
}

/** One request to `url`; the reply body is parsed as JSON (or kept as `{ text }`). */
export async function call(url: string, init: CallInit = {}): Promise<Reply> {
  const headers = new Headers(init.headers)
  if (init.json !== undefined && !headers.has('content-type'))
    headers.set('content-type', 'application/json')
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  const text = await res.text()
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    body = { text }
  }
  return { status: res.status, headers: res.headers, body }
}

/** The URL of `key` under `base`. */
export const kvUrl = (base: string, key: string, query = ''): string =>
  `${base}/v1/kv/${encodeURIComponent(key)}${query}`

/** A PUT of `value` to `key`, with extra headers (a context, a dt). */
export const putKey = (
  base: string,
  key: string,
  value: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> => call(kvUrl(base, key), { method: 'PUT', json: { value }, headers })

/** A GET of `key`; `query` like `?replica=leader`. */
export const getKey = (
  base: string,
  key: string,
  query = '',
  headers: Record<string, string> = {},
): Promise<Reply> => call(kvUrl(base, key, query), { headers })

/**
 * The `causeway-after` a read needs to see the write `reply` acknowledged (`epoch@dc:idx`), so a
 * read anywhere returns only once that write is there.
 */
export function afterWrite(reply: Reply): string {
  const { epoch, dc, idx } = reply.body as { epoch: number; dc: number; idx: number }
  return `${epoch}@${dc}:${idx}`
}

/** Calls `attempt` until `done` holds or `ms` pass; the last reply (the caller checks it). */
export async function until(
  attempt: () => Promise<Reply>,
  done: (reply: Reply) => boolean,
  ms = 5_000,
): Promise<Reply> {
  let last: Reply | undefined
  await vi
    .waitUntil(async () => done((last = await attempt())), { timeout: ms, interval: 25 })
    .catch(() => undefined)
  return last ?? attempt()
}
