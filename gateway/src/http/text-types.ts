/**
 * Numbers and booleans in the query string and the path, parsed explicitly. The gateway's
 * validator never coerces types (`coerceTypes: false`: a string in a JSON body stays a string and
 * is refused where an array is due), but a query string and a path are text by nature, so their
 * integer and boolean fields are read here, per route, before validation: `timeoutMs=250` becomes
 * 250 and `ctx=true` becomes `true`.
 * Only the canonical spelling converts (decimal digits without sign, exponent, spaces or leading
 * zeros; `true`/`false`); anything else stays a string and the schema refuses it with the field's
 * code, so `timeoutMs=1e2` or a repeated field is an error rather than a guess.
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'

type Kind = 'integer' | 'boolean'

const DECIMAL = /^(0|[1-9][0-9]{0,15})$/

function fieldKinds(schema: unknown): Map<string, Kind> {
  const kinds = new Map<string, Kind>()
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)
    ?.properties
  if (properties === undefined) return kinds
  for (const [name, field] of Object.entries(properties)) {
    if (field.type === 'integer' || field.type === 'number') kinds.set(name, 'integer')
    else if (field.type === 'boolean') kinds.set(name, 'boolean')
  }
  return kinds
}

function convert(text: string, kind: Kind): unknown {
  if (kind === 'boolean') return text === 'true' ? true : text === 'false' ? false : text
  if (!DECIMAL.test(text)) return text
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : text
}

function convertFields(fields: Record<string, unknown>, kinds: Map<string, Kind>): void {
  for (const [name, kind] of kinds) {
    const value = fields[name]
    if (typeof value === 'string') fields[name] = convert(value, kind)
  }
}

/**
 * Adds, to every route whose querystring or params schema has integer or boolean fields, a
 * `preValidation` hook converting those fields. Call before any route is added.
 */
export function parseTextTypes(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const query = fieldKinds(route.schema?.querystring)
    const params = fieldKinds(route.schema?.params)
    if (query.size === 0 && params.size === 0) return
    const hook = async (request: FastifyRequest): Promise<void> => {
      if (query.size > 0) convertFields(request.query as Record<string, unknown>, query)
      if (params.size > 0) convertFields(request.params as Record<string, unknown>, params)
    }
    const existing = route.preValidation
    route.preValidation =
      existing === undefined
        ? [hook]
        : Array.isArray(existing)
          ? [...existing, hook]
          : [existing, hook]
  })
}
