/**
 * Set element contexts on the wire: what `has` and `scan` return for an element (its live dots)
 * and what a remove may send back to remove exactly those. A context is an opaque token,
 * `<dots>.<mac>`: the dots as `actor-counter` pairs joined by `_`, and an HMAC-SHA256 (16 bytes,
 * base64url) of the set name, the element and the dots under the cluster's context secret.
 *
 * Why signed: a remove moves its context's dots into the set-tombstone, which hides whatever key
 * has such a dot, and absorbs dots the leader has not seen into the set-clock, which stops such
 * adds from ever being written there. Dots a client made up could so remove other elements, or
 * elements added later; a signed context can only name dots a replica reported for that element.
 */
import {
  type KeyObject,
  createHmac,
  createSecretKey,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto'
import {
  CausewayError,
  MAX_CONTEXT_DOTS,
  isActor,
  isCounter,
  normalizeDots,
  type Dot,
} from '@causeway/core'

const MAC_BYTES = 16
const TOKEN = /^((?:[0-9]+-[0-9]+)(?:_[0-9]+-[0-9]+)*)\.([A-Za-z0-9_-]{22})$/

// Every region service of this process shares it, so an embedded cluster's regions accept each
// other's tokens; gateways in several processes must be given one secret (`contextSecret`).
const PROCESS_SECRET = randomBytes(32)

/** Issues and checks signed element contexts. */
export class ContextTokens {
  // A key object: the secret is imported into the crypto library once, not on every MAC.
  readonly #secret: KeyObject

  /** @param secret at least 16 bytes shared by every gateway of the cluster. @default one per process */
  constructor(secret: Uint8Array = PROCESS_SECRET) {
    if (secret.length < 16) throw new RangeError('a context secret needs at least 16 bytes')
    this.#secret = createSecretKey(secret)
  }

  /** The token of `dots` (non-empty) for `element` of set `set`. */
  issue(set: string, element: string, dots: readonly Dot[]): string {
    // One dot (an element added once, by far the most common) needs no sorting.
    const body =
      dots.length === 1
        ? `${dots[0]!.actor}-${dots[0]!.counter}`
        : normalizeDots(dots)
            .map((d) => `${d.actor}-${d.counter}`)
            .join('_')
    return `${body}.${this.#mac(set, element, body).toString('base64url')}`
  }

  /** The dots of a token issued for `element` of `set`; throws `INVALID_CONTEXT` otherwise. */
  verify(set: string, element: string, token: unknown): Dot[] {
    const match = typeof token === 'string' && token.length <= 64 * 1024 ? TOKEN.exec(token) : null
    if (!match) throw invalid('is not a context token from has or scan')
    const body = match[1]!
    const mac = Buffer.from(match[2]!, 'base64url')
    if (mac.length !== MAC_BYTES || !timingSafeEqual(mac, this.#mac(set, element, body)))
      throw invalid(`was not issued for element ${JSON.stringify(element)} of this set`)
    const pairs = body.split('_')
    if (pairs.length > MAX_CONTEXT_DOTS) throw invalid('has too many dots')
    return pairs.map((pair) => {
      const [actor, counter] = pair.split('-').map(Number)
      if (!isActor(actor) || !isCounter(counter)) throw invalid('holds a dot out of range')
      return { actor, counter }
    })
  }

  #mac(set: string, element: string, body: string): Buffer {
    return createHmac('sha256', this.#secret)
      .update(JSON.stringify(['causeway-set-context/1', set, element, body]))
      .digest()
      .subarray(0, MAC_BYTES)
  }
}

function invalid(why: string): CausewayError {
  return new CausewayError('INVALID_CONTEXT', `the set element context ${why}`)
}
