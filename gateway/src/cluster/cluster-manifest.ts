/**
 * `cluster.json` in an embedded cluster's data directory: the cluster's id and shape. The id is
 * made once, so sessions stay valid across restarts; the shape is checked on every start, because
 * a data directory laid out for another shape would silently route keys to the wrong partitions.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Version of the manifest format. */
export const MANIFEST_FORMAT = 1

/** The parts of a cluster that its data layout depends on. */
export interface ClusterLayout {
  regions: number
  partitions: number
  replicas: number
}

/** The content of `cluster.json`. */
export interface ClusterManifest extends ClusterLayout {
  format: number
  id: string
  createdAt: string
}

/** A manifest for a new cluster, with a fresh random id. */
export function newManifest(layout: ClusterLayout): ClusterManifest {
  const { regions, partitions, replicas } = layout
  return {
    format: MANIFEST_FORMAT,
    id: randomUUID(),
    regions,
    partitions,
    replicas,
    createdAt: new Date().toISOString(),
  }
}

/**
 * Reads `dir/cluster.json`, or creates it (and `dir`) for a new cluster. Throws when the
 * directory holds a cluster of another shape.
 */
export async function openManifest(dir: string, layout: ClusterLayout): Promise<ClusterManifest> {
  const path = join(dir, 'cluster.json')
  let text: string | undefined
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  if (text === undefined) {
    const manifest = newManifest(layout)
    await mkdir(dir, { recursive: true })
    // Written aside and renamed, so a crash never leaves a half-written manifest.
    await writeFile(`${path}.tmp`, JSON.stringify(manifest, null, 2) + '\n')
    await rename(`${path}.tmp`, path)
    return manifest
  }
  const manifest = parseManifest(text, path)
  const differs = (['regions', 'partitions', 'replicas'] as const).filter(
    (k) => manifest[k] !== layout[k],
  )
  if (differs.length > 0) {
    const was = differs.map((k) => `${k} ${manifest[k]}`).join(', ')
    const asked = differs.map((k) => `${k} ${layout[k]}`).join(', ')
    throw new Error(
      `${dir} holds cluster ${manifest.id} with ${was}, but this start asks for ${asked}. ` +
        'Start with the same shape, or use another data directory.',
    )
  }
  return manifest
}

function parseManifest(text: string, path: string): ClusterManifest {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    throw new Error(`${path} is not valid JSON`)
  }
  const m = data as Partial<ClusterManifest>
  const count = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1
  if (m.format !== MANIFEST_FORMAT || typeof m.id !== 'string' || m.id === '') {
    throw new Error(`${path} is not a cluster manifest of format ${MANIFEST_FORMAT}`)
  }
  if (!count(m.regions) || !count(m.partitions) || !count(m.replicas)) {
    throw new Error(`${path} has no valid regions, partitions and replicas`)
  }
  return m as ClusterManifest
}
