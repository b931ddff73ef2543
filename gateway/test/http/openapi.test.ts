import { afterAll, describe, expect, it } from 'vitest'
import { buildGateway } from '../../src/http/build-gateway.js'
import { FakeClusterService } from './fake-cluster-service.js'

const app = buildGateway({
  service: new FakeClusterService(),
  regionUrls: ['a', 'b'],
  processMetrics: false,
})
afterAll(() => app.close())

describe('OpenAPI document', () => {
  it('is served at /v1/openapi.json and names every route', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' })
    expect(res.statusCode).toBe(200)
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/healthz',
        '/metrics',
        '/v1/kv/{key}',
        '/v1/openapi.json',
        '/v1/ops',
        '/v1/status',
        '/v1/topology',
      ].sort(),
    )
    expect(Object.keys(doc.paths['/v1/kv/{key}']).sort()).toEqual(['delete', 'get', 'put'])
  })

  it('describes the kv parameters, headers and replies from the core schemas', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json()
    const get = doc.paths['/v1/kv/{key}'].get
    const params = Object.fromEntries(
      get.parameters.map((p: { name: string; in: string }) => [p.name, p.in]),
    )
    expect(params).toEqual({
      key: 'path',
      level: 'query',
      replica: 'query',
      timeoutMs: 'query',
      'causeway-after': 'header',
      'causeway-clock': 'header',
    })
    const reply = get.responses['200'].content['application/json'].schema
    expect(Object.keys(reply.properties)).toEqual(
      expect.arrayContaining([
        'found',
        'value',
        'ts',
        'dc',
        'idx',
        'epoch',
        'region',
        'replica',
        'waitedMs',
      ]),
    )
    expect(get.responses['4XX'] ?? get.responses['4xx']).toBeDefined()

    const put = doc.paths['/v1/kv/{key}'].put
    const putParams = put.parameters.map((p: { name: string }) => p.name)
    expect(putParams).toEqual(expect.arrayContaining(['level', 'durability', 'causeway-dt']))
    expect(put.requestBody.content['application/json'].schema.required).toEqual(['value'])
    const level = put.parameters.find((p: { name: string }) => p.name === 'level').schema
    // A fifo cluster refuses the causal level: its document does not offer it.
    expect(level.enum).toEqual(['eventual', 'monotonic-writes', 'writes-follow-reads', 'session'])
  })

  it('offers the causal level only on a cluster that ships causally', async () => {
    const levelsOf = (doc: { paths: Record<string, Record<string, unknown>> }) =>
      (
        doc.paths['/v1/kv/{key}']!['get'] as {
          parameters: { name: string; schema: { enum: string[] } }[]
        }
      ).parameters.find((p) => p.name === 'level')!.schema.enum
    const fifo = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json()
    expect(JSON.stringify(fifo)).not.toMatch(/"session","causal"/)
    expect(levelsOf(fifo)).not.toContain('causal')
    const causal = buildGateway({
      service: new FakeClusterService({ shipping: 'causal' }),
      regionUrls: ['a', 'b'],
      processMetrics: false,
    })
    try {
      const doc = (await causal.inject({ method: 'GET', url: '/v1/openapi.json' })).json()
      expect(levelsOf(doc)).toEqual([
        'eventual',
        'monotonic-reads',
        'read-your-writes',
        'session',
        'causal',
      ])
    } finally {
      await causal.close()
    }
  })
})

describe('OpenAPI document of a gateway with API keys', () => {
  // Schemathesis without the key (fuzz/schemathesis.sh): the topology, status, metrics and the
  // document itself answered 401 while the document declared only 200 and 5xx for them.
  it('declares the 401 of every route that answers one without a key', async () => {
    const keyed = buildGateway({
      service: new FakeClusterService(),
      regionUrls: ['a', 'b'],
      processMetrics: false,
      auth: { apiKeys: ['k1'] },
    })
    try {
      const doc = (
        await keyed.inject({
          method: 'GET',
          url: '/v1/openapi.json',
          headers: { authorization: 'Bearer k1' },
        })
      ).json()
      const undeclared: string[] = []
      for (const [path, operations] of Object.entries(
        doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>,
      )) {
        if (operations['get'] === undefined || path.includes('{')) continue
        const res = await keyed.inject({ method: 'GET', url: path })
        const declared = Object.keys(operations['get'].responses)
        const answer = (operations['get'].responses as Record<string, { content?: object }>)[
          `${String(res.statusCode)[0]}XX`
        ]
        if (answer?.content !== undefined && !('application/json' in answer.content))
          undeclared.push(`GET ${path} ${res.statusCode} not declared as JSON`)
        if (
          !declared.includes(String(res.statusCode)) &&
          !declared.includes(`${String(res.statusCode)[0]}XX`)
        )
          undeclared.push(`GET ${path} ${res.statusCode} (declared ${declared.join(', ')})`)
      }
      expect(undeclared).toEqual([])
    } finally {
      await keyed.close()
    }
  })
})
