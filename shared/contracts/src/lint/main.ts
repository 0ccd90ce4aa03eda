import { describeFinding, lintOpenApiDocument } from './openapi-lint.js';

/** `npm run lint:openapi`: both linters over the built document; any error or warning fails. */
const findings = await lintOpenApiDocument();
const failing = findings.filter((finding) => finding.severity === 'error' || finding.severity === 'warning');
for (const finding of findings) process.stdout.write(`${describeFinding(finding)}\n`);
process.stdout.write(
  `openapi lint: ${failing.length} errors and warnings, ${findings.length - failing.length} other findings (Redocly recommended, Spectral spectral:oas)\n`,
);
process.exitCode = failing.length > 0 ? 1 : 0;
