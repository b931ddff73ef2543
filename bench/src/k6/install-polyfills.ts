/**
 * Imported first by the k6 bundle's entry: installs the missing web globals before any SDK
 * module evaluates (core creates its `TextEncoder` at load time).
 */
import { installPolyfills } from './polyfills.js'

installPolyfills()
