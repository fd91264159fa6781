/**
 * The part of OpenAPI 3.1 (https://spec.openapis.org/oas/v3.1.0) this gateway's document uses.
 * Schemas are JSON Schema 2020-12, OpenAPI 3.1's dialect, as zod's toJSONSchema writes them.
 */

export type JsonSchema = Record<string, unknown>;

export type HttpMethod = 'get' | 'post' | 'patch' | 'put' | 'delete';

export interface Header {
  description: string;
  schema: JsonSchema;
}

export interface MediaType {
  schema: JsonSchema;
  /** multipart/form-data: the content type of a part (a file). */
  encoding?: Record<string, { contentType: string }>;
}

export interface Response {
  description: string;
  headers?: Record<string, Header>;
  content?: Record<string, MediaType>;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface RequestBody {
  required: boolean;
  description?: string;
  content: Record<string, MediaType>;
}

/** One alternative: every scheme it names must pass. An empty list of them means none is needed. */
export type SecurityRequirement = Record<string, string[]>;

export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: SecurityRequirement[];
  parameters?: Parameter[];
  requestBody?: RequestBody;
  /** By status code as a string ("200", "4XX" is not used: every status is named). */
  responses: Record<string, Response>;
}

/** One route the app mounts, with its method and path in OpenAPI's form (`{id}`, not `:id`). */
export interface RouteDoc {
  method: HttpMethod;
  path: string;
  operation: Operation;
}

export interface SecurityScheme {
  type: 'http' | 'apiKey';
  description: string;
  scheme?: 'bearer';
  in?: 'header' | 'cookie';
  name?: string;
}

export interface OpenApiDocument {
  openapi: '3.1.1';
  info: { title: string; version: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Partial<Record<HttpMethod, Operation>>>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, SecurityScheme> };
}
