/**
 * The most a text request can cost (what is held before it goes upstream) and the estimate of
 * what a dropped answer produced: pure functions of the request and the price table.
 */
import { DEFAULT_PRICES, textUsagePrice } from '../../src/billing/prices';
import {
  estimateUsage,
  inputTokenCeiling,
  needsOutputCap,
  outputTokenCeiling,
  pdfPages,
  TEXT_CEILING,
  textCeiling,
  type TextRequestShape,
} from '../../src/billing/text-ceiling';
import { stringFieldBytes } from '../../src/providers/usage';

const shapeOf = (endpoint: 'messages' | 'chat', body: Record<string, unknown>): TextRequestShape => ({
  endpoint,
  body,
  bodyBytes: Buffer.byteLength(JSON.stringify(body)),
});

/** A PDF skeleton with `n` page objects, as base64. */
const pdf = (n: number) =>
  Buffer.from(
    `%PDF-1.4\n1 0 obj << /Type /Pages /Count ${n} >> endobj\n${Array.from({ length: n }, (_, i) => `${i + 2} 0 obj << /Type /Page /Parent 1 0 R >> endobj\n`).join('')}%%EOF`,
  ).toString('base64');

describe('input ceiling', () => {
  test('text: every byte of the body counts as a token, plus the framing allowance', () => {
    const body = { model: 'cm-haiku-4.5', max_tokens: 10, messages: [{ role: 'user', content: 'héllo wörld, 你好' }] };
    const shape = shapeOf('messages', body);
    expect(inputTokenCeiling(shape)).toBe(shape.bodyBytes + TEXT_CEILING.FRAMING_TOKENS);
    // The prompt's UTF-8 bytes are an upper bound on its tokens, and the body holds them all.
    expect(shape.bodyBytes).toBeGreaterThan(Buffer.byteLength('héllo wörld, 你好'));
  });

  test("tools add the provider's tool-use prompt; images and PDF pages their allowances, nested in tool results too", () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    const body = {
      model: 'cm-haiku-4.5',
      max_tokens: 10,
      tools: [{ name: 't', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: [image, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf(3) } }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 't', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [image] }] },
        { role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }] },
      ],
    };
    const shape = shapeOf('messages', body);
    expect(inputTokenCeiling(shape)).toBe(
      shape.bodyBytes +
        TEXT_CEILING.FRAMING_TOKENS +
        TEXT_CEILING.TOOLS_TOKENS +
        2 * TEXT_CEILING.IMAGE_TOKENS +
        (3 + TEXT_CEILING.PDF_URL_PAGES) * TEXT_CEILING.PDF_PAGE_TOKENS,
    );
  });

  test('chat parts: image_url and file (a base64 PDF) count as media', () => {
    const body = {
      model: 'gpt-4o',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            { type: 'file', file: { file_data: `data:application/pdf;base64,${pdf(2)}` } },
          ],
        },
      ],
    };
    const shape = shapeOf('chat', body);
    expect(inputTokenCeiling(shape)).toBe(shape.bodyBytes + TEXT_CEILING.FRAMING_TOKENS + TEXT_CEILING.IMAGE_TOKENS + 2 * TEXT_CEILING.PDF_PAGE_TOKENS);
  });

  test("PDF pages: page objects, or the page tree's count when larger; at least one", () => {
    expect(pdfPages(pdf(7))).toBe(7);
    expect(pdfPages(Buffer.from('%PDF-1.7 /Type /Pages /Count 40').toString('base64'))).toBe(40);
    expect(pdfPages(Buffer.from('%PDF-1.7 compressed').toString('base64'))).toBe(1);
  });
});

describe('output ceiling', () => {
  test('messages: max_tokens; chat: the larger of max_completion_tokens and max_tokens, else the default cap; times n', () => {
    expect(outputTokenCeiling(shapeOf('messages', { max_tokens: 300 }), 4096)).toBe(300);
    expect(outputTokenCeiling(shapeOf('chat', {}), 4096)).toBe(4096);
    expect(outputTokenCeiling(shapeOf('chat', { max_tokens: 10, max_completion_tokens: 70 }), 4096)).toBe(70);
    expect(outputTokenCeiling(shapeOf('chat', { max_tokens: 100, n: 3 }), 4096)).toBe(300);
    expect(needsOutputCap({})).toBe(true);
    expect(needsOutputCap({ max_tokens: 5 })).toBe(false);
    expect(needsOutputCap({ max_completion_tokens: 5 })).toBe(false);
  });
});

describe('the hold in credits', () => {
  test('input at the dearest input rate (a cache write for the cm models), output at the output rate: never below any real bill', () => {
    const body = { model: 'cm-sonnet-4.5', max_tokens: 1000, messages: [{ role: 'user', content: 'x'.repeat(4000) }] };
    const shape = shapeOf('messages', body);
    const ceiling = textCeiling(DEFAULT_PRICES, 'cm-sonnet-4.5', shape, 4096);
    const input = shape.bodyBytes + TEXT_CEILING.FRAMING_TOKENS;
    // $3.75 per MTok cache write, $15 per MTok out (3.75 and 15 credits a token).
    expect(ceiling).toEqual({ inputTokens: input, outputTokens: 1000, credits: Math.ceil(input * 3.75) + 15_000 });
    // Any split of those tokens between plain, cache-write and cache-read input costs no more.
    for (const [plain, write, read] of [
      [input, 0, 0],
      [0, input, 0],
      [0, 0, input],
      [1, input - 2, 1],
    ] as const) {
      expect(
        textUsagePrice(DEFAULT_PRICES, 'cm-sonnet-4.5', { inputTokens: plain, cacheCreationTokens: write, cacheReadTokens: read, outputTokens: 1000 }),
      ).toBeLessThanOrEqual(ceiling.credits);
    }
  });
});

describe('a dropped answer', () => {
  const shape = shapeOf('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'y'.repeat(400) }] });
  const none = { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 };

  test("with no usage: input from the request's size, output from the text relayed, never 0", () => {
    expect(estimateUsage(none, 90, shape)).toEqual({ ...none, inputTokens: Math.ceil(shape.bodyBytes / 4), outputTokens: 30 });
    expect(estimateUsage(none, 0, shape).outputTokens).toBe(1);
  });

  test("the provider's counts win where it sent them (messages: input at message_start); output is the larger", () => {
    const started = { ...none, inputTokens: 12, cacheReadTokens: 3, outputTokens: 1 };
    expect(estimateUsage(started, 300, shape)).toEqual({ ...started, outputTokens: 100 });
    expect(estimateUsage({ ...started, outputTokens: 500 }, 300, shape).outputTokens).toBe(500);
  });

  test("generated text is counted from the events' string fields, escapes as written, multi-byte characters by their bytes", () => {
    const chunk = '{"choices":[{"delta":{"content":"say \\"hi\\" 你"},"finish_reason":null}]}';
    expect(stringFieldBytes(chunk, ['content'])).toBe(Buffer.byteLength('say \\"hi\\" 你'));
    const delta = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab"}}';
    expect(stringFieldBytes(delta, ['text', 'thinking', 'partial_json'])).toBe(2);
    // Python servers write a space after the colon.
    expect(stringFieldBytes('{"content": "abc", "arguments": "{\\"a\\":1}"}', ['content', 'arguments'])).toBe(3 + Buffer.byteLength('{\\"a\\":1}'));
    expect(stringFieldBytes('{"content":null}', ['content'])).toBe(0);
    // A field's name is matched as written, whatever characters it holds.
    expect(stringFieldBytes('{"a.b":"xy","aXb":"zzz"}', ['a.b'])).toBe(2);
  });
});
