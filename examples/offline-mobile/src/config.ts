/**
 * Which phone this page is, which gateway it talks to and which list it shows:
 * `?phone=a&gateway=http://…&list=groceries` (the demo page and the tests say so), else what this browser remembered (an installed app starts at
 * `./`), else the demo cluster's gateway of the phone's region (phone a: region 0, b: region 1).
 */

/** One phone's settings. */
export interface PhoneConfig {
  /** The phone's name (`a`, `b`, …). */
  phone: string
  /** Its gateway's URL. */
  gateway: string
  /** Its IndexedDB database (one per phone: two phones in one browser keep separate stores). */
  store: string
  /** The shared list's name (`?list=`): phones that name the same list share it. */
  list: string
}

/** The demo cluster's gateways, by region (`npm run demo` builds with them). */
export function demoGateways(env: string | undefined): string[] {
  const urls = (env ?? '').split(',').filter((u) => u !== '')
  return urls.length > 0 ? urls : ['http://127.0.0.1:7080', 'http://127.0.0.1:7081']
}

export function phoneConfig(
  search: string,
  storage: Pick<Storage, 'getItem' | 'setItem'>,
  gateways: string[],
): PhoneConfig {
  const params = new URLSearchParams(search)
  const phone = (
    params.get('phone') ??
    storage.getItem('offline-mobile:phone') ??
    'a'
  ).toLowerCase()
  if (!/^[a-z0-9-]{1,20}$/.test(phone))
    throw new Error(`not a phone name: ${JSON.stringify(phone)}`)
  const index = Math.max(0, phone.charCodeAt(0) - 'a'.charCodeAt(0)) % gateways.length
  const gateway =
    params.get('gateway') ?? storage.getItem(`offline-mobile:gateway:${phone}`) ?? gateways[index]!
  const list = params.get('list') ?? storage.getItem('offline-mobile:list') ?? 'groceries'
  if (!/^[a-z0-9-]{1,40}$/.test(list)) throw new Error(`not a list name: ${JSON.stringify(list)}`)
  storage.setItem('offline-mobile:phone', phone)
  storage.setItem(`offline-mobile:gateway:${phone}`, gateway)
  storage.setItem('offline-mobile:list', list)
  return { phone, gateway, store: `shopping-${phone}`, list }
}
