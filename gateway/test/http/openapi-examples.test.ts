/**
 * The OpenAPI document says what the gateway enforces, and its examples work: against a dev
 * cluster of the default shape (2 regions × 4 partitions × 3 replicas, with `cart` a siblings
 * namespace so that a causal context applies, and `acct` a transactional one), every operation sent with every example the
 * document gives (path, query, headers, body) is accepted; the session headers carry their
 * grammar; `timeoutMs` its maximum.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required?: boolean
  example?: unknown
  schema: Record<string, unknown>
}
interface Operation {
  operationId: string
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: Record<string, unknown>; example?: unknown }> }
}

let dev: DevCluster
let doc: { paths: Record<string, Record<string, Operation>> }

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 4,
    replicas: 3,
    port: 0,
    namespaces: { cart: { conflicts: 'siblings' }, acct: { transactions: true } },
  })
  doc = (await (await fetch(`${dev.urls[0]}/v1/openapi.json`)).json()) as typeof doc
})
afterAll(() => dev.close())

function bodyExample(operation: Operation): unknown {
  const content = operation.requestBody?.content['application/json']
  if (content === undefined) return undefined
  const examples = content.schema['examples'] as unknown[] | undefined
  return content.example ?? examples?.[0]
}

describe('OpenAPI examples', () => {
  it('describes the grammar of each session header, with an example', () => {
    const headers = new Map<string, Parameter>()
    for (const operations of Object.values(doc.paths))
      for (const operation of Object.values(operations))
        for (const p of operation.parameters ?? []) if (p.in === 'header') headers.set(p.name, p)
    expect([...headers.keys()].sort()).toEqual([
      'causeway-after',
      'causeway-clock',
      'causeway-context',
      'causeway-dt',
      'causeway-op-id',
      'last-event-id',
    ])
    for (const [name, p] of headers) {
      expect(p.schema['pattern'], name).toEqual(expect.any(String))
      // A cursor names its cluster: no example could fit every cluster.
      if (name === 'last-event-id') continue
      expect(p.example, name).toEqual(expect.any(String))
      expect(new RegExp(p.schema['pattern'] as string).test(p.example as string), name).toBe(true)
    }
    // The regions of this cluster, and no other.
    const after = new RegExp(headers.get('causeway-after')!.schema['pattern'] as string)
    expect(after.test('1@0:12,1:7')).toBe(true)
    expect(after.test('1@2:1')).toBe(false)
    const get = doc.paths['/v1/kv/{key}']!['get']!
    const timeout = get.parameters!.find((p) => p.name === 'timeoutMs')!
    expect(timeout.schema['maximum']).toBe(60_000)
    const add = doc.paths['/v1/sets/{name}/add']!['post']!
    const items = (
      add.requestBody!.content['application/json']!.schema['properties'] as {
        elements: { items: unknown }
      }
    ).elements.items
    expect(JSON.stringify(items)).toContain('"maxLength":1024')
  })

  it('accepts every operation sent with every example the document gives', async () => {
    const sent: string[] = []
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (method === 'head') continue
        let url = path
        const query = new URLSearchParams()
        const headers: Record<string, string> = {}
        for (const p of operation.parameters ?? []) {
          if (p.example === undefined) {
            expect(p.required ?? false, `${operation.operationId} ${p.name} needs an example`).toBe(
              false,
            )
            continue
          }
          let value = String(p.example)
          // One operation id per request: the same id for another write is OP_ID_REUSED, rightly.
          if (p.name === 'causeway-op-id') value = value.replace(/\.[0-9]+$/, `.${sent.length + 1}`)
          if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(value))
          else if (p.in === 'query') query.set(p.name, value)
          else headers[p.name] = value
        }
        const body = bodyExample(operation)
        if (operation.requestBody !== undefined)
          expect(body, `${operation.operationId} has a body example`).toBeDefined()
        if (body !== undefined) headers['content-type'] = 'application/json'
        const search = query.size > 0 ? `?${query}` : ''
        const stream = new AbortController()
        const res = await fetch(`${dev.urls[0]}${url}${search}`, {
          method: method.toUpperCase(),
          headers,
          signal: stream.signal,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
        // A change feed never ends: its status and first bytes are the answer.
        const feed = res.headers.get('content-type')?.startsWith('text/event-stream') === true
        const text = feed ? '(event stream)' : await res.text()
        if (feed) stream.abort()
        expect(
          { op: operation.operationId, status: res.status },
          `${method} ${url}${search} ${JSON.stringify(headers)} → ${text.slice(0, 300)}`,
        ).toEqual({ op: operation.operationId, status: 200 })
        sent.push(operation.operationId)
      }
    }
    expect(sent).toEqual(
      expect.arrayContaining([
        'getKey',
        'putKey',
        'deleteKey',
        'getTopology',
        'getStatus',
        'txRead',
        'txCommit',
      ]),
    )
  })
})
