/**
 * Background events of components given no logger are pino lines on stderr (`log.ts`), as
 * Fastify's are: one format a log shipper parses, and nothing on stdout, which carries what a
 * command prints for its user.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const run = promisify(execFile)

/** Runs `script` (an ES module body) in a child that loads the TypeScript sources. */
async function child(script: string): Promise<{ stdout: string; stderr: string }> {
  return run(
    process.execPath,
    ['--conditions=@causeway/source', '--import', 'tsx', '--input-type=module', '--eval', script],
    { cwd: ROOT, timeout: 20_000 },
  )
}

describe('the process logger', () => {
  it('writes a quarantine report as a pino warning on stderr, nothing on stdout', async () => {
    const { stdout, stderr } = await child(`
      import { QuarantineRegistry } from './gateway/src/storage/quarantine.ts'
      new QuarantineRegistry().quarantined({
        region: 0, partition: 1, replica: 2, key: 'k', kind: 'version', reason: 'bad bytes',
      })
    `)
    expect(stdout).toBe('')
    const lines = stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    const line = JSON.parse(lines[0]!) as Record<string, unknown>
    expect(line).toMatchObject({ level: 40, name: 'causeway' })
    expect(line.msg).toContain('bad bytes')
  })

  it('logs at the level a command asks for, and nothing when silent', async () => {
    const { stderr } = await child(`
      import { stderrLogger } from './gateway/src/log.ts'
      stderrLogger('error').warn('hidden')
      stderrLogger('error').error({ err: new Error('boom') }, 'shown')
      stderrLogger('silent').error('hidden too')
    `)
    const lines = stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 50,
      msg: 'shown',
      err: { message: 'boom' },
    })
  })
})
