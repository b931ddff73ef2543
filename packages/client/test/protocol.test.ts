import { describe, expect, it } from 'vitest'
import * as core from '@causeway/core'
import * as mirrored from '../src/protocol.js'

describe('protocol constants', () => {
  it('match @causeway/core (the SDK mirrors them to keep schemas out of browser bundles)', () => {
    expect(mirrored.HEADER_AFTER).toBe(core.HEADER_AFTER)
    expect(mirrored.HEADER_DT).toBe(core.HEADER_DT)
    expect(mirrored.PROTOCOL_VERSION).toBe(core.PROTOCOL_VERSION)
  })
})
