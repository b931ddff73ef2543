/**
 * The parts of k6's built-in modules that the bundled transport uses (k6 provides them at run
 * time; the bundle keeps these imports external). Only what is used is declared.
 */
declare module 'k6/http' {
  export interface K6Timings {
    duration: number
    blocked: number
    connecting: number
    sending: number
    waiting: number
    receiving: number
  }
  export interface K6Response {
    status: number
    body: string | null
    /** Response headers, names in canonical form (`Causeway-Waited-Ms`). */
    headers: Record<string, string>
    error: string
    error_code: number
    timings: K6Timings
  }
  export interface K6Params {
    headers?: Record<string, string>
    tags?: Record<string, string>
    timeout?: string | number
    responseType?: 'text' | 'binary' | 'none'
  }
  export function asyncRequest(
    method: string,
    url: string,
    body?: string | null,
    params?: K6Params,
  ): Promise<K6Response>
  const http: { asyncRequest: typeof asyncRequest }
  export default http
}
