/**
 * The floor of bench:text: the least a Node proxy can do per request with the gateway's own
 * HTTP stack (node:http server, node:http client with a keep-alive agent, a child process
 * started as the bench starts the gateway), and nothing else: no keys, no limits, no billing,
 * no validation, no logs. Its CPU per
 * request, beside the gateway's, splits the gateway's cost into what Node's HTTP takes on this
 * machine and what the gateway adds on top.
 *
 * FLOOR_PORT, FLOOR_UPSTREAM (the simulator's base URL). Run by bench/text.ts; not a product.
 */
import http from 'node:http';

const upstream = new URL(process.env.FLOOR_UPSTREAM ?? '');
const port = Number(process.env.FLOOR_PORT);
if (!upstream.host || !Number.isInteger(port) || port <= 0) throw new Error('FLOOR_UPSTREAM and FLOOR_PORT are required');

const agent = new http.Agent({ keepAlive: true, maxSockets: 2048, maxFreeSockets: 256, scheduling: 'lifo' });
/** The request headers the simulator needs; everything else stays behind, as a proxy would leave it. */
const FORWARDED = ['authorization', 'x-api-key', 'anthropic-version', 'content-type'];

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const headers: http.OutgoingHttpHeaders = { 'content-length': body.length };
    for (const name of FORWARDED) {
      const value = req.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
      answer.pipe(res);
    });
    out.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    out.end(body);
  });
});
server.listen(port, '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
