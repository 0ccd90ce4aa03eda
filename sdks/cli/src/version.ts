import { createRequire } from 'node:module';

/** The package's own version, for `merx --version` and the User-Agent of gRPC calls. */
export const VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
