/**
 * The bad-input table of `docs/security.md` (section "Bad input and stored data"), read and
 * checked: each row with a request is replayed against a running cluster and must get the
 * status and code the row says, and must write nothing; each row naming a test must name one
 * that exists. So the table cannot drift from what the gateway answers.
 *
 * A request cell reads like a curl command line: `METHOD /path -H name:value ... -d body` (no
 * spaces inside a header value or the body).
 */
import { readFile } from 'node:fs/promises'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ERROR_CODES, isErrorCode } from '@causeway/core'
import { expect } from 'vitest'
import { call, getKey } from './http-calls.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const SECTION = '## Bad input and stored data'

/** One row of the table. */
export interface BadInputRow {
  input: string
  /** The request to replay, or undefined for a row covered by a named test. */
  request?: { method: string; path: string; headers: Record<string, string>; body?: string }
  /** The title of the test that covers the row, when it has no request. */
  test?: string
  status: number
  /** The error code, or undefined for a 2xx row. */
  code?: string
}

/** The rows of the table, parsed. */
export async function badInputRows(): Promise<BadInputRow[]> {
  const doc = await readFile(join(ROOT, 'docs/security.md'), 'utf8')
  const start = doc.indexOf(`\n${SECTION}\n`)
  if (start < 0) throw new Error(`docs/security.md has no "${SECTION}" section`)
  const end = doc.indexOf('\n## ', start + SECTION.length)
  const lines = doc.slice(start, end < 0 ? undefined : end).split('\n')
  const rows: BadInputRow[] = []
  for (const line of lines.filter((l) => l.startsWith('|'))) {
    const cells = line
      .slice(1, -1)
      .split(' | ')
      .map((c) => c.trim())
    if (cells.length !== 4) throw new Error(`a row of ${cells.length} cells: ${line}`)
    const [input, request, status, code] = cells as [string, string, string, string]
    if (input === 'Input' || /^-+$/.test(input)) continue
    const row: BadInputRow = { input, status: Number(status) }
    const bare = code.replace(/`/g, '')
    if (bare !== '—') row.code = bare
    if (request.startsWith('test: ')) row.test = request.slice('test: '.length)
    else row.request = parseRequest(request)
    rows.push(row)
  }
  return rows
}

function parseRequest(cell: string): NonNullable<BadInputRow['request']> {
  const text = cell.replace(/^`|`$/g, '')
  const tokens = text.split(' ')
  const [method, path] = tokens
  if (!method || !path?.startsWith('/')) throw new Error(`not a request: ${cell}`)
  const headers: Record<string, string> = {}
  let body: string | undefined
  for (let i = 2; i < tokens.length; i += 2) {
    const flag = tokens[i]
    const value = tokens[i + 1]
    if (value === undefined) throw new Error(`${flag} without a value in ${cell}`)
    if (flag === '-H') {
      const colon = value.indexOf(':')
      headers[value.slice(0, colon).toLowerCase()] = value.slice(colon + 1)
    } else if (flag === '-d') {
      body = value
      headers['content-type'] ??= 'application/json'
    } else throw new Error(`unknown flag ${flag} in ${cell}`)
  }
  return body === undefined ? { method, path, headers } : { method, path, headers, body }
}

/** Titles of every `it(...)` in the repository's test files. */
async function testTitles(): Promise<Set<string>> {
  const titles = new Set<string>()
  const dirs = ['gateway/test', 'packages/core/test', 'packages/client/test']
  for (const dir of dirs) {
    let files: string[]
    try {
      files = (await readdir(join(ROOT, dir), { recursive: true })).map(String)
    } catch {
      continue
    }
    for (const file of files.filter((f) => f.endsWith('.ts'))) {
      const text = await readFile(join(ROOT, dir, file), 'utf8')
      for (const m of text.matchAll(/\bit(?:\.each\([^)]*\))?\(\s*(['"`])(.*?)\1/gs))
        titles.add(m[2]!.replace(/\\'/g, "'"))
    }
  }
  return titles
}

/**
 * Replays every request row against region 0 of `urls` and checks its status and code, then
 * that no key a row named holds anything in either region; checks that every test row names an
 * existing test, and that every code is a known one with the status the table gives it.
 */
export async function expectBadInputTable(urls: readonly string[]): Promise<void> {
  const rows = await badInputRows()
  expect(rows.length).toBeGreaterThan(10)
  const titles = await testTitles()
  const keys = new Set<string>()
  for (const row of rows) {
    if (row.code !== undefined) {
      expect(isErrorCode(row.code), row.input).toBe(true)
      expect(ERROR_CODES[row.code as keyof typeof ERROR_CODES], row.input).toBe(row.status)
    }
    if (row.test !== undefined) {
      expect(titles.has(row.test), `"${row.test}" (${row.input}) is not a test`).toBe(true)
      continue
    }
    const { method, path, headers, body } = row.request!
    const reply = await call(`${urls[0]}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
    })
    expect({ input: row.input, status: reply.status, code: reply.body.code }).toEqual({
      input: row.input,
      status: row.status,
      code: row.code,
    })
    const kv = /^\/v1\/kv\/([^?]+)/.exec(path)
    if (kv) keys.add(decodeURIComponent(kv[1]!))
  }
  // Refused means written nowhere.
  for (const key of keys) {
    for (const base of urls) {
      const read = await getKey(base, key, '?replica=leader')
      expect(read.status, `${key} in ${base}`).toBe(200)
      expect(read.body.found, `${key} in ${base}`).toBe(false)
      expect(read.body).not.toHaveProperty('ts')
    }
  }
}
