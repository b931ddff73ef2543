/**
 * `@causeway/core/schemas`: the JSON Schemas (TypeBox) of every request and reply, for the
 * gateway, which validates, serialises and serves them as OpenAPI. An entry of its own so that
 * nothing the SDK loads pulls in the schema library: `@causeway/core` exports their types only.
 * ES module only, as TypeBox is.
 * @packageDocumentation
 */
export * from './wire.js'
export * from './set-wire.js'
export * from './tx-wire.js'
