import type { ReadQuery, WriteQuery } from '../src/wire.js'
const a: ReadQuery['level'] = 'session'
const b: WriteQuery['durability'] = 'majority'
// @ts-expect-error not a level
const c: ReadQuery['level'] = 'strong'
export { a, b, c }
