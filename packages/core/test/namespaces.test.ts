import { describe, expect, it } from 'vitest'
import { checkNamespaces, conflictModeOf, isMajorityKey, namespaceOf } from '../src/namespaces.js'

describe('namespaces', () => {
  it('is the text before the first colon', () => {
    expect(namespaceOf('cart:42')).toBe('cart')
    expect(namespaceOf('cart:42:items')).toBe('cart')
    expect(namespaceOf(':x')).toBe('')
    expect(namespaceOf('plain')).toBeUndefined()
    expect(namespaceOf('{user:1}:cart')).toBe('{user')
  })

  it('gives each key its namespace’s conflict mode, last-writer-wins by default', () => {
    const ns = checkNamespaces({ cart: { conflicts: 'siblings' }, user: { conflicts: 'lww' } })
    expect(conflictModeOf('cart:1', ns)).toBe('siblings')
    expect(conflictModeOf('user:1', ns)).toBe('lww')
    expect(conflictModeOf('carts:1', ns)).toBe('lww')
    expect(conflictModeOf('cart', ns)).toBe('lww')
    expect(conflictModeOf('cart:1', undefined)).toBe('lww')
    // Inherited object properties are not namespaces.
    expect(conflictModeOf('constructor:1', ns)).toBe('lww')
    expect(conflictModeOf('__proto__:1', ns)).toBe('lww')
  })

  it('treats __proto__ as an ordinary namespace name', () => {
    const ns = checkNamespaces(JSON.parse('{"__proto__":{"conflicts":"siblings"}}'))
    expect(conflictModeOf('__proto__:1', ns)).toBe('siblings')
    expect(conflictModeOf('other:1', ns)).toBe('lww')
  })

  it("marks durability: 'majority' namespaces (committed reads, majority writes)", () => {
    const ns = checkNamespaces({
      acct: { conflicts: 'lww', durability: 'majority' },
      log: { conflicts: 'lww', durability: 'leader' },
    })
    expect(ns['acct']).toEqual({ conflicts: 'lww', durability: 'majority' })
    expect(ns['log']).toEqual({ conflicts: 'lww' })
    expect(isMajorityKey('acct:1', ns)).toBe(true)
    expect(isMajorityKey('log:1', ns)).toBe(false)
    expect(isMajorityKey('acct', ns)).toBe(false)
    expect(() => checkNamespaces({ a: { conflicts: 'lww', durability: 'all' } })).toThrow(
      /durability/,
    )
    expect(() => checkNamespaces({ a: { transactions: true, durability: 'majority' } })).toThrow(
      /transactions.durability/,
    )
  })

  it('rejects bad configurations with the reason', () => {
    expect(checkNamespaces(undefined)).toEqual({})
    expect(() => checkNamespaces([])).toThrow(/object/)
    expect(() => checkNamespaces({ 'a:b': { conflicts: 'siblings' } })).toThrow(/name/)
    expect(() => checkNamespaces({ '': { conflicts: 'siblings' } })).toThrow(/name/)
    expect(() => checkNamespaces({ a: { conflicts: 'crdt' } })).toThrow(/lww, siblings/)
    expect(() => checkNamespaces({ a: 'siblings' })).toThrow(/object/)
    expect(() => checkNamespaces({ a: { conflicts: 'lww', ttl: 1 } })).toThrow(/ttl/)
    expect(() => checkNamespaces({ ['x'.repeat(129)]: { conflicts: 'lww' } })).toThrow(/name/)
  })
})
