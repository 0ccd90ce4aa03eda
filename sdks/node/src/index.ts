/**
 * `@merx/sdk`: the Merx API for Node 20+.
 *
 *     import Merx from '@merx/sdk';                   // ESM
 *     const { Merx } = require('@merx/sdk');          // CommonJS
 */
import { Merx } from './client.js';

export { Merx, MerxOperator, DEFAULT_BASE_URL, type ClientOptions, type OperatorOptions } from './client.js';
export {
  MerxError,
  BadRequestError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  PreconditionFailedError,
  UnprocessableEntityError,
  RateLimitError,
  InternalServerError,
  UnexpectedStatusError,
  ConnectionError,
  TimeoutError,
  ConfigurationError,
  WebhookVerificationError,
  type ProblemDocument,
} from './core/errors.js';
export type { RequestOptions, ResponseMeta, WithResponse } from './core/options.js';
export type { StoredToken, TokenStore } from './core/tokens.js';
export { Page, PagePromise } from './core/pagination.js';
export {
  webhooks,
  verify as verifyWebhook,
  DEFAULT_TOLERANCE_SECONDS,
  type VerifyOptions,
  type WebhookHeaders,
  type WebhookPayload,
  type WebhookSecrets,
} from './webhooks.js';
export { OPERATIONS, type OperationEntry } from './generated/operations.js';
export { VERSION } from './version.js';
export type { BulkResource, ItemSource } from './grpc/helpers.js';
export type {
  BulkProductInput,
  EventStreamParams,
  ExportFilters,
  GrpcCallOptions,
  ItemProblem,
  ProductResult,
  RecordAck,
  StreamedEvent,
  UpsertOptions,
  BulkWriteOptions,
} from './grpc/types.js';
export type * from './generated/types.js';
export { WEBHOOK_TOPICS } from './generated/types.js';

export default Merx;
