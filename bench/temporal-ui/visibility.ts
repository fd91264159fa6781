import { z } from 'zod';

/**
 * What the Web UI's own server answers for a list query (GET /api/v1/namespaces/{ns}/workflows,
 * the call its list page makes), reduced to what the tour checks. Search attribute values are
 * payloads: base64 JSON.
 */
const Payload = z.object({ data: z.string() });
const ListAnswer = z.object({
  executions: z
    .array(
      z.object({
        execution: z.object({ workflowId: z.string(), runId: z.string() }),
        status: z.string(),
        searchAttributes: z.object({ indexedFields: z.record(z.string(), Payload).optional() }).optional(),
      }),
    )
    .nullish()
    .transform((e) => e ?? []),
});

export interface ListedWorkflow {
  workflowId: string;
  runId: string;
  /** WORKFLOW_EXECUTION_STATUS_RUNNING, ..._COMPLETED, ... */
  executionStatus: string;
  /** Custom search attributes, decoded. */
  attributes: Record<string, unknown>;
}

export async function listWorkflows(uiUrl: string, namespace: string, query: string): Promise<ListedWorkflow[]> {
  const url = `${uiUrl}/api/v1/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`Temporal UI ${url}: HTTP ${res.status} ${text.slice(0, 300)}`);
  const parsed = ListAnswer.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`Temporal UI ${url}: unexpected answer: ${parsed.error.message}`);
  return parsed.data.executions.map((e) => ({
    workflowId: e.execution.workflowId,
    runId: e.execution.runId,
    executionStatus: e.status,
    attributes: Object.fromEntries(Object.entries(e.searchAttributes?.indexedFields ?? {}).map(([k, p]) => [k, decodePayload(p.data)])),
  }));
}

function decodePayload(data: string): unknown {
  try {
    return JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  } catch {
    return data;
  }
}

/**
 * Waits until the list for `query` holds exactly the `expected` workflows, each with its
 * GatewayStatus (null: any). Visibility trails the workflows' own state by a moment; the
 * pages are rendered only once it has caught up, so each shows the final picture.
 */
export async function waitForListing(
  uiUrl: string,
  namespace: string,
  query: string,
  expected: Record<string, string | null>,
  timeoutMs = 60_000,
): Promise<ListedWorkflow[]> {
  const deadline = Date.now() + timeoutMs;
  let last: ListedWorkflow[] = [];
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      last = await listWorkflows(uiUrl, namespace, query);
      const ids = last.map((w) => w.workflowId).sort();
      const matches =
        JSON.stringify(ids) === JSON.stringify(Object.keys(expected).sort()) &&
        last.every((w) => expected[w.workflowId] === null || w.attributes.GatewayStatus === expected[w.workflowId]);
      if (matches) return last;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const seen = last.map((w) => `${w.workflowId}=${String(w.attributes.GatewayStatus)}`).join(', ') || 'nothing';
  throw new Error(`the Temporal UI did not list ${JSON.stringify(expected)} for ${query} (saw ${seen})${lastError ? `: ${String(lastError)}` : ''}`);
}
