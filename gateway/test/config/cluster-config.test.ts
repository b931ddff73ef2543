/** The deployment config: defaults, strictness, and errors that name what is wrong and where. */
import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import {
  ConfigError,
  DEFAULT_SHIPPING,
  findRegion,
  parseClusterConfig,
} from '../../src/config/cluster-config.js'

const SECRET = 'a-cluster-secret-of-some-length'

function valid(): Record<string, unknown> {
  return {
    format: 1,
    cluster: 'prod-1',
    partitions: 2,
    regions: [
      {
        name: 'eu',
        url: 'https://eu.example.com/',
        gateways: ['http://10.0.0.1:7070', 'http://10.0.0.2:7070'],
        replicas: [
          ['redis://10.0.1.1:6379', 'redis://10.0.1.2:6379'],
          ['redis://:pw@10.0.1.3:6379/2', 'redis://10.0.1.4:6379/2'],
        ],
      },
      {
        name: 'us',
        url: 'https://us.example.com',
        replicas: [['rediss://10.1.1.1:6380'], ['redis://10.1.1.3:6379']],
      },
    ],
    auth: { apiKeys: ['client-key-0123456789'], clusterSecret: SECRET },
  }
}

function problems(data: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseClusterConfig(data, 'cluster.json', env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toMatch(/^cluster\.json is not a valid cluster config:/)
    return (error as ConfigError).problems
  }
  throw new Error('expected the config to be refused')
}

describe('cluster config', () => {
  it('fills in defaults: region ids, gateways = [url], limits, shipping, namespace = cluster', () => {
    const config = parseClusterConfig(valid())
    expect(config.regions.map((r) => [r.id, r.name, r.url])).toEqual([
      [0, 'eu', 'https://eu.example.com'],
      [1, 'us', 'https://us.example.com'],
    ])
    expect(config.regions[1]!.gateways).toEqual(['https://us.example.com'])
    expect(config.regions[0]!.gateways).toHaveLength(2)
    expect(config.limits.maxKeyBytes).toBe(512)
    expect(config.shipping).toEqual(DEFAULT_SHIPPING)
    expect(config.redis.namespace).toBe('prod-1')
    expect(config.auth).toEqual({
      apiKeys: ['client-key-0123456789'],
      clusterSecret: SECRET,
      previousClusterSecrets: [],
    })
    expect(findRegion(config, 'us')?.id).toBe(1)
    expect(findRegion(config, '0')?.name).toBe('eu')
    expect(findRegion(config, '2')).toBeUndefined()
  })

  it('reads secrets from the environment', () => {
    const data = {
      ...valid(),
      auth: { apiKeys: [{ env: 'KEY' }], clusterSecret: { env: 'SECRET' } },
    }
    const config = parseClusterConfig(data, 'x', { KEY: 'k'.repeat(20), SECRET: 's'.repeat(20) })
    expect(config.auth).toEqual({
      apiKeys: ['k'.repeat(20)],
      clusterSecret: 's'.repeat(20),
      previousClusterSecrets: [],
    })
    expect(problems(data, { KEY: 'short' })).toEqual([
      'auth.apiKeys[0]: environment variable KEY is shorter than 16 characters',
      'auth.clusterSecret: environment variable SECRET is not set',
    ])
  })

  it('reads the cluster secrets rotated out (sibling contexts they signed stay accepted)', () => {
    const data = {
      ...valid(),
      auth: { clusterSecret: SECRET, previousClusterSecrets: ['o'.repeat(20), { env: 'OLD' }] },
    }
    const config = parseClusterConfig(data, 'x', { OLD: 'p'.repeat(20) })
    expect(config.auth.previousClusterSecrets).toEqual(['o'.repeat(20), 'p'.repeat(20)])
    expect(problems({ ...data, auth: { previousClusterSecrets: ['o'.repeat(20)] } })).toContain(
      'auth.previousClusterSecrets: needs auth.clusterSecret (the current one)',
    )
  })

  it('reads scoped API keys, HTTP limits and the rate limit (on by default)', () => {
    expect(parseClusterConfig(valid()).rateLimit).toEqual({
      max: 5000,
      windowMs: 1000,
      redis: undefined,
      maxRefused: 100,
    })
    expect(parseClusterConfig(valid()).http).toEqual({})
    const data = {
      ...valid(),
      auth: {
        apiKeys: [
          'plain-key-0123456789',
          { key: { env: 'CART' }, name: 'cart-app', namespaces: ['cart'], access: 'read' },
          { key: 'writer-key-0123456789', access: 'write', rateLimit: 50 },
        ],
        clusterSecret: SECRET,
      },
      http: {
        bodyTimeoutMs: 5000,
        maxConnections: 100,
        maxConnectionsPerAddress: 5,
        maxBodyBytesInFlight: 50_000_000,
        maxBodyBytesInFlightPerKey: 20_000_000,
      },
      rateLimit: { max: 0, windowMs: 2000, redis: 'redis://10.0.9.9:6379', maxRefused: 7 },
    }
    const config = parseClusterConfig(data, 'x', { CART: 'c'.repeat(20) })
    expect(config.auth.apiKeys).toEqual([
      'plain-key-0123456789',
      { key: 'c'.repeat(20), name: 'cart-app', namespaces: ['cart'], access: 'read' },
      { key: 'writer-key-0123456789', access: 'write', rateLimit: 50 },
    ])
    expect(config.http).toEqual({
      bodyTimeoutMs: 5000,
      maxConnections: 100,
      maxConnectionsPerAddress: 5,
      maxBodyBytesInFlight: 50_000_000,
      maxBodyBytesInFlightPerKey: 20_000_000,
    })
    expect(config.rateLimit).toEqual({
      max: 0,
      windowMs: 2000,
      redis: 'redis://10.0.9.9:6379',
      maxRefused: 7,
    })
    const refused = (apiKey: unknown) =>
      problems({ ...valid(), auth: { apiKeys: [apiKey], clusterSecret: SECRET } }).join('\n')
    expect(refused({ key: 'k'.repeat(20), namespaces: ['a:b'] })).toContain(
      'auth.apiKeys[0].namespaces[0]: must be a namespace name',
    )
    expect(refused({ key: 'k'.repeat(20), access: 'admin' })).toContain(
      'auth.apiKeys[0]: must be a secret',
    )
    expect(refused({ key: SECRET })).toContain('the cluster secret must not also be an API key')
    expect(problems({ ...valid(), http: { bodyTimeoutMs: 0 } }).join('\n')).toContain(
      'http.bodyTimeoutMs',
    )
  })

  it('refuses unknown fields and wrong types, naming each with its path', () => {
    const data = valid()
    ;(data as { extra?: number }).extra = 1
    const regions = data.regions as Record<string, unknown>[]
    regions[0]!.replica = []
    ;(regions[1]!.replicas as string[][])[1]![0] = 'http://not-redis:6379'
    data.partitions = '2'
    expect(problems(data)).toEqual([
      '(top level): unknown field "extra"',
      'partitions: must be integer',
      'regions[0]: unknown field "replica"',
      'regions[1].replicas[1][0]: must be a Redis URL: redis://[user:password@]host:port[/db] (rediss:// for TLS)',
    ])
  })

  it('says what is missing', () => {
    expect(problems({ format: 1 })).toEqual(['(top level): missing cluster, partitions, regions'])
    expect(problems({ ...valid(), format: 2 })).toEqual([
      'format: must be 1 (this version reads format 1)',
    ])
  })

  it('checks what a schema cannot: counts, names, secrets', () => {
    const data = valid()
    const regions = data.regions as { name: string; replicas: string[][] }[]
    regions[1]!.name = 'eu'
    regions[1]!.replicas.push(['redis://x:1'])
    regions[0]!.replicas[1]!.pop()
    regions[0]!.replicas[0]![1] = regions[0]!.replicas[0]![0]!
    expect(problems(data)).toEqual([
      'regions[0].replicas[0]: names one server twice',
      'regions[0].replicas[1]: has 1 replicas; partition 0 of the region has 2 (every partition of a region has as many)',
      'regions[1].name: "eu" names two regions',
      'regions[1].replicas: has 3 partitions; the cluster has 2',
    ])
    expect(problems({ ...valid(), auth: { apiKeys: [SECRET], clusterSecret: SECRET } })).toEqual([
      'auth: the cluster secret must not also be an API key',
    ])
    expect(problems({ ...valid(), auth: {} })).toEqual([
      'auth.clusterSecret: required with more than one region (regions ship with it)',
    ])
    expect(problems({ ...valid(), auth: { clusterSecret: 'short' } })).toEqual([
      'auth.clusterSecret: must be a string of 16 to 512 characters, or { "env": "NAME" } to read it from the environment',
    ])
    expect(
      problems({ ...valid(), limits: { defaultTimeoutMs: 9000, maxTimeoutMs: 8000 } }),
    ).toEqual(['limits.defaultTimeoutMs: 9000 is above limits.maxTimeoutMs (8000)'])
  })

  it('reads the clock settings: the skew wait, and per-region offsets for dev and tests', () => {
    const defaults = parseClusterConfig(valid())
    expect(defaults.clock).toEqual({ skewWaitMs: 2000, maxOffsetMs: 3_600_000 })
    expect(defaults.benchmark.clockOffsetsMs).toEqual([])
    const config = parseClusterConfig({
      ...valid(),
      clock: { skewWaitMs: 0 },
      benchmark: { clockOffsetsMs: [0, -60_000] },
    })
    expect(config.clock.skewWaitMs).toBe(0)
    expect(config.benchmark).toEqual({
      wanDelayMs: 0,
      partitionWanDelaysMs: [],
      withoutHlc: false,
      clockOffsetsMs: [0, -60_000],
    })
    expect(problems({ ...valid(), benchmark: { clockOffsetsMs: [0, 1, 2] } })).toEqual([
      'benchmark.clockOffsetsMs: has 3 offsets; the cluster has 2 regions',
    ])
    expect(problems({ ...valid(), benchmark: { clockOffsetsMs: [0, 1e9] } })).toHaveLength(1)
    expect(problems({ ...valid(), clock: { skewWaitMs: -1 } })).toHaveLength(1)
  })

  it('reads the shipping mode and its knobs, and refuses an unknown mode', () => {
    expect(parseClusterConfig(valid()).shipping).toMatchObject({
      mode: 'fifo',
      thetaMs: 5,
      deltaMs: 10,
      maxAheadMs: 250,
    })
    const causal = parseClusterConfig({
      ...valid(),
      shipping: { mode: 'causal', thetaMs: 2, deltaMs: 20, maxAheadMs: 100 },
      benchmark: { partitionWanDelaysMs: [100, 0] },
    })
    expect(causal.shipping).toMatchObject({
      mode: 'causal',
      thetaMs: 2,
      deltaMs: 20,
      maxAheadMs: 100,
    })
    expect(problems({ ...valid(), shipping: { maxAheadMs: -1 } })).toHaveLength(1)
    expect(causal.benchmark.partitionWanDelaysMs).toEqual([100, 0])
    expect(problems({ ...valid(), shipping: { mode: 'gossip' } })).toEqual([
      expect.stringMatching(/^shipping\.mode: must be equal to one of .*fifo .* or causal/),
    ])
    expect(problems({ ...valid(), benchmark: { partitionWanDelaysMs: [1, 2, 3] } })).toEqual([
      'benchmark.partitionWanDelaysMs: has 3 delays; the cluster has 2 partitions',
    ])
  })

  it('refuses causal shipping with Sentinel failover, which it does not follow yet', () => {
    const data: Record<string, unknown> = { ...valid(), shipping: { mode: 'causal' } }
    ;(data.regions as { sentinels?: string[] }[])[1]!.sentinels = ['redis://127.0.0.1:26379']
    expect(problems(data)).toEqual([
      "regions[1].sentinels: shipping.mode 'causal' does not follow Sentinel failover yet; use one or the other",
    ])
  })

  it('refuses transactional namespaces with causal shipping, which transactions do not follow yet', () => {
    const data: Record<string, unknown> = {
      ...valid(),
      shipping: { mode: 'causal' },
      namespaces: { acct: { transactions: true } },
    }
    for (const region of data.regions as { transactions?: string[] }[])
      region.transactions = ['redis://127.0.0.1:6390']
    expect(problems(data)).toEqual([
      "namespaces: transactional namespaces do not work with shipping.mode 'causal' yet; use fifo shipping, or no transactional namespace",
    ])
  })

  it('refuses region names that read as ids', () => {
    const data = valid()
    ;(data.regions as { name: string }[])[0]!.name = '1'
    expect(problems(data)[0]).toMatch(/^regions\[0\]\.name: must be letters, digits/)
  })
})

describe('the example in docs/operations.md', () => {
  it('is a valid config of 2 regions × 4 partitions × 3 replicas', async () => {
    const doc = await readFile(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
    const block = /<!-- example: cluster\.json[^>]*-->\s*```json\n([\s\S]*?)\n```/.exec(doc)
    expect(block, 'the marked example block').not.toBeNull()
    const env = {
      CAUSEWAY_API_KEY_WEB: 'w'.repeat(32),
      CAUSEWAY_API_KEY_MOBILE: 'm'.repeat(32),
      CAUSEWAY_CLUSTER_SECRET: 's'.repeat(32),
    }
    const config = parseClusterConfig(JSON.parse(block![1]!), 'docs/operations.md', env)
    expect(config.regions).toHaveLength(2)
    expect(config.partitions).toBe(4)
    for (const region of config.regions) {
      expect(region.replicas).toHaveLength(4)
      for (const replicas of region.replicas) expect(replicas).toHaveLength(3)
    }
  })
})
