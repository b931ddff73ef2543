/**
 * Bigsets: add-wins observed-remove sets (ORSWOT semantics) decomposed into a set-clock, a
 * set-tombstone and one ordered key per (element, dot), after the Bigsets paper (sections
 * 4.1–4.4). Pure and backend-independent: clocks, the key codec, write planners, compaction,
 * streaming reads and the incremental merge of replicas; storage backends supply an
 * {@link OrderedKv}.
 *
 * A backend, per replica and set:
 * - keys: `BigsetKeys.forSet(name, namespace)`; element keys must iterate bytewise in order
 *   (LevelDB keys, or a Redis sorted set of score 0 read with `ZRANGEBYLEX`);
 * - writes: read the clocks, run `planInsert` / `planRemove` / `planApplyDelta`, write the batch
 *   atomically, with no other write to the set in between (a per-set lock, or a Lua script);
 *   ship `plan.delta` (`deltaToJSON`) through the partition log, and apply it elsewhere with
 *   `planApplyDelta` (idempotent, any order);
 * - dots: the coordinator mints under its actor id; an actor must never mint the same dot twice,
 *   so a failover that may lose acknowledged writes needs a new actor id (e.g. per epoch);
 * - reads: `readElementDots` (has), `scanEntries` (scan), `mergeReplicaStreams` (quorum);
 * - compaction: `planCompaction` with keys found by a walk, or `removal: 'delete'` to skip it;
 * - size: `live` in {@link PlanOptions} yields `sizeDelta` for an exact count.
 * {@link KvBigset} does all of this over an {@link OrderedKv} and is the reference.
 * @packageDocumentation
 */
export * from './dot.js'
export * from './clock.js'
export * from './clock-codec.js'
export * from './element.js'
export * from './keys.js'
export * from './ordered-kv.js'
export * from './sorted-search.js'
export * from './memory-kv.js'
export * from './delta.js'
export * from './writes.js'
export * from './compaction.js'
export * from './reads.js'
export * from './replica-merge.js'
export * from './kv-bigset.js'
