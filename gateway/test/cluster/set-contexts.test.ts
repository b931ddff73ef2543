/** Signed set element contexts: what `has` and `scan` hand out and a remove hands back. */
import { describe, expect, it } from 'vitest'
import { ContextTokens } from '../../src/cluster/set-contexts.js'

const secret = new Uint8Array(32).fill(7)
const tokens = new ContextTokens(secret)
const dots = [
  { actor: 1, counter: 9 },
  { actor: 0, counter: 12 },
]

const rejects = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return (error as { code?: string }).code
  }
  return 'accepted'
}

describe('ContextTokens', () => {
  it('issues dots in canonical order with a 22-character MAC, and verifies them back', () => {
    const token = tokens.issue('s', 'x', dots)
    expect(token).toMatch(/^0-12_1-9\.[A-Za-z0-9_-]{22}$/)
    expect(tokens.verify('s', 'x', token)).toEqual([
      { actor: 0, counter: 12 },
      { actor: 1, counter: 9 },
    ])
    expect(tokens.issue('s', 'x', [dots[1]!])).toMatch(/^0-12\./)
  })

  it('gives the same token for the same dots whatever their order, on any instance with the secret', () => {
    expect(new ContextTokens(secret).issue('s', 'x', [...dots].reverse())).toBe(
      tokens.issue('s', 'x', dots),
    )
  })

  it('refuses a token for another element, set, secret or dots, and anything malformed', () => {
    const token = tokens.issue('s', 'x', dots)
    const [body, mac] = token.split('.') as [string, string]
    expect(rejects(() => tokens.verify('s', 'y', token))).toBe('INVALID_CONTEXT')
    expect(rejects(() => tokens.verify('t', 'x', token))).toBe('INVALID_CONTEXT')
    expect(
      rejects(() => new ContextTokens(new Uint8Array(32).fill(8)).verify('s', 'x', token)),
    ).toBe('INVALID_CONTEXT')
    // Dots added, dropped or changed under the same MAC.
    for (const forged of [`${body}_2-1.${mac}`, `0-12.${mac}`, `0-13_1-9.${mac}`])
      expect(rejects(() => tokens.verify('s', 'x', forged))).toBe('INVALID_CONTEXT')
    // Every single-character change of the MAC.
    for (let i = 0; i < mac.length; i++) {
      const flipped = mac.slice(0, i) + (mac[i] === 'A' ? 'B' : 'A') + mac.slice(i + 1)
      expect(rejects(() => tokens.verify('s', 'x', `${body}.${flipped}`))).toBe('INVALID_CONTEXT')
    }
    for (const bad of ['', '.', body, `${body}.`, `${body}.${mac}x`, `x${token}`, 42, null])
      expect(rejects(() => tokens.verify('s', 'x', bad))).toBe('INVALID_CONTEXT')
  })

  it('refuses a secret shorter than 16 bytes', () => {
    expect(() => new ContextTokens(new Uint8Array(15))).toThrow(RangeError)
  })
})
