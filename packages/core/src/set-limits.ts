/**
 * Limits of set calls, in a schema-free module so that the SDK's browser bundle can use them
 * without pulling in the wire schemas (and TypeBox).
 */

/** The most elements one add or remove may carry (one log entry). */
export const MAX_SET_WRITE_ELEMENTS = 1000

/** Elements per page of the SDK's `scan` iterator (each page is one request). */
export const SET_SCAN_PAGE = 1000
