/**
 * The slice of OpenAPI 3.1 this project writes. Kept narrow on purpose: the SDK generators and
 * the contract validator read these fields and nothing else, so a typo in the document is a
 * compile error rather than a silently ignored member.
 */
export type JsonSchema = { readonly [keyword: string]: unknown };

export type Reference = { $ref: string };

export interface HeaderObject {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

/** A named example: Redoc and Scalar show each one, and a unit test validates its value against the schema beside it. */
export interface ExampleObject {
  summary: string;
  description?: string;
  value: unknown;
}

export interface MediaTypeObject {
  schema: JsonSchema;
  examples?: Record<string, ExampleObject>;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject | Reference>;
  content?: Record<string, MediaTypeObject>;
}

export interface ParameterObject {
  name: string;
  in: 'query' | 'header' | 'path';
  description: string;
  required?: boolean;
  schema: JsonSchema;
  example?: unknown;
}

export interface RequestBodyObject {
  description?: string;
  required: boolean;
  content: Record<string, MediaTypeObject>;
}

/** An empty array means "no credentials"; `{ oauth2: [scope] }` or `{ operator: [] }` otherwise. */
export type SecurityRequirement = Record<string, string[]>;

export interface OperationObject {
  /** `<resource>.<verb>`: the SDKs name their methods after it, so it never changes once published. */
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: SecurityRequirement[];
  parameters?: Array<ParameterObject | Reference>;
  requestBody?: RequestBodyObject;
  responses: Record<string, ResponseObject | Reference>;
}

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type PathItem = Partial<Record<HttpMethod, OperationObject>> & {
  parameters?: Array<ParameterObject | Reference>;
};

export interface SecuritySchemeObject {
  type: 'oauth2' | 'http';
  description: string;
  scheme?: string;
  bearerFormat?: string;
  flows?: { clientCredentials: { tokenUrl: string; scopes: Record<string, string> } };
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  jsonSchemaDialect: string;
  info: {
    title: string;
    version: string;
    description: string;
    license: { name: string; identifier: string };
    contact: { name: string; url: string; email: string };
  };
  servers: Array<{ url: string; description: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, PathItem>;
  /** What Merx POSTs to subscribers: one entry per public event of the catalogue (OpenAPI 3.1 `webhooks`). */
  webhooks: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, ResponseObject>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, HeaderObject>;
    securitySchemes: Record<string, SecuritySchemeObject>;
  };
  /**
   * What the gateway answers for a path it does not route (404) or a method a path does not
   * allow (405). Not part of OpenAPI; the contract validator reads it so those answers count
   * as documented.
   */
  'x-merx-unrouted-responses': Record<'404' | '405', Reference | ResponseObject>;
}
