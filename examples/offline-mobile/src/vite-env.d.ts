/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The gateways of the demo's cluster, by region: `http://…:7080,http://…:7081`. */
  readonly VITE_CAUSEWAY_GATEWAYS?: string
}
