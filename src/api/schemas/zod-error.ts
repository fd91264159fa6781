import type { z } from 'zod';
import { InvalidRequestError } from '../errors';

/** `images[1]`, `messages[0].content`: the parameter path as a client writes it. */
export function paramPath(path: readonly PropertyKey[]): string | null {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? null : out;
}

type Issue = z.core.$ZodIssue;

const specificity = (i: Issue) => i.path.length * 2 + (i.code === 'invalid_type' || i.code === 'invalid_union' ? 0 : 1);

/**
 * A union that failed says only "Invalid input"; the branch that got furthest (deepest path,
 * then anything but a plain type mismatch) holds the problem the caller needs to see.
 */
function mostSpecific(issue: Issue): Issue {
  // A record key that failed its own schema: the key's problem is inside.
  if (issue.code === 'invalid_key' && issue.issues[0]) return { ...issue.issues[0], path: issue.path } as Issue;
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  let best: Issue | null = null;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (!first) continue;
    const inner = mostSpecific(first);
    const candidate = { ...inner, path: [...issue.path, ...inner.path] } as Issue;
    if (!best || specificity(candidate) > specificity(best)) best = candidate;
  }
  return best && specificity(best) > specificity(issue) ? best : issue;
}

/** The first issue, stated with the parameter it concerns, as a 400. */
export function toInvalidRequest(error: z.ZodError): InvalidRequestError {
  const first = error.issues[0];
  const issue = first ? mostSpecific(first) : undefined;
  if (!issue) return new InvalidRequestError('Invalid request body.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const param = paramPath([...issue.path, key]);
    return new InvalidRequestError(`Unrecognized request argument supplied: ${param}`, param, 'unknown_parameter');
  }
  const param = paramPath(issue.path);
  if (issue.code === 'invalid_type' && issue.input === undefined) {
    return new InvalidRequestError(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  }
  const where = param ? `Invalid '${param}': ` : 'Invalid request: ';
  return new InvalidRequestError(`${where}${issue.message}`, param);
}

/** Parses an edge input; the first problem becomes a 400 naming the parameter. */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) throw toInvalidRequest(result.error);
  return result.data;
}
