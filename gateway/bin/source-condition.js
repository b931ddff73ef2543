/**
 * A module resolution hook, as `node --conditions=@causeway/source` would be: `@causeway/*`
 * packages resolve to their TypeScript sources (the first condition of their `exports`).
 */
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, {
    ...context,
    conditions: [...context.conditions, '@causeway/source'],
  })
}
