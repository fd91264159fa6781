// Validates the OpenAPI document read from standard input with @seriousme/openapi-schema-validator
// (the OpenAPI project's own JSON Schemas, and every $ref resolved), and prints
// {"valid": bool, "errors": ...}. A child process because the validator is an ES module, which
// the tests' CommonJS module system cannot load.
import { Validator } from '@seriousme/openapi-schema-validator';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const result = await new Validator().validate(JSON.parse(Buffer.concat(chunks).toString('utf8')));
process.stdout.write(JSON.stringify({ valid: result.valid, errors: result.errors ?? null }));
