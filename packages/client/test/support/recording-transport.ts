import { fetchTransport, type Transport, type TransportRequest } from '../../src/index.js'

/** The default transport, recording (a copy of) every request `keep` picks, in `sent`. */
export function recordingTransport(
  keep: (req: TransportRequest) => boolean,
): Transport & { sent: TransportRequest[] } {
  const inner = fetchTransport()
  const sent: TransportRequest[] = []
  return {
    sent,
    request(req) {
      if (keep(req)) sent.push({ ...req, headers: { ...req.headers } })
      return inner.request(req)
    },
  }
}
