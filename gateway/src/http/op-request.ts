/**
 * Operation ids on the write routes (`causeway-op-id`, and each op of `POST /v1/ops`): the id,
 * checked against its grammar (`INVALID_OP_ID`), and the fingerprint of the request it names.
 *
 * The fingerprint is what a repeat must match to be answered with the first result instead of
 * `OP_ID_REUSED`: the kind of write, the key or set name, the body (the value's JSON text, or the
 * elements with their contexts) and the causal context. It leaves out what may legitimately change
 * on a replay (the dependency time, the level, the durability, timeouts) and the route, so a write
 * first sent alone and replayed in a batch is the same operation.
 */
import { createHash } from 'node:crypto'
import { CausewayError, HEADER_OP_ID, parseOpId } from '@causeway/core'
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { principalOf } from './auth.js'
import type { WriteOp } from '../cluster/cluster-service.js'

/** What a write's fingerprint is made of. */
export interface OpFingerprintInput {
  kind: 'put' | 'delete' | 'set-add' | 'set-remove'
  /** The key, or the set name. */
  key: string
  /** A put's value, as JSON text. */
  value?: string
  /** A set write's elements, as parsed. */
  elements?: readonly { element: string; ctx?: string }[]
  /** The causal context, as sent (`causeway-context` or an op's `context`). */
  context?: string
}

/** The fingerprint of a write: SHA-256 of its parts, base64url (43 characters). */
export function opFingerprint(input: OpFingerprintInput): string {
  const parts = [
    input.kind,
    input.key,
    input.value ?? null,
    input.elements?.map((e) => (e.ctx === undefined ? [e.element] : [e.element, e.ctx])) ?? null,
    input.context?.trim() ?? null,
  ]
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url')
}

/** An operation id as given (header or op field) with its request's fingerprint and tenant. */
export function writeOpOf(id: unknown, input: OpFingerprintInput, tenant: string): WriteOp {
  parseOpId(id)
  const op: WriteOp = { id: id as string, fingerprint: opFingerprint(input) }
  if (tenant !== '') op.tenant = tenant
  return op
}

/**
 * Whose operation ids a request's are: the API key's principal (`key:<name>`), `''` without
 * keys. Ids are remembered per tenant, so a tenant reusing another's id never sees its result.
 */
export function opTenantOf(request: FastifyRequest): string {
  const id = principalOf(request)?.id
  return id !== undefined && id.startsWith('key:') ? id : ''
}

/** The `causeway-op-id` of a request, or `undefined` when it has none. */
export function opIdHeader(headers: IncomingHttpHeaders): string | undefined {
  const value = headers[HEADER_OP_ID]
  if (value === undefined) return undefined
  if (Array.isArray(value) || value.includes(','))
    throw new CausewayError('INVALID_OP_ID', `${HEADER_OP_ID} must be given once`)
  return value
}
