import assert from 'node:assert/strict';
import { findRoute, type Route } from './routes.js';

const route = (template: string): Route => ({ template, item: {} as Route['item'] });

describe('findRoute', () => {
  const routes = [route('/api/v1/products/{id}'), route('/api/v1/products'), route('/api/v1/products/export'), route('/api/v1/{kind}/export')];

  it('prefers the literal path over a template that also matches it, whatever the order listed', () => {
    assert.equal(findRoute(routes, '/api/v1/products/export')?.template, '/api/v1/products/export');
    assert.equal(findRoute([...routes].reverse(), '/api/v1/products/export')?.template, '/api/v1/products/export');
  });

  it('matches a template segment by segment, and nothing for an unknown path', () => {
    assert.equal(findRoute(routes, '/api/v1/products/prd_1')?.template, '/api/v1/products/{id}');
    assert.equal(findRoute(routes, '/api/v1/products')?.template, '/api/v1/products');
    assert.equal(findRoute(routes, '/api/v1/merchants/export')?.template, '/api/v1/{kind}/export');
    assert.equal(findRoute(routes, '/api/v1/products/prd_1/more'), undefined);
  });

  it('keeps the first listed of two templates as literal as each other', () => {
    const tied = [route('/a/{x}/c'), route('/a/b/{y}')];
    assert.equal(findRoute(tied, '/a/b/c')?.template, '/a/{x}/c');
    assert.equal(findRoute([...tied].reverse(), '/a/b/c')?.template, '/a/b/{y}');
  });
});
