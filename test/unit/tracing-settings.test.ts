/**
 * The tracing settings read from the standard OpenTelemetry variables (docs/operations.md,
 * "Tracing"): when tracing is on, where spans go, with which headers, service name and sampler;
 * and the clear start-up errors for values that would otherwise fail later or do nothing.
 */
import { ConfigError, loadConfig } from '../../src/config/env';
import { tracingSettings } from '../../src/telemetry/tracing-settings';
import { urlWithoutSecrets } from '../../src/telemetry/upstream-tracer';

const settings = (vars: Record<string, string>, process: 'gateway' | 'api' | 'worker' = 'api') => tracingSettings(loadConfig(vars).env, process);

test('off unless an endpoint is set, and off with OTEL_SDK_DISABLED', () => {
  expect(settings({})).toBeNull();
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeNull();
  expect(settings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER_ARG: '0.5' })).toBeNull();
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' })).not.toBeNull();
});

test('the endpoints follow the specification: /v1/traces appended to the general one, the traces one as it is', () => {
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })?.url).toBe('http://collector:4318/v1/traces');
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/otlp/' })?.url).toBe('https://otel.example.com/otlp/v1/traces');
  expect(settings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom' })?.url).toBe('http://collector:4318/custom');
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces' })?.url).toBe(
    'http://traces:4318/v1/traces',
  );
});

test('the service name defaults by process and OTEL_SERVICE_NAME overrides it', () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  expect(settings(on, 'gateway')?.serviceName).toBe('durable-model-gateway');
  expect(settings(on, 'api')?.serviceName).toBe('durable-model-gateway-api');
  expect(settings(on, 'worker')?.serviceName).toBe('durable-model-gateway-worker');
  expect(settings({ ...on, OTEL_SERVICE_NAME: 'edge-eu' }, 'worker')?.serviceName).toBe('edge-eu');
});

test('the sampler: parent-based ratio by default, every standard value mapped', () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  expect(settings(on)?.sampler).toEqual({ parentBased: true, ratio: 1 });
  expect(settings({ ...on, OTEL_TRACES_SAMPLER_ARG: '0.25' })?.sampler).toEqual({ parentBased: true, ratio: 0.25 });
  expect(settings({ ...on, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })?.sampler).toEqual({ parentBased: false, ratio: 0.1 });
  expect(settings({ ...on, OTEL_TRACES_SAMPLER: 'parentbased_always_off', OTEL_TRACES_SAMPLER_ARG: '0.5' })?.sampler).toEqual({ parentBased: true, ratio: 0 });
  expect(settings({ ...on, OTEL_TRACES_SAMPLER: 'always_on' })?.sampler).toEqual({ parentBased: false, ratio: 1 });
  expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toThrow(/OTEL_TRACES_SAMPLER/);
  expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: 'half' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
});

test('headers: key=value pairs, values URL-decoded, the traces-only ones winning by name', () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  expect(settings(on)?.headers).toEqual({});
  expect(
    settings({ ...on, OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc, x-tenant=blue,', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=green' })?.headers,
  ).toEqual({ authorization: 'Bearer abc', 'x-tenant': 'green' });
});

test('a bad endpoint or header stops the start with a message that names the variable and never shows the value', () => {
  const refused = (vars: Record<string, string>): string => {
    try {
      loadConfig(vars);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('accepted');
  };
  expect(refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/);
  expect(refused({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector:4317' })).toMatch(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http\(s\) URL/);
  for (const bad of ['s3cr3t-token', '=s3cr3t-token', 'bad header=s3cr3t-token', 'a=%E0%A4%As3cr3t-token', 'a=s3cr3t-token%0D%0Ax-injected=1']) {
    const message = refused({ OTEL_EXPORTER_OTLP_HEADERS: bad });
    expect(message).toMatch(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(message).not.toMatch(/s3cr3t/);
  }
});

test('an upstream URL keeps its origin and path only: no credentials, query or fragment', () => {
  expect(urlWithoutSecrets('https://user:pw@generativelanguage.googleapis.com/v1beta/files/abc:download?alt=media&key=AIza#x')).toEqual({
    full: 'https://generativelanguage.googleapis.com/v1beta/files/abc:download',
    host: 'generativelanguage.googleapis.com',
    port: 443,
  });
  expect(urlWithoutSecrets('http://127.0.0.1:9000/blob.mp4?X-Amz-Signature=abc')).toEqual({
    full: 'http://127.0.0.1:9000/blob.mp4',
    host: '127.0.0.1',
    port: 9000,
  });
  expect(urlWithoutSecrets('not a url')).toBeUndefined();
});
