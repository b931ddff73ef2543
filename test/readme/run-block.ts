/**
 * Runs one README block (the path of its file is the argument) and exits once its top-level code
 * is done: a block need not close every connection or channel it opened, as a page would not.
 */
import { pathToFileURL } from 'node:url'

await import(pathToFileURL(process.argv[2]!).href)
process.exit(0)
