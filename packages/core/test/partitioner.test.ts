import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { fnv1a32, hashTag, partitionOf } from '../src/partitioner.js'

const utf8 = (s: string) => new TextEncoder().encode(s)

describe('fnv1a32', () => {
  it('matches the published FNV-1a 32-bit test vectors', () => {
    expect(fnv1a32(utf8(''))).toBe(0x811c9dc5)
    expect(fnv1a32(utf8('a'))).toBe(0xe40c292c)
    expect(fnv1a32(utf8('foobar'))).toBe(0xbf9cf968)
  })

  it('hashes UTF-8 bytes, not UTF-16 code units', () => {
    expect(fnv1a32(utf8('é'))).toBe(fnv1a32(new Uint8Array([0xc3, 0xa9])))
  })
})

describe('hashTag', () => {
  it('follows the Redis Cluster rule', () => {
    expect(hashTag('user:{42}:profile')).toBe('42')
    expect(hashTag('{user1000}.following')).toBe('user1000')
    expect(hashTag('foo{}{bar}')).toBe('foo{}{bar}') // empty first tag: whole key
    expect(hashTag('foo{{bar}}zap')).toBe('{bar')
    expect(hashTag('foo{bar}{zap}')).toBe('bar')
    expect(hashTag('no-tag')).toBe('no-tag')
    expect(hashTag('open{only')).toBe('open{only')
  })
})

describe('partitionOf', () => {
  it('co-locates keys that share a tag', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((t) => !t.includes('}')),
        fc.string(),
        fc.string(),
        (tag, a, b) => {
          const safeA = a.replaceAll('{', '')
          const safeB = b.replaceAll('{', '')
          expect(partitionOf(`${safeA}{${tag}}x`, 16)).toBe(partitionOf(`${safeB}{${tag}}y`, 16))
        },
      ),
    )
  })

  it('stays in range and spreads keys over partitions', () => {
    const counts = new Array<number>(8).fill(0)
    for (let i = 0; i < 8000; i++) counts[partitionOf(`key:${i}`, 8)]!++
    for (const c of counts) expect(c).toBeGreaterThan(800)
  })

  it('is stable (SDK and gateway must agree forever)', () => {
    expect(partitionOf('user:1', 4)).toBe(fnv1a32(utf8('user:1')) % 4)
    expect([partitionOf('user:1', 4), partitionOf('cart:{7}', 4)]).toEqual([
      fnv1a32(utf8('user:1')) % 4,
      fnv1a32(utf8('7')) % 4,
    ])
  })
})
