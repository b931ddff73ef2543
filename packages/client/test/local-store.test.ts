/**
 * How a store's refusal reads as `STORAGE_FULL`: what browsers and Node give (a DOMException
 * named QuotaExceededError, with or without a message, wrapped by abstract-level or not).
 */
import { describe, expect, it } from 'vitest'
import { storageFull } from '../src/offline/local-store.js'

describe('storageFull', () => {
  it('a QuotaExceededError (Chromium: empty message) is a quota error that names itself', () => {
    const error = storageFull(new DOMException('', 'QuotaExceededError'))
    expect(error.code).toBe('STORAGE_FULL')
    expect(error.details).toMatchObject({ quota: true })
    expect(error.message).toBe('the local store is full (quota exceeded): QuotaExceededError')
  })

  it('wrapped by abstract-level (its cause): still a quota error', () => {
    const inner = new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    const wrapped = Object.assign(new Error('write failed', { cause: inner }), {
      code: 'LEVEL_DATABASE_NOT_OPEN',
    })
    expect(storageFull(wrapped).details).toMatchObject({
      quota: true,
      storeCode: 'LEVEL_DATABASE_NOT_OPEN',
    })
  })

  it('any other refusal (a full disk in Node) is STORAGE_FULL without quota', () => {
    const error = storageFull(Object.assign(new Error('IO error: No space left on device'), {}))
    expect(error.details).toMatchObject({ quota: false })
    expect(error.message).toBe(
      'the local store refused the write: IO error: No space left on device',
    )
  })
})
