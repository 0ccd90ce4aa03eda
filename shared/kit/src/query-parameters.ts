import { declaredQueryOf } from '@merx/contracts';
import type { Middleware } from 'koa';
import { fieldPath, ValidationFailed } from './errors.js';

/**
 * Refuses query parameters the operation does not declare in the OpenAPI document, with the same
 * 422 `validation_failed` an unknown body field gets: a misspelt filter (`?stauts=active`) would
 * otherwise be ignored and answer everything. Runs after the credentials and the scope are checked
 * (requireScope, requireOperator), so a caller without them learns nothing about the parameters.
 */
export const refuseUndeclaredQueryParameters: Middleware = async function refuseUndeclaredQueryParameters(ctx, next) {
  const declared = declaredQueryOf(ctx.method, ctx.path);
  if (declared) {
    const unknown = Object.keys(ctx.query).filter((name) => !declared.names.has(name));
    if (unknown.length > 0) {
      const accepted = declared.names.size > 0 ? `it takes ${[...declared.names].join(', ')}` : 'it takes none';
      throw new ValidationFailed(
        unknown.map((name) => ({ field: fieldPath('', name), code: 'unknown_parameter', message: `${name} is not a query parameter of ${declared.operationId}; ${accepted}` })),
      );
    }
  }
  return next();
};
