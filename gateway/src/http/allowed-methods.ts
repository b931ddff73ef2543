/**
 * The methods the gateway answers at a path: what a `405 METHOD_NOT_ALLOWED` lists in its `Allow`
 * header. Fastify has no 405 of its own (its router sends a known path with an unknown method to
 * the not-found handler), so the not-found handler asks Fastify's router, through the public
 * `findRoute`, which of the methods some route uses match the path. Only a request that matched
 * no route pays for these lookups.
 */
import type { FastifyInstance, HTTPMethods } from 'fastify'

/** Collects the methods of the routes of `app`; see {@link AllowedMethods.at}. */
export class AllowedMethods {
  readonly #app: FastifyInstance
  // Every method some route answers (a handful), so a lookup tries only methods that can match.
  readonly #methods = new Set<HTTPMethods>()

  /** Must be called before any route of `app` is added, so its `onRoute` hook sees all of them. */
  constructor(app: FastifyInstance) {
    this.#app = app
    app.addHook('onRoute', (route) => {
      // A catch-all (`OPTIONS *`, which answers CORS preflights) matches every path, known or not.
      if (route.url === '*' || route.url === '/*') return
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      for (const method of methods) this.#methods.add(method.toUpperCase() as HTTPMethods)
    })
  }

  /**
   * The methods some route answers for `url` (a request's raw URL, query included; Fastify's
   * router decodes and strips it the same way as when routing), sorted; empty for an unknown path.
   */
  at(url: string): HTTPMethods[] {
    const allowed: HTTPMethods[] = []
    for (const method of this.#methods) {
      if (this.#app.findRoute({ method, url }) !== null) allowed.push(method)
    }
    return allowed.sort()
  }
}
