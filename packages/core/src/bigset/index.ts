/**
 * Bigsets: add-wins observed-remove sets (ORSWOT semantics) decomposed into a set-clock, a
 * set-tombstone and one ordered key per (element, dot), after the Bigsets paper (sections
 * 4.1–4.4). Pure and backend-independent: clocks, the key codec, write planners, compaction,
 * streaming reads and the incremental merge of replicas; storage backends supply an
 * {@link OrderedKv}.
 * @packageDocumentation
 */
export * from './dot.js'
export * from './clock.js'
export * from './clock-codec.js'
export * from './element.js'
export * from './keys.js'
export * from './ordered-kv.js'
export * from './memory-kv.js'
export * from './delta.js'
export * from './writes.js'
export * from './compaction.js'
export * from './reads.js'
export * from './replica-merge.js'
export * from './kv-bigset.js'
