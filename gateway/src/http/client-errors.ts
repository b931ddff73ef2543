/**
 * Fastify's `clientErrorHandler`: what the gateway answers when Node's HTTP parser or its timers
 * refuse a connection's request before Fastify sees it (headers too large, a request that did not
 * arrive in time, bytes that are not HTTP). Node hands over the socket only, so the reply is
 * written to it directly, in the gateway's error format with a stable code, and the connection
 * is closed: the parser cannot resync on it.
 */
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { CausewayError } from '@causeway/core'

/** Node's error for a refused request (`code` is llhttp's `HPE_...` or `ERR_HTTP_...`). */
interface ConnectionError extends Error {
  code?: string
  bytesParsed?: number
}

/** The Causeway error standing for one of Node's client errors. */
export function clientErrorOf(error: ConnectionError): CausewayError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new CausewayError(
        'HEADERS_TOO_LARGE',
        "the request's headers are larger than the gateway accepts",
      )
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new CausewayError(
        'REQUEST_TIMEOUT',
        'the request did not arrive within the time limit; the connection is closed',
      )
    case 'HPE_INVALID_METHOD':
      return new CausewayError('INVALID_REQUEST', 'not an HTTP request: unknown method')
    default:
      return new CausewayError('INVALID_REQUEST', 'not a valid HTTP/1.1 request')
  }
}

/** Writes `error` as a whole HTTP reply and closes the connection. */
export function writeErrorAndClose(socket: Socket, error: CausewayError): void {
  const body = JSON.stringify(error.toBody())
  const reply =
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  // Closed once the reply is flushed; a peer that never reads it does not keep the socket, as
  // `end` alone would let it.
  socket.end(reply, () => socket.destroy())
  setTimeout(() => socket.destroy(), 1000).unref()
}

/** The handler Fastify installs on the server's `clientError` event. */
export function handleClientError(error: ConnectionError, socket: Socket): void {
  // A reset connection, or one already closed: there is no one to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // A reply already under way (a timeout after the response started) cannot be replaced.
  if (
    !socket.writable ||
    (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent
  ) {
    socket.destroy()
    return
  }
  writeErrorAndClose(socket, clientErrorOf(error))
}
