/** The HTTP-limit and rate-limit flags every gateway-running command takes, as options. */
import { describe, expect, it } from 'vitest'
import {
  UsageError,
  clockOffsets,
  httpLimitsOf,
  limitsOf,
  rateLimitOf,
} from '../../src/cli-args.js'

describe('limit flags', () => {
  it('maps each given flag to its option and leaves the others out', () => {
    expect(httpLimitsOf({})).toEqual({})
    expect(
      httpLimitsOf({
        'headers-timeout': '5000',
        'body-timeout': '2000',
        'request-timeout': '20000',
        'connection-timeout': '90000',
        'max-connections': '500',
        'max-connections-per-address': '20',
        'max-body-bytes': '100000000',
        'max-body-bytes-per-key': '30000000',
      }),
    ).toEqual({
      headersTimeoutMs: 5000,
      bodyTimeoutMs: 2000,
      requestTimeoutMs: 20_000,
      connectionTimeoutMs: 90_000,
      maxConnections: 500,
      maxConnectionsPerAddress: 20,
      maxBodyBytesInFlight: 100_000_000,
      maxBodyBytesInFlightPerKey: 30_000_000,
    })
    expect(rateLimitOf({})).toEqual({})
    expect(rateLimitOf({ 'rate-limit': '0', 'rate-limit-window': '250' })).toEqual({
      max: 0,
      windowMs: 250,
    })
    expect(rateLimitOf({ 'rate-limit-refused': '0' })).toEqual({ maxRefused: 0 })
  })

  it('bounds how far ahead of the clock a write may depend (--max-skew)', () => {
    expect(limitsOf({ 'max-skew': '5000', 'max-value-bytes': '100' })).toEqual({
      maxSkewMs: 5000,
      maxValueBytes: 100,
    })
    expect(() => limitsOf({ 'max-skew': '0' })).toThrow(UsageError)
  })

  it('offsets region clocks for dev and tests, one per region (--clock-offset)', () => {
    expect(clockOffsets(undefined, 2)).toBeUndefined()
    expect(clockOffsets(['0', '-60000'], 2)).toEqual([0, -60_000])
    expect(() => clockOffsets(['0'], 2)).toThrow('one per region')
    expect(() => clockOffsets(['0', '1.5'], 2)).toThrow(UsageError)
    expect(() => clockOffsets(['0', '86400001'], 2)).toThrow(UsageError)
  })

  it('refuses values that are not whole numbers in range', () => {
    expect(() => httpLimitsOf({ 'body-timeout': '0' })).toThrow(UsageError)
    expect(() => httpLimitsOf({ 'max-connections': '1e3' })).toThrow(UsageError)
    expect(() => rateLimitOf({ 'rate-limit-window': '0' })).toThrow(UsageError)
    expect(() => rateLimitOf({ 'rate-limit': '-1' })).toThrow(UsageError)
  })
})
