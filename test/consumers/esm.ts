/**
 * A consumer of the published SDK, written as an ES module. The packages test compiles it with
 * `moduleResolution: bundler` and with `node16` against the packed tarballs, then runs it against
 * a cluster started by the packed `causeway` bin. It prints what it saw as one JSON line.
 */
import { CausewayError, type ReadResult, type Topology, connect } from '@causeway/client'
import { fileSessionStore, undiciTransport } from '@causeway/client/node'

const db = await connect({ url: process.env.CAUSEWAY_URL! })
const topology: Topology = db.topology
await db.put('packed:esm', { via: 'esm' })
const read: ReadResult<{ via: string }> = await db.get('packed:esm', {
  read: 'read-your-writes',
  region: 1,
})
const via: string = read.value!.via
// Compiled, never called: if the SDK's types were missing (`any`), the directive would fail.
const typesAreThere = () => {
  // @ts-expect-error: 42 is not a read level
  void db.get('packed', { read: 42 })
}
const error = new CausewayError('INVALID_KEY', 'typed')
console.log(
  JSON.stringify({
    found: read.found,
    via,
    regions: topology.regions.length,
    node: typeof fileSessionStore === 'function' && typeof undiciTransport === 'function',
    typedError: error instanceof CausewayError && error.code === 'INVALID_KEY',
    probe: typeof typesAreThere,
  }),
)
await db.close()
