import { describe, expect, it } from 'vitest'
import { CausewayError, ERROR_CODES, SessionNotAvailableError, isErrorCode } from '../src/errors.js'
import { DEFAULT_LIMITS, checkKey } from '../src/limits.js'

describe('CausewayError', () => {
  it('carries a stable code and the status of that code', () => {
    const e = new CausewayError('INVALID_VECTOR', 'bad')
    expect(e.status).toBe(400)
    expect(e.toBody()).toEqual({ statusCode: 400, code: 'INVALID_VECTOR', message: 'bad' })
    expect(isErrorCode('INVALID_VECTOR')).toBe(true)
    expect(isErrorCode('toString')).toBe(false)
  })

  it('is recognised across bundled copies through its brand', () => {
    const foreign = { [Symbol.for('causeway.error')]: true, code: 'TIMEOUT' }
    expect(foreign instanceof CausewayError).toBe(true)
    expect({ code: 'TIMEOUT' } instanceof CausewayError).toBe(false)
    // A subclass matches only its own code, also across copies.
    expect(foreign instanceof SessionNotAvailableError).toBe(false)
    expect(new CausewayError('TIMEOUT', 'x') instanceof SessionNotAvailableError).toBe(false)
    expect({ ...foreign, code: 'SESSION_NOT_AVAILABLE' } instanceof SessionNotAvailableError).toBe(
      true,
    )
  })

  it('rebuilds typed errors from reply bodies', () => {
    const e = CausewayError.fromBody({
      statusCode: 503,
      code: 'SESSION_NOT_AVAILABLE',
      message: 'x',
      details: { need: { 0: 3 } },
    })
    expect(e).toBeInstanceOf(SessionNotAvailableError)
    expect(e.details).toEqual({ need: { 0: 3 } })
    expect(CausewayError.fromBody('garbage', 502).code).toBe('INTERNAL')
  })

  it('maps every code to a 4xx or 5xx status', () => {
    for (const status of Object.values(ERROR_CODES)) expect(status).toBeGreaterThanOrEqual(400)
  })
})

describe('checkKey', () => {
  it('accepts UTF-8 keys up to the byte limit', () => {
    expect(() => checkKey('user:1')).not.toThrow()
    expect(() => checkKey('é'.repeat(256))).not.toThrow() // 512 bytes
  })

  it.each([
    ['', 'INVALID_KEY'],
    ['\ud800', 'INVALID_KEY'],
    [42, 'INVALID_KEY'],
    ['é'.repeat(257), 'KEY_TOO_LARGE'],
    ['k'.repeat(DEFAULT_LIMITS.maxKeyBytes + 1), 'KEY_TOO_LARGE'],
  ])('rejects %j with %s', (key, code) => {
    expect(() => checkKey(key)).toThrow(expect.objectContaining({ code }))
  })
})
