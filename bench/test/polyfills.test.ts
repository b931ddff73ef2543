import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  K6AbortController,
  K6URL,
  installPolyfills,
  utf8Decode,
  utf8Encode,
} from '../src/k6/polyfills.js'

// k6's runtime lacks these globals; the bundle's stand-ins must agree with the web platform on
// everything the SDK uses them for.
describe('k6 polyfills', () => {
  it('encode UTF-8 exactly as TextEncoder does, lone surrogates included', () => {
    const encoder = new TextEncoder()
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(utf8Encode(text)).toEqual(encoder.encode(text))
      }),
      { numRuns: 500 },
    )
  })

  it('decode UTF-8 as TextDecoder does, and refuse malformed input when fatal', () => {
    const fatal = new TextDecoder('utf-8', { fatal: true })
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), (bytes) => {
        let expected: string | undefined
        try {
          expected = fatal.decode(bytes)
        } catch {
          expected = undefined
        }
        if (expected === undefined) expect(() => utf8Decode(bytes, true)).toThrow(TypeError)
        else expect(utf8Decode(bytes, true)).toBe(expected)
      }),
      { numRuns: 3000 },
    )
    expect(utf8Decode(utf8Encode('grüße 🌍'), true)).toBe('grüße 🌍')
  })

  it('parse and resolve gateway URLs as URL does', () => {
    for (const [input, base] of [
      ['http://127.0.0.1:7070', undefined],
      ['http://LOCALHOST:7071/', undefined],
      ['https://eu.example.com/causeway/?x=1#h', undefined],
      ['http://[::1]:7072/', undefined],
      ['/ap', 'http://us.test:80/base/x'],
      ['http://eu.test/', 'http://us.test'],
      ['ap/v1', 'http://us.test/a/b'],
    ] as const) {
      const ours = new K6URL(input, base)
      const web = new URL(input, base)
      expect({ href: ours.href, protocol: ours.protocol, host: ours.host }).toEqual({
        href: web.href,
        protocol: web.protocol,
        host: web.host,
      })
    }
    expect(() => new K6URL('not a url')).toThrow(TypeError)
  })

  it('abort: listeners (functions and handleEvent objects) fire once, with the reason', () => {
    const controller = new K6AbortController()
    const calls: string[] = []
    const handler = { handleEvent: () => calls.push('object') }
    controller.signal.addEventListener('abort', () => calls.push('function'))
    controller.signal.addEventListener('abort', handler)
    const removed = () => calls.push('removed')
    controller.signal.addEventListener('abort', removed)
    controller.signal.removeEventListener('abort', removed)
    controller.abort('why')
    controller.abort('again')
    expect(calls).toEqual(['function', 'object'])
    expect(controller.signal.aborted).toBe(true)
    expect(() => controller.signal.throwIfAborted()).toThrow()
    expect(controller.signal.reason).toBe('why')
    expect(new K6AbortController().signal.aborted).toBe(false)
  })

  it('install only what is missing', () => {
    const target: Record<string, unknown> = { URL: 'keep' }
    const installed = installPolyfills(target)
    expect(installed).toEqual(
      expect.arrayContaining([
        'TextEncoder',
        'TextDecoder',
        'AbortController',
        'AbortSignal',
        'queueMicrotask',
      ]),
    )
    expect(installed).not.toContain('URL')
    expect(target.URL).toBe('keep')
  })
})
