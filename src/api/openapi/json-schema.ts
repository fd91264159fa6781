import { z } from 'zod';
import type { JsonSchema, Parameter } from './types';

/**
 * zod schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), with zod's own converter: the
 * document states the very schemas the routes validate with, so the two cannot drift. What a
 * schema checks beyond JSON Schema (refinements, per-model rules) is left out by the converter
 * and stated in the operation's description; a type JSON Schema cannot express at all makes the
 * conversion throw, so it fails the build of the document rather than describe it wrongly.
 */
function convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'throw' });
  return rest;
}

/** What a client may send: transforms and defaults read from their input side (a default makes a field optional). */
export function requestSchema(schema: z.ZodType): JsonSchema {
  return convert(schema, 'input');
}

/** What the gateway answers. */
export function responseSchema(schema: z.ZodType): JsonSchema {
  return convert(schema, 'output');
}

/** One query parameter per property of a query's object schema, each with that property's schema. */
export function queryParameters(schema: z.ZodObject, descriptions: Record<string, string> = {}): Parameter[] {
  const json = requestSchema(schema);
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.has(name),
    ...(descriptions[name] ? { description: descriptions[name] } : {}),
    schema: property,
  }));
}
