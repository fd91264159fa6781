/** Small HTTP helpers for the gateway's JSON endpoints (raw fetch: status codes are what is tested). */
export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export async function call<T = Record<string, unknown>>(
  url: string,
  init: { method?: string; key?: string; json?: unknown; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  let body: string | Buffer | undefined = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

export interface TaskView {
  id: string;
  status: string;
  video_url: string | null;
  enhanced_prompt: string;
  status_update_time: number;
  error?: { code: string; message: string };
}

export async function createTask(base: string, key: string, json: Record<string, unknown>): Promise<TaskView> {
  const res = await call<TaskView>(`${base}/v1/video/create`, { key, json });
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function queryTask(base: string, key: string, id: string): Promise<JsonResponse<TaskView>> {
  return call<TaskView>(`${base}/v1/video/query?id=${encodeURIComponent(id)}`, { key });
}

/** Polls until completed or failed; records every status seen, in order. */
export async function waitForTerminal(base: string, key: string, id: string, timeoutMs = 60_000): Promise<{ final: TaskView; seen: string[] }> {
  const seen: string[] = [];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await queryTask(base, key, id);
    if (res.status !== 200) throw new Error(`query: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    if (seen[seen.length - 1] !== res.body.status) seen.push(res.body.status);
    if (res.body.status === 'completed' || res.body.status === 'failed') return { final: res.body, seen };
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`task ${id} did not finish in ${timeoutMs} ms (seen: ${seen.join(' -> ')})`);
}
