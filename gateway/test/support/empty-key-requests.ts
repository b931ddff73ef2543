/**
 * Requests that name an empty key or set name, one per route: every backend must refuse each with
 * 400 `INVALID_KEY` and write nothing.
 */
import { expect } from 'vitest'

export const EMPTY_KEY_REQUESTS = [
  ['PUT', '/v1/kv/', { value: 1 }],
  ['PUT', '/v1/kv/?level=eventual', { value: 1 }],
  ['DELETE', '/v1/kv/', undefined],
  ['GET', '/v1/kv/', undefined],
  ['POST', '/v1/sets//add', { elements: ['a'] }],
  ['POST', '/v1/sets//remove', { elements: ['a'] }],
  ['GET', '/v1/sets//has?element=a', undefined],
  ['GET', '/v1/sets//size', undefined],
  ['GET', '/v1/sets//scan', undefined],
] as const

/**
 * Sends every {@link EMPTY_KEY_REQUESTS} through `send` and expects each refused with
 * `INVALID_KEY`, and `written()` (what the leaders wrote) unchanged.
 */
export async function expectEmptyKeysRefused(
  send: (
    method: string,
    path: string,
    body: unknown,
  ) => Promise<{ status: number; body: { code?: unknown } }>,
  written: () => Promise<unknown>,
): Promise<void> {
  const before = await written()
  for (const [method, path, body] of EMPTY_KEY_REQUESTS) {
    const res = await send(method, path, body)
    expect({ method, path, status: res.status, code: res.body.code }).toEqual({
      method,
      path,
      status: 400,
      code: 'INVALID_KEY',
    })
  }
  expect(await written()).toEqual(before)
}
