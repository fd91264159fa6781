import { z } from 'zod';

/** The gateway's answers this tool relies on, checked: a gateway that answers otherwise is named in the error. */
const IssuedKey = z.object({ id: z.string().regex(/^key_/), key: z.string().min(1) });
const CreatedTask = z.object({ id: z.string().min(1) });
const TaskStatus = z.object({
  id: z.string().min(1),
  status: z.string(),
  progress: z.number().optional(),
  error: z.object({ code: z.string(), message: z.string() }).nullish(),
});
const DeletedTask = z.object({ deleted: z.literal(true) });

export type TaskStatus = z.infer<typeof TaskStatus>;
export interface IssuedKey {
  id: string;
  key: string;
}

/** The admin and video calls of the gateway at apiUrl that the Temporal UI tour makes. */
export class GatewayClient {
  constructor(
    readonly apiUrl: string,
    private readonly adminToken: string,
  ) {}

  async issueKey(name: string): Promise<IssuedKey> {
    return this.call('POST', '/admin/keys', this.adminToken, { name }, IssuedKey, 201);
  }

  /** A task through /v1/video/create; its id is the workflow id. */
  async createTask(key: string, body: Record<string, unknown>): Promise<string> {
    return (await this.call('POST', '/v1/video/create', key, body, CreatedTask, 200)).id;
  }

  async task(key: string, id: string): Promise<TaskStatus> {
    return this.call('GET', `/v1/videos/${encodeURIComponent(id)}`, key, undefined, TaskStatus, 200);
  }

  /** Cancels a running task (refunded) or removes a finished one's files. */
  async deleteTask(key: string, id: string): Promise<void> {
    await this.call('DELETE', `/v1/videos/${encodeURIComponent(id)}`, key, undefined, DeletedTask, 200);
  }

  private async call<T>(method: string, route: string, token: string, body: unknown, schema: z.ZodType<T>, expected: number): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.apiUrl}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new Error(`${method} ${this.apiUrl}${route}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await res.text();
    if (res.status !== expected) throw new Error(`${method} ${route}: HTTP ${res.status} ${text.slice(0, 300)}`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${route}: not JSON: ${text.slice(0, 200)}`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new Error(`${method} ${route}: unexpected answer ${text.slice(0, 300)}: ${parsed.error.message}`);
    return parsed.data;
  }
}
