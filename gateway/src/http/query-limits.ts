/**
 * The cluster's limits in the route schemas, so that validation and the OpenAPI document say
 * them: `timeoutMs` at most `limits.maxTimeoutMs` (the core schemas, shared with the SDK, only
 * say it is a whole number).
 */

/** A copy of a querystring schema whose `timeoutMs` has `maximum: maxTimeoutMs`. */
export function withTimeoutMaximum<S extends { properties: Record<string, unknown> }>(
  schema: S,
  maxTimeoutMs: number,
): S {
  const field = schema.properties['timeoutMs'] as { description?: string } | undefined
  if (field === undefined) return schema
  const said =
    field.description === undefined ? 'how long the call may wait, in ms' : field.description
  return {
    ...schema,
    properties: {
      ...schema.properties,
      timeoutMs: {
        ...field,
        maximum: maxTimeoutMs,
        description: `${said} (at most ${maxTimeoutMs})`,
      },
    },
  }
}
