import assert from 'node:assert/strict';
import { openApiDocument } from '../openapi.js';
import { describeFinding, lintOpenApiDocument } from './openapi-lint.js';

describe('OpenAPI linters (Redocly recommended, Spectral spectral:oas)', () => {
  it('find no error and no warning in the document', async function () {
    this.timeout(300_000);
    const findings = await lintOpenApiDocument();
    const failing = findings.filter((finding) => finding.severity === 'error' || finding.severity === 'warning');
    assert.deepEqual(failing.map(describeFinding), []);
  });

  it('do find what they are there to find', async function () {
    this.timeout(300_000);
    const { contact: _contact, ...info } = openApiDocument.info;
    const broken = {
      ...openApiDocument,
      info,
      paths: { ...openApiDocument.paths, '/api/v1/broken': { get: { ...openApiDocument.paths['/api/v1/products']!.get!, operationId: 'products.list' } } },
    };
    const rules = new Set((await lintOpenApiDocument(broken as unknown as typeof openApiDocument)).map((finding) => `${finding.linter}:${finding.rule}`));
    assert.ok(rules.has('spectral:info-contact'), [...rules].join(', '));
    assert.ok(rules.has('spectral:operation-operationId-unique') && rules.has('redocly:operation-operationId-unique'), [...rules].join(', '));
  });
});
