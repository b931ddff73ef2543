/** Random ids (device ids, connection tags, op-id clients): `[A-Za-z0-9]`, from the platform's CSPRNG. */
const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** `n` random characters of `[A-Za-z0-9]`. */
export function randomId(n: number): string {
  const bytes = new Uint8Array(n)
  globalThis.crypto.getRandomValues(bytes)
  let out = ''
  // 256 = 4 × 62 + 8: the first 8 characters are a little likelier; ids need only be unique.
  for (const b of bytes) out += ID_CHARS[b % ID_CHARS.length]
  return out
}
