/**
 * Sibling contexts on the wire, signed: what a read of a siblings key returns (`causeway-context`,
 * the `context` field of replies and change events) and what a superseding write sends back. A
 * context is the key's version vector followed by a MAC of the key and the vector under the
 * cluster's context secret (layout: `causal-context.ts`, format 2), so a gateway accepts only
 * contexts some gateway of its cluster issued for that very key: a forged one (counters a region
 * never reached, dots a read never returned) is `INVALID_CONTEXT`.
 *
 * The MAC is the scheme of set element contexts (`set-contexts.ts`): SHA-512/256 of the secret
 * followed by the message, truncated (here to 128 bits), with a domain string of its own so a
 * token of one scheme never verifies as the other.
 *
 * Key rotation: contexts are signed with the first secret and checked against every secret given,
 * so an operator who rotates the cluster secret lists the old one as a previous secret
 * (`auth.previousClusterSecrets`) for as long as clients may hold contexts it signed (a client
 * keeps one only until it writes the key, or in an offline outbox), then drops it.
 *
 * Every reply path signs through {@link SiblingContexts.issue}, and every write path checks
 * through {@link SiblingContexts.verify}: one place for the scheme.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto'
import {
  type CausalContext,
  CausewayError,
  decodeCausalContext,
  encodeSignedContextBody,
  joinSignedContext,
  splitSignedContext,
} from '@causeway/core'

/** Names what is signed (and how): contexts of another scheme never verify. */
const DOMAIN = 'causeway-sibling-context/1'

// Shared by every region service of this process, as set-contexts.ts's, so an embedded
// cluster's regions accept each other's contexts.
const PROCESS_SECRET = randomBytes(32)

/** Issues and checks signed sibling contexts. */
export class SiblingContexts {
  /** Each secret as hex, the signing one first. */
  readonly #prefixes: string[]

  /**
   * @param secrets at least one; contexts are signed with the first and accepted when signed with
   * any (the others are previous secrets, kept while a rotation completes). Each at least 16 bytes.
   * @default one random secret per process
   */
  constructor(secrets: readonly Uint8Array[] = [PROCESS_SECRET]) {
    if (secrets.length === 0) throw new RangeError('sibling contexts need a secret')
    this.#prefixes = secrets.map((secret) => {
      if (secret.length < 16) throw new RangeError('a context secret needs at least 16 bytes')
      return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength).toString('hex')
    })
  }

  /** The signed wire form of `context`, issued for `key`. */
  issue(key: string, context: CausalContext): string {
    const body = encodeSignedContextBody(context)
    return joinSignedContext(body, this.#mac(this.#prefixes[0]!, key, body))
  }

  /**
   * The vector of a context issued for `key` by a gateway of this cluster (signed with the
   * current secret or a previous one).
   * @throws `CausewayError('INVALID_CONTEXT')` when it is malformed, unsigned, or signed for
   * another key or by another cluster.
   */
  verify(key: string, text: string, regions: number): CausalContext {
    // A context naming no dot claims nothing (a blind write): it needs no MAC, in either format.
    if (decodeCausalContext(text, { regions }).length === 0) return []
    const { context, body, mac } = splitSignedContext(text, { regions })
    for (const prefix of this.#prefixes) {
      if (timingSafeEqual(mac, this.#mac(prefix, key, body))) return context
    }
    throw new CausewayError(
      'INVALID_CONTEXT',
      `invalid causeway-context: it was not issued for ${JSON.stringify(key)} by this cluster (read the key for a context)`,
    )
  }

  #mac(prefix: string, key: string, body: Uint8Array): Uint8Array {
    const message = JSON.stringify([DOMAIN, key, Buffer.from(body).toString('base64url')])
    return hash('sha512-256', prefix + message, 'buffer').subarray(0, 16)
  }
}

/** The signer of services that were given none (one per process, as set element contexts). */
export const PROCESS_SIBLING_CONTEXTS = new SiblingContexts()

/** What holds a cluster's signer (a `ClusterService`); without one, the process's. */
export interface ContextIssuer {
  readonly contexts?: SiblingContexts | undefined
}

/**
 * The signed wire form of a sibling context issued for `key`: the one function every reply path
 * (reads, writes, `/v1/ops` results, change events) calls to hand a context out.
 */
export function issueContext(issuer: ContextIssuer, key: string, context: CausalContext): string {
  return (issuer.contexts ?? PROCESS_SIBLING_CONTEXTS).issue(key, context)
}

/**
 * The vector of a context a client sent for `key`, checked to be one this cluster issued for it
 * (see {@link SiblingContexts.verify}): the one function every write path calls.
 */
export function acceptContext(
  issuer: ContextIssuer,
  key: string,
  text: string,
  regions: number,
): CausalContext {
  return (issuer.contexts ?? PROCESS_SIBLING_CONTEXTS).verify(key, text, regions)
}
