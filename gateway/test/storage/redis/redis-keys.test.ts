/**
 * Client keys and namespaces cannot leave their prefix, move the hash tag or collide.
 *
 * @module-tag redis (starts real redis-servers: see vitest.config.ts)
 */
import { HLC_ZERO } from '@causeway/core'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  RedisPartitionReplica,
  ReplicaKeys,
  encodeKeyPart,
} from '../../../src/storage/redis/index.js'
import { type RedisServer, startRedis, stopAllRedis } from '../../support/redis-server.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(stopAllRedis)

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

const HOSTILE_KEYS = [
  '../x',
  '..',
  '/',
  '}',
  '{',
  '{x}',
  '}{',
  '{}',
  '*',
  '?',
  '[a-z]',
  '\\',
  'a\nb',
  '\r\n',
  ' ',
  '\u0000',
  '%41',
  'A',
  '%',
  'v:x',
  'x',
  ':sv',
  'sv',
  'meta',
  'log:0',
  '__keyspace@0__:x',
  'ключ',
  '😀',
  'k'.repeat(10_000),
  '}'.repeat(600),
]

/** The hash tag of a Redis key, as Redis Cluster computes it (undefined: the whole key). */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{')
  if (open < 0) return undefined
  const close = key.indexOf('}', open + 1)
  if (close <= open + 1) return undefined
  return key.slice(open + 1, close)
}

/** Every key on the server (SCAN, bounded). */
async function allKeys(redis: Redis): Promise<string[]> {
  const keys: string[] = []
  let cursor = '0'
  for (let i = 0; i < 10_000; i++) {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000)
    keys.push(...batch)
    cursor = next
    if (cursor === '0') return keys
  }
  throw new Error('SCAN did not finish')
}

describe('key encoding', () => {
  it('keeps only [A-Za-z0-9._:-] and percent-encodes the rest as UTF-8', () => {
    expect(encodeKeyPart('user:1_a.b-c')).toBe('user:1_a.b-c')
    expect(encodeKeyPart('{x}')).toBe('%7Bx%7D')
    expect(encodeKeyPart('%41')).toBe('%2541')
    expect(encodeKeyPart('a\nb')).toBe('a%0Ab')
    expect(encodeKeyPart('é')).toBe('%C3%A9')
  })

  it('is injective and yields only safe characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const ea = encodeKeyPart(a)
        expect(ea).toMatch(/^[A-Za-z0-9._:%-]*$/)
        if (a !== b) expect(ea).not.toBe(encodeKeyPart(b))
      }),
      { numRuns: 500 },
    )
  })

  it('puts every key of a partition under one hash tag', () => {
    const keys = new ReplicaKeys('tenant}{*', 1, 7)
    const tag = hashTag(keys.meta)
    expect(tag).toBe('tenant%7D%7B%2A:r1:p7')
    for (const key of [
      keys.sv,
      keys.log(0),
      keys.log(2),
      ...HOSTILE_KEYS.map((k) => keys.version(k)),
    ])
      expect(hashTag(key)).toBe(tag)
  })

  it('refuses an empty or ill-formed key or namespace', () => {
    const keys = new ReplicaKeys('ns', 0, 0)
    for (const bad of ['', '\uD800', 'a\uDC00b'])
      expect(() => keys.version(bad)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }))
    expect(() => new ReplicaKeys('', 0, 0)).toThrow(TypeError)
    expect(() => new ReplicaKeys('\uD800', 0, 0)).toThrow(TypeError)
  })
})

describe('hostile keys on a real server', () => {
  it('stay inside their namespace and never collide', async () => {
    await server.command('FLUSHALL')
    const namespaces = ['tenant-a', 'tenant-a}', '{tenant-a', 'tenant-b*']
    const replicas = namespaces.map(
      (namespace) =>
        new RedisPartitionReplica({
          url: server.url,
          namespace,
          region: 0,
          partition: 2,
          replica: 0,
          regions: 1,
        }),
    )
    for (const r of replicas) {
      cleanup.push(() => r.close())
      await r.open()
    }
    for (const [n, r] of replicas.entries())
      for (const [i, key] of HOSTILE_KEYS.entries())
        await r.write(key, JSON.stringify(`${n}/${i}`), HLC_ZERO)

    for (const [n, r] of replicas.entries()) {
      for (const [i, key] of HOSTILE_KEYS.entries())
        expect((await r.read(key)).version?.value).toBe(JSON.stringify(`${n}/${i}`))
      expect((await r.readLog(0, 0, 1000)).map((e) => e.key)).toEqual(HOSTILE_KEYS)
      expect(r.sv()).toEqual([HOSTILE_KEYS.length])
    }

    const redis = new Redis(server.url)
    cleanup.push(() => redis.disconnect())
    const stored = await allKeys(redis)
    // meta, sv, one log and one version per key, per namespace: nothing else, nothing shared.
    expect(stored).toHaveLength(namespaces.length * (3 + HOSTILE_KEYS.length))
    for (const r of replicas) {
      const mine = stored.filter((k) => k.startsWith(r.keys.prefix))
      expect(mine).toHaveLength(3 + HOSTILE_KEYS.length)
      for (const key of mine) expect(hashTag(key)).toBe(hashTag(r.keys.meta))
    }
    for (const key of stored) {
      expect(key).toMatch(/^cw:\{[A-Za-z0-9._:%-]+\}:[A-Za-z0-9._:%-]+$/)
    }
  })

  it('refuses keys it cannot store faithfully, writing nothing', async () => {
    const r = new RedisPartitionReplica({
      url: server.url,
      namespace: 'refuse',
      region: 0,
      partition: 0,
      replica: 0,
      regions: 1,
    })
    cleanup.push(() => r.close())
    await r.open()
    await expect(r.write('', '1', HLC_ZERO)).rejects.toMatchObject({ code: 'INVALID_KEY' })
    await expect(r.write('a\uD800', '1', HLC_ZERO)).rejects.toMatchObject({ code: 'INVALID_KEY' })
    await expect(r.read('\uDFFF')).rejects.toMatchObject({ code: 'INVALID_KEY' })
    expect(r.sv()).toEqual([0])
    expect(await r.readLog(0, 0, 10)).toEqual([])
  })
})
