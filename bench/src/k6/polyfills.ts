/**
 * The few web globals the SDK uses that k6's JavaScript runtime lacks: `TextEncoder`,
 * `TextDecoder`, `AbortController`/`AbortSignal`, `URL`, `queueMicrotask` and
 * `String.prototype.isWellFormed`. Each is installed only when missing, so the same bundle runs
 * unchanged in Node (where the smoke test loads it) and in k6. They cover what the SDK calls,
 * not the whole web platform.
 */

type Listener =
  ((event: { type: string; target: unknown }) => void) | { handleEvent(e: unknown): void }

/** UTF-8 bytes of `text`; a lone surrogate becomes U+FFFD, as the web `TextEncoder` does. */
export function utf8Encode(text: string): Uint8Array {
  // Interpreted JS is slow in k6: size the output first, then fill it, with no intermediate array.
  let size = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) size += 1
    else if (c < 0x800) size += 2
    else if (c >= 0xd800 && c <= 0xdbff && isLow(text.charCodeAt(i + 1))) {
      size += 4
      i++
    } else size += 3
  }
  const out = new Uint8Array(size)
  if (size === text.length) {
    for (let i = 0; i < size; i++) out[i] = text.charCodeAt(i)
    return out
  }
  let o = 0
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdfff) {
      if (c <= 0xdbff && isLow(text.charCodeAt(i + 1))) {
        c = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(i + 1) - 0xdc00)
        i++
      } else c = 0xfffd
    }
    if (c < 0x80) out[o++] = c
    else if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6)
      out[o++] = 0x80 | (c & 63)
    } else if (c < 0x10000) {
      out[o++] = 0xe0 | (c >> 12)
      out[o++] = 0x80 | ((c >> 6) & 63)
      out[o++] = 0x80 | (c & 63)
    } else {
      out[o++] = 0xf0 | (c >> 18)
      out[o++] = 0x80 | ((c >> 12) & 63)
      out[o++] = 0x80 | ((c >> 6) & 63)
      out[o++] = 0x80 | (c & 63)
    }
  }
  return out
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff
}

/** Decodes UTF-8; with `fatal`, malformed input throws a TypeError (as the web API does). */
export function utf8Decode(bytes: Uint8Array, fatal: boolean): string {
  let text = ''
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!
    // Lead bytes: 0xxxxxxx, 110xxxxx (from C2), 1110xxxx, 11110xxx (up to F4); the rest never lead.
    const extra = b < 0x80 ? 0 : b < 0xc2 ? -1 : b < 0xe0 ? 1 : b < 0xf0 ? 2 : b < 0xf5 ? 3 : -1
    let c = extra === 0 ? b : extra === 1 ? b & 31 : extra === 2 ? b & 15 : b & 7
    let ok = extra >= 0 && i + extra < bytes.length
    for (let k = 1; ok && k <= extra; k++) {
      const next = bytes[i + k]!
      if ((next & 0xc0) !== 0x80) ok = false
      else c = (c << 6) | (next & 63)
    }
    if (
      ok &&
      ((extra === 2 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
        (extra === 3 && (c < 0x10000 || c > 0x10ffff)))
    ) {
      ok = false
    }
    if (!ok) {
      if (fatal) throw new TypeError('The encoded data was not valid UTF-8')
      text += '\ufffd'
      i++
      continue
    }
    text += String.fromCodePoint(c)
    i += extra + 1
  }
  return text
}

class K6TextEncoder {
  readonly encoding = 'utf-8'
  encode(text = ''): Uint8Array {
    return utf8Encode(String(text))
  }
}

class K6TextDecoder {
  readonly encoding = 'utf-8'
  readonly fatal: boolean
  constructor(_label = 'utf-8', options: { fatal?: boolean } = {}) {
    this.fatal = options.fatal === true
  }
  decode(input?: ArrayBufferView | ArrayBuffer): string {
    if (input === undefined) return ''
    const bytes =
      input instanceof ArrayBuffer
        ? new Uint8Array(input)
        : new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
    return utf8Decode(bytes, this.fatal)
  }
}

/** An `AbortSignal` with what the SDK uses: `aborted`, `reason`, listeners, `throwIfAborted`. */
class K6AbortSignal {
  aborted = false
  reason: unknown = undefined
  onabort: Listener | null = null
  readonly #listeners = new Set<Listener>()

  addEventListener(type: string, listener: Listener | null): void {
    if (type === 'abort' && listener) this.#listeners.add(listener)
  }

  removeEventListener(type: string, listener: Listener | null): void {
    if (type === 'abort' && listener) this.#listeners.delete(listener)
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason
  }

  /** @internal */
  fire(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const event = { type: 'abort', target: this }
    for (const listener of [...this.#listeners, ...(this.onabort ? [this.onabort] : [])]) {
      if (typeof listener === 'function') listener.call(this, event)
      else listener.handleEvent(event)
    }
    this.#listeners.clear()
  }
}

class K6AbortController {
  readonly signal = new K6AbortSignal()
  abort(reason?: unknown): void {
    const error = new Error('This operation was aborted')
    error.name = 'AbortError'
    this.signal.fire(reason === undefined ? error : reason)
  }
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' }

const URL_PATTERN = /^([a-zA-Z][a-zA-Z0-9+.-]*:)\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/

/** An absolute http(s) URL, parsed into the parts the SDK reads, or resolved against a base. */
class K6URL {
  readonly protocol: string
  readonly host: string
  readonly hostname: string
  readonly port: string
  readonly pathname: string
  readonly search: string
  readonly hash: string

  constructor(input: string, base?: string) {
    let text = String(input)
    if (!URL_PATTERN.test(text) && base !== undefined) {
      const b = new K6URL(base)
      if (text.startsWith('//')) text = b.protocol + text
      else if (text.startsWith('/')) text = b.origin + text
      else if (text.startsWith('?')) text = b.origin + b.pathname + text
      else text = b.origin + b.pathname.replace(/[^/]*$/, '') + text
    }
    const m = URL_PATTERN.exec(text)
    if (!m || m[2] === '') throw new TypeError(`Invalid URL: ${String(input)}`)
    this.protocol = m[1]!.toLowerCase()
    const host = m[2]!.toLowerCase()
    const portAt = host.lastIndexOf(':')
    const hasPort = portAt > host.lastIndexOf(']')
    this.hostname = hasPort ? host.slice(0, portAt) : host
    const port = hasPort ? host.slice(portAt + 1) : ''
    // As URL does: the scheme's default port is not part of the URL.
    this.port = DEFAULT_PORTS[this.protocol] === port ? '' : port
    this.host = this.port ? `${this.hostname}:${this.port}` : this.hostname
    this.pathname = m[3] === '' ? '/' : m[3]!
    this.search = m[4] === '?' ? '' : (m[4] ?? '')
    this.hash = m[5] === '#' ? '' : (m[5] ?? '')
  }

  get origin(): string {
    return `${this.protocol}//${this.host}`
  }

  get href(): string {
    return this.origin + this.pathname + this.search + this.hash
  }

  toString(): string {
    return this.href
  }

  toJSON(): string {
    return this.href
  }
}

function isWellFormed(this: string): boolean {
  for (let i = 0; i < this.length; i++) {
    const c = this.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = this.charCodeAt(i + 1)
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false
      i++
    } else if (c >= 0xdc00 && c <= 0xdfff) return false
  }
  return true
}

/** Installs each missing global; returns the names it installed. */
export function installPolyfills(target: Record<string, unknown> = globalThis as never): string[] {
  const installed: string[] = []
  const define = (name: string, value: unknown): void => {
    if (target[name] !== undefined) return
    Object.defineProperty(target, name, { value, writable: true, configurable: true })
    installed.push(name)
  }
  define('TextEncoder', K6TextEncoder)
  define('TextDecoder', K6TextDecoder)
  define('AbortController', K6AbortController)
  define('AbortSignal', K6AbortSignal)
  define('URL', K6URL)
  define('queueMicrotask', (fn: () => void) => void Promise.resolve().then(fn))
  const proto = String.prototype as unknown as Record<string, unknown>
  if (typeof proto.isWellFormed !== 'function') {
    Object.defineProperty(proto, 'isWellFormed', {
      value: isWellFormed,
      writable: true,
      configurable: true,
    })
    installed.push('String.prototype.isWellFormed')
  }
  return installed
}

export { K6AbortController, K6TextDecoder, K6TextEncoder, K6URL }
