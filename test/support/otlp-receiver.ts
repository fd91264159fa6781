/**
 * A real OTLP/HTTP trace receiver for the tests: accepts POST /v1/traces with the JSON encoding
 * (what @opentelemetry/exporter-trace-otlp-http sends; gzip too) and keeps every span it got,
 * flattened with its resource's service name. Anything else is answered 404.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { z } from 'zod';

/** An attribute's value: a scalar, or a list or map of them (kept as JSON). */
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: unknown;
  kvlistValue?: unknown;
  bytesValue?: unknown;
}
const anyValue: z.ZodType<OtlpValue> = z.object({
  stringValue: z.string().optional(),
  intValue: z.union([z.string(), z.number()]).optional(),
  doubleValue: z.number().optional(),
  boolValue: z.boolean().optional(),
  arrayValue: z.unknown().optional(),
  kvlistValue: z.unknown().optional(),
  bytesValue: z.unknown().optional(),
});
const keyValues = z.array(z.object({ key: z.string(), value: anyValue })).optional();
const exportRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: keyValues }).optional(),
      scopeSpans: z.array(
        z.object({
          spans: z
            .array(
              z
                .object({
                  traceId: z.string(),
                  spanId: z.string(),
                  parentSpanId: z.string().optional(),
                  name: z.string(),
                  kind: z.number(),
                  attributes: keyValues,
                  events: z.array(z.object({ name: z.string(), attributes: keyValues }).passthrough()).optional(),
                  status: z.object({ code: z.number().optional(), message: z.string().optional() }).passthrough().optional(),
                })
                .passthrough(),
            )
            .optional(),
        }),
      ),
    }),
  ),
});

/** OTLP's SpanKind numbers. */
export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** The span as it was received (JSON): everything it carries, whatever the shape, for privacy checks. */
  raw: string;
  statusCode: number;
}

function plain(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return JSON.stringify(value);
}

function record(list: z.infer<typeof keyValues>): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (with spans or not). */
  requests: number;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: Omit<OtlpReceiver, 'url' | 'close'> = { spans: [], requests: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      receiver.requests++;
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
      const parsed = exportRequest.safeParse(JSON.parse(body.toString('utf8')));
      if (!parsed.success) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: parsed.error.message }));
        return;
      }
      for (const rs of parsed.data.resourceSpans) {
        const resource = record(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans ?? []) {
            const attributes = record(s.attributes);
            receiver.spans.push({
              service: String(resource['service.name'] ?? ''),
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes,
              raw: JSON.stringify(s),
              statusCode: s.status?.code ?? 0,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
