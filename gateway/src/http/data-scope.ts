/**
 * The hook where a route that names its keys in the body or the query (`POST /v1/ops`,
 * `GET /v1/watch`) checks them against the API key's scope, as `auth.ts` does for the routes that
 * name one key in their path: it is called once per key (or key prefix) a request touches.
 */
import type { FastifyRequest } from 'fastify'
import { checkRequestScope } from './auth.js'

/** What a request does with a key. */
export type DataAccess = 'read' | 'write'

/**
 * Throws `OUT_OF_SCOPE` when the request's API key may not `access` `key` (a key, a set name, or
 * a watched prefix, whose namespace is the text before its first `:`; a prefix without one spans
 * namespaces, so only an unscoped key may watch it).
 */
export function checkDataScope(request: FastifyRequest, key: string, access: DataAccess): void {
  checkRequestScope(request, key, access)
}
