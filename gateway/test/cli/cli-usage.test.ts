/** The command line: help, version and usage errors (exit 2, a clear message). */
import { describe, expect, it } from 'vitest'
import { runCli, startCli, stopCli, urlsOf } from './cli-process.js'

describe('causeway CLI usage', () => {
  it('prints help and the version', async () => {
    const [help, devHelp, version] = await Promise.all([
      runCli(['--help']),
      runCli(['dev', '--help']),
      runCli(['--version']),
    ])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: causeway <command>')
    expect(help.stdout).toContain('--wan-delay MS')
    for (const flag of ['--body-timeout MS', '--max-connections N', '--rate-limit N'])
      expect(help.stdout).toContain(flag)
    expect(devHelp).toMatchObject({ code: 0, stdout: help.stdout })
    expect(version.code).toBe(0)
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  })

  // Each case is a process of its own (about 0.7 s of CPU for tsx): a few that cover each kind of
  // mistake, one after the other (the machine has two cores).
  const cases: [string[], string][] = [
    [[], 'Usage: causeway'],
    [['serve'], 'unknown command "serve"'],
    [['dev', '--regions', 'two'], '--regions must be a whole number, not "two"'],
    [['dev', '--port', '65535', '--regions', '2'], 'leaves no room for 2 regions'],
    [['dev', '--data', '/tmp/x', '--memory'], 'use either --data DIR or --memory, not both'],
    [['dev', '--bogus'], "Unknown option '--bogus'"],
    [['dev', '--api-key', 'a key'], '--api-key must be a bearer token'],
    [['dev', '--log-level', 'loud'], '--log-level must be one of'],
    [['dev', '--siblings', 'cart:1'], '--siblings needs a namespace name'],
    [['dev', '--cors-origin', 'http://localhost:5173/'], 'did you mean http://localhost:5173?'],
    [['dev', '--public-url', 'https://eu.example.com'], 'give one per region, in region order (2)'],
    [['gateway', '--config', 'x.json', '--cors-origin', 'localhost'], '--cors-origin: "localhost"'],
    [['dev', '--body-timeout', '0'], '--body-timeout must be between 1 and 3600000, not 0'],
    [['dev', '--shipping', 'gossip'], '--shipping must be fifo or causal, not "gossip"'],
    [['dev', '--theta', '5'], '--theta, --delta and --stabilisers need --shipping causal'],
    [
      ['gateway', '--config', 'x.json', '--rate-limit', 'lots'],
      '--rate-limit must be a whole number',
    ],
  ]
  it.each(cases)('causeway %j exits 2 with %j', async (args, message) => {
    const { code, stdout, stderr } = await runCli(args)
    expect(code).toBe(2)
    expect(stderr).toContain(message)
    expect(stderr).toContain('Usage: causeway')
    expect(stdout).toBe('')
  })
})

describe('causeway dev --api-key', () => {
  // What fuzz/schemathesis.sh starts its clusters with: the client routes need the key.
  it('makes the client routes of every region need the key', async () => {
    const cli = startCli(['dev', '--memory', '--port', '0', '--api-key', 'fuzz-key_1'])
    try {
      const urls = await urlsOf(cli, 2)
      for (const url of urls) {
        const bare = await fetch(`${url}/v1/kv/a`)
        expect([bare.status, ((await bare.json()) as { code: string }).code]).toEqual([
          401,
          'UNAUTHORIZED',
        ])
        const keyed = await fetch(`${url}/v1/kv/a`, {
          headers: { authorization: 'Bearer fuzz-key_1' },
        })
        expect(keyed.status).toBe(200)
      }
    } finally {
      await stopCli(cli)
    }
  }, 120_000)
})
