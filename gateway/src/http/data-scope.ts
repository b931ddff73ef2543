/**
 * The hook where a route that names its keys in the body or the query (`POST /v1/ops`,
 * `GET /v1/watch`) checks them against the API key's scope, as `auth.ts` does for the routes that
 * name one key in their path.
 *
 * Scoped API keys (namespaces, read or write; `OUT_OF_SCOPE`, 403) land from another branch
 * (issue 12's HTTP work). Until they do every authenticated key may use every key, and this is the
 * one place to wire their check to: it is called once per key (or key prefix) a request touches.
 */
import type { FastifyRequest } from 'fastify'

/** What a request does with a key. */
export type DataAccess = 'read' | 'write'

/**
 * Throws `OUT_OF_SCOPE` when the request's API key may not `access` `key` (a key, a set name, or
 * a watched prefix, whose namespace is the text before its first `:`; a prefix without one spans
 * namespaces). Today: every key may.
 */
export function checkDataScope(_request: FastifyRequest, _key: string, _access: DataAccess): void {}
