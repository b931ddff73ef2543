/**
 * Entry of the k6 bundle (`bench/dist/causeway-k6.js`): the whole SDK, `@causeway/client` and
 * the parts of `@causeway/core` a script may want, plus the k6 transport. A k6 script imports it
 * like any local module:
 *
 * ```js
 * import { connect, k6Transport } from '../dist/causeway-k6.js'
 * ```
 */
import './install-polyfills.js'

export * from '@causeway/client'
export { formatReadNeed, partitionOf } from '@causeway/core'
export { type K6Transport, type K6TransportOptions, k6Transport } from './transport.js'
