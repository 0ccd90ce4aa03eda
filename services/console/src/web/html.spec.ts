import assert from 'node:assert/strict';
import { ApiProblem } from '../api/client.js';
import { FormErrors } from './components.js';
import { html, raw } from './html.js';

describe('console page building', () => {
  it('escapes every interpolated value unless it is markup this code made', () => {
    const name = '<script>alert("x")</script> & \'quotes\'';
    const page = html`<p title="${name}">${name}</p>${html`<b>${'<i>'}</b>`}${raw('<svg></svg>')}${[name, 1, null, undefined, false]}`;
    assert.equal(
      page.value,
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;</p><b>&lt;i&gt;</b><svg></svg>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;1',
    );
  });

  it('puts each problem next to the field it names, list positions included, and the rest in the summary', () => {
    const problem = new ApiProblem(
      422,
      'validation_failed',
      'Validation failed',
      'The request is not valid.',
      [
        { field: 'name', code: 'required', message: 'name is required' },
        { field: 'scopes[1]', code: 'unknown_scope', message: 'nope is not a Merx scope' },
        { field: '(body)', code: 'invalid', message: 'something about the whole body' },
      ],
      'req_1',
      undefined,
    );
    const errors = FormErrors.from(problem, ['name', 'scopes']);
    assert.deepEqual(errors.of('name'), ['Name is required.']);
    assert.deepEqual(errors.of('scopes'), ['Nope is not a Merx scope.']);
    assert.deepEqual(errors.general, ['Something about the whole body.']);
    assert.deepEqual(FormErrors.from(new ApiProblem(409, 'conflict', 'Conflict', 'A key with this name exists.', [], undefined, undefined), ['name']).general, [
      'A key with this name exists.',
    ]);
  });
});
