/**
 * The demo page: two phones side by side, each the app in a frame of its own, with its own store
 * (`phone=a`, `phone=b`) and its own region's gateway.
 */
import './style.css'
import { demoGateways } from './config.js'

const gateways = demoGateways(import.meta.env.VITE_CAUSEWAY_GATEWAYS)
const params = new URLSearchParams(location.search)
const phones = document.getElementById('phones')!

for (const [i, phone] of ['a', 'b'].entries()) {
  const gateway = params.get(`gateway-${phone}`) ?? gateways[i % gateways.length]!
  const frame = document.createElement('iframe')
  frame.className = 'phone-frame'
  frame.title = `phone ${phone.toUpperCase()}`
  frame.name = `phone-${phone}`
  frame.src = `./?${new URLSearchParams({ phone, gateway })}`
  const label = document.createElement('p')
  label.className = 'phone-label'
  label.textContent = `Phone ${phone.toUpperCase()} → region ${i} (${gateway})`
  const figure = document.createElement('figure')
  figure.className = 'phone'
  figure.append(frame, label)
  phones.append(figure)
}
