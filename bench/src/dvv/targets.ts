/**
 * The stores the `dvv` suite measures, as workload targets: Causeway (a siblings namespace,
 * through the real SDK) and the baseline server (`baseline-server.ts`), both over the SDK's
 * keep-alive `node:http` transport, so they differ only in what answers.
 */
import { type Transport, connect } from '@causeway/client/node'
import { type Target, type TargetClient, base64urlBytes } from './workload.js'

/** Causeway: one SDK client (its own session) per logical client, in its home region. */
export function causewayTarget(
  name: string,
  urls: readonly string[],
  transport: Transport,
): Target {
  return {
    name,
    async client(_client, region) {
      const db = await connect({ url: urls[region]!, transport })
      return {
        async get(key) {
          const r = await db.get(key)
          return {
            values: r.siblings?.length ?? (r.found ? 1 : 0),
            context: r.context,
            clockBytes: base64urlBytes(r.context),
          }
        },
        async put(key, value, context) {
          // The value is the JSON text of a string: write the string.
          await db.put(key, JSON.parse(value) as string, { context: context ?? null })
        },
      } satisfies TargetClient
    },
  }
}

/** The baseline server: plain GET/PUT with the client id and a per-client write counter. */
export function baselineTarget(
  name: string,
  urls: readonly string[],
  transport: Transport,
): Target {
  return {
    name,
    async client(client, region) {
      const base = urls[region]!
      let seq = 0
      return {
        async get(key) {
          const res = await transport.request({
            method: 'GET',
            url: `${base}/kv/${encodeURIComponent(key)}`,
            headers: {},
          })
          if (res.status !== 200) throw new Error(`GET ${res.status}`)
          const body = res.body as { values: unknown[]; context: string }
          return {
            values: body.values.length,
            context: body.context,
            clockBytes: base64urlBytes(body.context),
          }
        },
        async put(key, value, context) {
          const headers: Record<string, string> = {
            'content-type': 'application/json',
            'x-client': String(client),
            'x-seq': String(++seq),
          }
          if (context !== undefined) headers['x-context'] = context
          const res = await transport.request({
            method: 'PUT',
            url: `${base}/kv/${encodeURIComponent(key)}`,
            headers,
            body: `{"value":${value}}`,
          })
          if (res.status !== 200) throw new Error(`PUT ${res.status}`)
        },
      } satisfies TargetClient
    },
  }
}
