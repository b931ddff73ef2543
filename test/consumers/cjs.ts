/**
 * A consumer of the published SDK, written for CommonJS (`require`). The packages test compiles
 * it with `module: commonjs` (and node10 resolution, which reads `types`/`typesVersions`) and
 * with `module: nodenext` in a `"type": "commonjs"` project, then runs it. It prints what it saw
 * as one JSON line, with the TypeBox modules it loaded: none, as the SDK needs no schema library.
 */
import { CausewayError, type ReadResult, type Topology, connect } from '@causeway/client'
import { fileSessionStore, undiciTransport } from '@causeway/client/node'

async function main(): Promise<void> {
  const db = await connect({ url: process.env.CAUSEWAY_URL! })
  const topology: Topology = db.topology
  await db.put('packed:cjs', { via: 'cjs' })
  const read: ReadResult<{ via: string }> = await db.get('packed:cjs', {
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
      typebox: Object.keys(require.cache).filter((path) => path.includes('typebox')),
    }),
  )
  await db.close()
}

void main()
