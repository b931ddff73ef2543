/**
 * Issue 23.3: a record whose keys have a pattern (`patternProperties`) lets every other key
 * through unless it says so (`additionalProperties: false` or `propertyNames`), so the code behind
 * it got keys it cannot take (`POST /v1/tx/read` with `{"after":{"x":5}}` answered 500). Walks
 * every schema `@causeway/core/schemas` exports (the hidden internal routes' too) and the OpenAPI
 * document a gateway serves with every optional route on. The document never holds
 * `patternProperties` (`@fastify/swagger` turns them into `additionalProperties`, dropping the
 * pattern), so there the rule is that a map a request carries names its keys (`propertyNames`):
 * what the gateway enforces is what the document says, for a client and for Schemathesis.
 */
import * as schemas from '@causeway/core/schemas'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevCluster, type DevCluster } from '../../src/dev-server.js'

let dev: DevCluster
let doc: { paths: Record<string, Record<string, Operation>> }

interface Operation {
  parameters?: { schema?: unknown }[]
  requestBody?: { content?: Record<string, { schema?: unknown }> }
}

beforeAll(async () => {
  dev = await startDevCluster({
    regions: 2,
    partitions: 2,
    replicas: 1,
    port: 0,
    namespaces: { acct: { transactions: true }, cart: { conflicts: 'siblings' } },
  })
  doc = (await (await fetch(`${dev.urls[0]}/v1/openapi.json`)).json()) as typeof doc
})
afterAll(() => dev.close())

// A pattern every key matches: nothing is "additional" to it.
const MATCHES_EVERY_KEY = new Set(['^.*$', '^(.*)$', '.*', ''])

type Rule = (schema: Record<string, unknown>) => boolean

/** Object schemas with a key pattern that let other keys through. */
const openPatternRecord: Rule = (schema) => {
  const patterns = schema['patternProperties']
  if (patterns === null || typeof patterns !== 'object') return false
  return (
    schema['additionalProperties'] !== false &&
    schema['propertyNames'] === undefined &&
    !Object.keys(patterns).some((p) => MATCHES_EVERY_KEY.has(p))
  )
}

/** Maps (any key, each value a schema) whose keys are not named. */
const unnamedMap: Rule = (schema) =>
  (openPatternRecord(schema) ||
    (typeof schema['additionalProperties'] === 'object' &&
      schema['additionalProperties'] !== null)) &&
  schema['propertyNames'] === undefined

/** JSON paths of the schemas under `node` that break `rule`. */
function offenders(rule: Rule, node: unknown, path = '$', found: string[] = []): string[] {
  if (Array.isArray(node)) {
    node.forEach((item, i) => offenders(rule, item, `${path}[${i}]`, found))
    return found
  }
  if (node === null || typeof node !== 'object') return found
  const schema = node as Record<string, unknown>
  if (rule(schema)) found.push(path)
  for (const [key, value] of Object.entries(schema)) offenders(rule, value, `${path}.${key}`, found)
  return found
}

// What clients send: every operation's parameters and request bodies.
function requestSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [path, operations] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(operations)) {
      out[`${method} ${path} parameters`] = op.parameters?.map((p) => p.schema)
      out[`${method} ${path} body`] = Object.values(op.requestBody?.content ?? {}).map(
        (c) => c.schema,
      )
    }
  return out
}

describe('schemas with a key pattern refuse other keys', () => {
  it('the rules catch an open record (negative control)', () => {
    const open = { type: 'object', patternProperties: { '^[0-9]+$': { type: 'string' } } }
    expect(offenders(openPatternRecord, { body: open })).toEqual(['$.body'])
    expect(offenders(openPatternRecord, { ...open, additionalProperties: false })).toEqual([])
    expect(offenders(openPatternRecord, { ...open, propertyNames: { pattern: 'x' } })).toEqual([])
    expect(offenders(openPatternRecord, { patternProperties: { '^.*$': {} } })).toEqual([])
    // As the document shows such a record: a map of anything.
    const served = { type: 'object', additionalProperties: { type: 'string' } }
    expect(offenders(unnamedMap, { body: served })).toEqual(['$.body'])
    expect(offenders(unnamedMap, { ...served, propertyNames: { pattern: 'x' } })).toEqual([])
  })

  it('in every schema the core exports (the hidden internal routes included)', () => {
    expect(Object.keys(schemas).length).toBeGreaterThan(10)
    expect(offenders(openPatternRecord, schemas)).toEqual([])
  })

  it('in the served OpenAPI document, every map a request carries names its keys', () => {
    // The document this walks has the optional routes.
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/tx/read', '/v1/tx/commit']))
    expect(offenders(openPatternRecord, doc)).toEqual([])
    expect(offenders(unnamedMap, requestSchemas())).toEqual([])
    // The one such map today, as the gateway enforces it.
    const after = (
      doc.paths['/v1/tx/read']!['post']!.requestBody!.content!['application/json']!.schema as {
        properties: Record<string, { propertyNames?: { pattern?: string } }>
      }
    ).properties['after']
    expect(after?.propertyNames?.pattern).toBe('^(0|[1-9][0-9]{0,4})$')
  })
})
