/**
 * A stand-in for k6's `k6/http` in Node, with the same `asyncRequest` shape (status, text body,
 * timings), so the smoke test can run the k6 bundle against a real cluster without k6. It is
 * bundled into the test's copy of the bundle, so it records requests on `globalThis.k6HttpSeen`.
 */
export interface SeenRequest {
  method: string
  url: string
  headers: Record<string, string>
  tags: Record<string, string>
}

const holder = globalThis as { k6HttpSeen?: SeenRequest[] }
const seen = (holder.k6HttpSeen ??= [])

export async function asyncRequest(
  method: string,
  url: string,
  body: string | null,
  params: { headers?: Record<string, string>; tags?: Record<string, string> } = {},
) {
  seen.push({ method, url, headers: params.headers ?? {}, tags: params.tags ?? {} })
  const started = performance.now()
  try {
    const res = await fetch(url, { method, headers: params.headers, body: body ?? undefined })
    const text = await res.text()
    const duration = performance.now() - started
    return {
      status: res.status,
      body: text,
      // k6 gives header names in canonical form; fetch gives them in lower case.
      headers: Object.fromEntries(
        [...res.headers].map(([name, value]) => [
          name.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()),
          value,
        ]),
      ),
      error: '',
      error_code: 0,
      timings: { duration, blocked: 0, connecting: 0, sending: 0, waiting: duration, receiving: 0 },
    }
  } catch (error) {
    // k6 reports a failed request as status 0 with an error, it does not throw.
    return {
      status: 0,
      body: null,
      headers: {},
      error: String(error),
      error_code: 1000,
      timings: { duration: 0, blocked: 0, connecting: 0, sending: 0, waiting: 0, receiving: 0 },
    }
  }
}

export default { asyncRequest }
