/** The `namespaces` field of a Redis deployment's cluster config. */
import { describe, expect, it } from 'vitest'
import { ConfigError, parseClusterConfig } from '../../src/config/cluster-config.js'

const base = {
  format: 1,
  cluster: 'c1',
  partitions: 1,
  regions: [{ name: 'eu', url: 'http://127.0.0.1:7070', replicas: [['redis://127.0.0.1:6379']] }],
}

describe('cluster config namespaces', () => {
  it('defaults to none and reads siblings namespaces', () => {
    expect(parseClusterConfig(base).namespaces).toEqual({})
    const config = parseClusterConfig({
      ...base,
      namespaces: { cart: { conflicts: 'siblings' }, user: { conflicts: 'lww' } },
    })
    expect(config.namespaces).toEqual({
      cart: { conflicts: 'siblings' },
      user: { conflicts: 'lww' },
    })
  })

  it('names a bad mode or namespace', () => {
    const bad = (namespaces: unknown) => () => parseClusterConfig({ ...base, namespaces })
    expect(bad({ cart: { conflicts: 'crdt' } })).toThrow(ConfigError)
    expect(bad({ cart: { conflicts: 'siblings', ttl: 1 } })).toThrow(/unknown field "ttl"/)
    expect(bad({ 'cart:x': { conflicts: 'siblings' } })).toThrow(/namespaces: bad namespace name/)
  })
})
