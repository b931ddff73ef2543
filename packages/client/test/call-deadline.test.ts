import { describe, expect, it } from 'vitest'
import { CallDeadline } from '../src/call-deadline.js'

describe('CallDeadline', () => {
  it('many concurrent calls share one close listener (no max-listeners warning) and close aborts them all', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const closing = new AbortController()
      const calls = Array.from(
        { length: 50 },
        () => new CallDeadline(10_000, undefined, closing.signal),
      )
      closing.abort()
      for (const call of calls) {
        expect(call.signal.aborted).toBe(true)
        expect(() => call.throwIfStopped('get')).toThrow(
          expect.objectContaining({ code: 'SHUTTING_DOWN' }),
        )
        call.dispose()
      }
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('a disposed call is not aborted by a later close', () => {
    const closing = new AbortController()
    const call = new CallDeadline(10_000, undefined, closing.signal)
    call.dispose()
    closing.abort()
    expect(call.signal.aborted).toBe(false)
  })
})
