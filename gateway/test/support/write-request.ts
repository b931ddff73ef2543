/** A key write request of partition 0 at the session level, with no dependency unless given. */
import { hlcFrom } from '@causeway/core'
import type { WriteRequest } from '../../src/cluster/cluster-service.js'

export const writeRequest = (key: string, extra: Partial<WriteRequest> = {}): WriteRequest => ({
  key,
  partition: 0,
  value: '"v"',
  dt: hlcFrom(0, 0),
  durability: 'leader',
  level: 'session',
  ...extra,
})
