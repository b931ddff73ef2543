/**
 * The demo's pure parts: how two versions of an item merge, and which phone, gateway and list a
 * page is.
 */
import { describe, expect, it } from 'vitest'
import { demoGateways, phoneConfig } from '../src/config.js'
import { isItem, mergeItems } from '../src/merge.js'

describe('mergeItems', () => {
  it('keeps every distinct text, in order; done when any version is', () => {
    expect(
      mergeItems([
        { text: 'Oat milk', done: false },
        { text: 'Milk', done: true },
      ]),
    ).toEqual({ text: 'Oat milk / Milk', done: true })
  })

  it('merging a merge again adds nothing (the same texts, split back)', () => {
    const once = mergeItems([
      { text: 'A', done: false },
      { text: 'B', done: false },
    ])
    expect(mergeItems([once, { text: 'B', done: false }])).toEqual({ text: 'A / B', done: false })
  })

  it('isItem refuses what another device may have written', () => {
    expect(isItem({ text: 'x', done: false })).toBe(true)
    expect(isItem({ text: 'x' })).toBe(false)
    expect(isItem(null)).toBe(false)
    expect(isItem('x')).toBe(false)
  })
})

describe('phoneConfig', () => {
  function memory(): Pick<Storage, 'getItem' | 'setItem'> & { data: Map<string, string> } {
    const data = new Map<string, string>()
    return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v) }
  }

  it('phone b talks to region 1 by default; what the URL says wins, and is remembered', () => {
    const storage = memory()
    const gateways = demoGateways('http://g0,http://g1')
    expect(phoneConfig('?phone=b', storage, gateways)).toEqual({
      phone: 'b',
      gateway: 'http://g1',
      store: 'shopping-b',
      list: 'groceries',
    })
    phoneConfig('?phone=b&gateway=http://other&list=party', storage, gateways)
    // An installed app starts at ./ with no query: the phone it was, where it talked.
    expect(phoneConfig('', storage, gateways)).toMatchObject({
      phone: 'b',
      gateway: 'http://other',
      list: 'party',
    })
  })

  it('refuses names that would not make a store or key name', () => {
    expect(() => phoneConfig('?phone=../x', memory(), demoGateways(undefined))).toThrow()
    expect(() => phoneConfig('?list=a:b', memory(), demoGateways(undefined))).toThrow()
  })
})
