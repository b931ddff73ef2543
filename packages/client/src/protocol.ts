/**
 * The protocol's header names and version, mirrored from `@causeway/core`'s `wire.ts`. Importing
 * them from there would pull that module's schema library (about 75 kB minified) into every
 * browser bundle; `test/protocol.test.ts` checks the two never disagree.
 */

/** Request header: the read vector a read needs (`epoch@d:idx,d:idx`). */
export const HEADER_AFTER = 'causeway-after'
/** Request header: a write's HLC dependency (16 hex digits). */
export const HEADER_DT = 'causeway-dt'
/** The wire protocol version this SDK speaks. */
export const PROTOCOL_VERSION = 1
