/**
 * The OpenAPI description of the offline-first routes and headers (issue 14), served by a real
 * gateway, and its examples accepted by that gateway.
 */
import { OpsReplySchema } from '@causeway/core/schemas'
import { Value } from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'
import { openSse } from '../support/sse-client.js'

let dev: DevCluster
let url: string
let doc: {
  paths: Record<string, Record<string, Record<string, unknown>>>
}

beforeAll(async () => {
  dev = await startDevCluster({ regions: 2, partitions: 2, replicas: 1, port: 0 })
  url = dev.urls[0]!
  doc = (await (await fetch(`${url}/v1/openapi.json`)).json()) as typeof doc
})
afterAll(() => dev.close())

interface Parameter {
  name: string
  in: string
  example?: unknown
}

describe('OpenAPI of the offline-first routes', () => {
  it('documents causeway-op-id on every write route', () => {
    for (const [path, method] of [
      ['/v1/kv/{key}', 'put'],
      ['/v1/kv/{key}', 'delete'],
      ['/v1/sets/{name}/add', 'post'],
      ['/v1/sets/{name}/remove', 'post'],
    ] as const) {
      const parameters = doc.paths[path]![method]!.parameters as Parameter[]
      const op = parameters.find((p) => p.name === 'causeway-op-id')
      expect(op, `${method} ${path}`).toMatchObject({ in: 'header' })
      expect(op!.example).toBe('phone-7f3a9c21.42')
    }
  })

  it('describes POST /v1/ops with an example the gateway applies', async () => {
    const post = doc.paths['/v1/ops']!.post! as {
      requestBody: { content: { 'application/json': { example: unknown } } }
      responses: Record<string, { content: { 'application/json': { example: unknown } } }>
    }
    const example = post.requestBody.content['application/json'].example
    const res = await fetch(`${url}/v1/ops`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(example),
    })
    expect(res.status).toBe(200)
    const reply = (await res.json()) as { results: unknown[]; error?: unknown }
    expect(reply.error).toBeUndefined()
    expect(reply.results).toHaveLength(3)
    expect(Value.Check(OpsReplySchema, reply)).toBe(true)
    // The reply example is a valid reply.
    const replyExample = post.responses['200']!.content['application/json'].example
    expect(Value.Check(OpsReplySchema, replyExample)).toBe(true)
  })

  it('describes GET /v1/watch with query examples the gateway streams', async () => {
    const get = doc.paths['/v1/watch']!.get! as { parameters: Parameter[] }
    const names = get.parameters.map((p) => `${p.in}:${p.name}`)
    expect(names).toEqual(
      expect.arrayContaining([
        'query:prefix',
        'query:keys',
        'query:since',
        'query:level',
        'query:heartbeatMs',
        'header:causeway-after',
        'header:last-event-id',
      ]),
    )
    // Only `prefix` has an example: a watch takes one of prefix and keys, and a client that sends
    // every example (Schemathesis does) must send a watch the gateway takes.
    expect(get.parameters.find((p) => p.name === 'keys')!.example).toBeUndefined()
    const prefix = get.parameters.find((p) => p.name === 'prefix')!.example as string
    for (const query of [
      `prefix=${encodeURIComponent(prefix)}`,
      // A list of keys, each encoded in the list (`,` separates), the list encoded again.
      `keys=${encodeURIComponent(['cart:1', 'odd,key'].map(encodeURIComponent).join(','))}`,
    ]) {
      const opened = await openSse(`${url}/v1/watch?${query}`)
      expect(opened.ok, query).toBe(true)
      if (opened.ok) {
        expect((await opened.stream.next()).event).toBe('heartbeat')
        opened.stream.close()
      }
    }
  })
})
