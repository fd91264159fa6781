/**
 * Request validation for the text endpoints, through parseOrThrow as the routes use it:
 * POST /v1/messages (every rule of spec 4.11 and 8) and text chat completions. A refusal is
 * a 400 InvalidRequestError naming the parameter as the client wrote it.
 */
import { InvalidRequestError } from '../../src/api/errors';
import { chatTextBody } from '../../src/api/schemas/chat-text';
import { CONTENT_BLOCK_TYPES, messagesBody } from '../../src/api/schemas/messages';
import { parseOrThrow } from '../../src/api/schemas/zod-error';

type Json = Record<string, unknown>;

const base = (extra: Json = {}): Json => ({ model: 'cm-sonnet-4.5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }], ...extra });
/** One user message whose content is the given blocks. */
const withBlocks = (...blocks: Json[]): Json => base({ messages: [{ role: 'user', content: blocks }] });

function accepts(body: Json): Json {
  return parseOrThrow(messagesBody, body) as Json;
}

/** The 400 a body gets (fails the test when it is accepted or something else is thrown). */
function rejection(schema: typeof messagesBody | typeof chatTextBody, body: unknown): InvalidRequestError {
  let thrown: unknown;
  try {
    parseOrThrow(schema, body);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(InvalidRequestError);
  const err = thrown as InvalidRequestError;
  expect(err.status).toBe(400);
  expect(err.type).toBe('invalid_request_error');
  return err;
}

// Tiny files that start with each format's real signature.
const bytes = (...parts: (number[] | string)[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const PNG = bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0, 0, 0, 13], 'IHDR', [0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]).toString('base64');
const JPEG = bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], 'JFIF', [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]).toString('base64');
const GIF = bytes('GIF89a', [1, 0, 1, 0, 0x80, 0, 0]).toString('base64');
const WEBP = bytes('RIFF', [0x1a, 0, 0, 0], 'WEBPVP8L', [0x0d, 0, 0, 0, 0x2f, 0, 0, 0]).toString('base64');
const PDF = bytes('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n').toString('base64');

const image = (media_type: string, data: string): Json => ({ type: 'image', source: { type: 'base64', media_type, data } });
const documentBlock = (media_type: string, data: string): Json => ({ type: 'document', source: { type: 'base64', media_type, data } });

const BLOCK = 'messages[0].content[0]';

describe('messagesBody: what is accepted', () => {
  test('the minimal body, unchanged', () => {
    expect(accepts(base())).toEqual({ model: 'cm-sonnet-4.5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] });
  });

  test('every native option at a valid value', () => {
    const body = base({
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      temperature: 0,
      top_p: 1,
      top_k: 40,
      stream: true,
      stop_sequences: ['END'],
      tools: [
        { name: 'get_weather', description: 'w', input_schema: { type: 'object', properties: {} } },
        { type: 'web_search_20250305', name: 'web_search' },
      ],
      tool_choice: { type: 'tool', name: 'get_weather' },
      metadata: { user_id: 'u-1' },
      thinking: { type: 'disabled' },
    });
    expect(accepts(body)).toEqual(body);
  });

  test('every compatibility extension at a valid value', () => {
    const body = base({
      n: 1,
      stop: ['a', 'b', 'c', 'd'],
      presence_penalty: -2,
      frequency_penalty: 2,
      logit_bias: { '50256': -100, '1': 100 },
      user: 'end-user',
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } },
      seed: 7,
    });
    expect(accepts(body)).toEqual(body);
  });

  test('unknown top-level native fields pass through (loose)', () => {
    const out = accepts(base({ container: 'c-1', mcp_servers: [{ type: 'url', url: 'https://mcp.test' }], service_tier: 'auto' }));
    expect(out['container']).toBe('c-1');
    expect(out['mcp_servers']).toEqual([{ type: 'url', url: 'https://mcp.test' }]);
    expect(out['service_tier']).toBe('auto');
  });

  test('unknown fields inside messages and blocks pass through too', () => {
    const out = accepts(
      base({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' }, citations: null }], extra: 1 }] }),
    );
    expect(out['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' }, citations: null }], extra: 1 },
    ]);
  });

  test('content as a string or as blocks, for user and assistant', () => {
    const messages = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello' }] },
      { role: 'user', content: [{ type: 'text', text: 'More' }] },
    ];
    expect(accepts(base({ messages }))['messages']).toEqual(messages);
  });

  test.each<[string, string]>([
    ['image/png', PNG],
    ['image/jpeg', JPEG],
    ['image/gif', GIF],
    ['image/webp', WEBP],
  ])('a base64 %s image with its real signature', (mediaType, data) => {
    const block = image(mediaType, data);
    expect(accepts(withBlocks(block))['messages']).toEqual([{ role: 'user', content: [block] }]);
  });

  test('a base64 PDF document ("%PDF-" bytes)', () => {
    expect(PDF.startsWith('JVBERi0')).toBe(true);
    expect(() => accepts(withBlocks(documentBlock('application/pdf', PDF)))).not.toThrow();
  });

  test.each<[string, Json]>([
    ['an image', { type: 'image', source: { type: 'url', url: 'https://cdn.test/cat.png' } }],
    ['a document', { type: 'document', source: { type: 'url', url: 'http://docs.test/paper.pdf' } }],
  ])('%s from a url source', (_what, block) => {
    expect(accepts(withBlocks(block))['messages']).toEqual([{ role: 'user', content: [block] }]);
  });

  test('a tool round trip: thinking, redacted_thinking and tool_use from the assistant, tool_result from the user', () => {
    const messages = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should call the tool.', signature: 'sig-abc' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'ok' }, image('image/png', PNG)], is_error: false },
          { type: 'tool_result', tool_use_id: 'toolu_3' },
        ],
      },
    ];
    expect(accepts(base({ max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 }, messages }))['messages']).toEqual(messages);
  });

  test.each<[string, Json]>([
    ['budget 1024 under max_tokens 2048', { max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } }],
    ['budget 32768 under max_tokens 40000', { max_tokens: 40_000, thinking: { type: 'enabled', budget_tokens: 32_768 } }],
    ['thinking with temperature 1', { max_tokens: 4096, temperature: 1, thinking: { type: 'enabled', budget_tokens: 2048 } }],
    ['thinking disabled with temperature 0.2', { temperature: 0.2, thinking: { type: 'disabled' } }],
    ['temperature 0.5 without thinking', { temperature: 0.5 }],
    ['top_p 0', { top_p: 0 }],
    ['stop as a string', { stop: '###' }],
    ['stop null', { stop: null }],
    ['penalties at -2 and 2', { presence_penalty: 2, frequency_penalty: -2 }],
    ['response_format text', { response_format: { type: 'text' } }],
    ['response_format json_object', { response_format: { type: 'json_object' } }],
  ])('accepted: %s', (_what, extra) => {
    expect(() => accepts(base(extra))).not.toThrow();
  });
});

describe('messagesBody: what is refused, and the parameter named', () => {
  test.each<[string, Json, string, string]>([
    // temperature, top_p: 0-1
    ['temperature above 1', { temperature: 1.01 }, 'temperature', "Invalid 'temperature': Too big: expected number to be <=1"],
    ['temperature 2 (an OpenAI value)', { temperature: 2 }, 'temperature', "Invalid 'temperature': Too big: expected number to be <=1"],
    ['temperature below 0', { temperature: -0.1 }, 'temperature', "Invalid 'temperature': Too small: expected number to be >=0"],
    ['top_p above 1', { top_p: 1.5 }, 'top_p', "Invalid 'top_p': Too big: expected number to be <=1"],
    ['top_p below 0', { top_p: -0.1 }, 'top_p', "Invalid 'top_p': Too small: expected number to be >=0"],
    // thinking: 1024-32768, under max_tokens, temperature 1 or unset
    [
      'thinking budget 1023',
      { max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 1023 } },
      'thinking.budget_tokens',
      "Invalid 'thinking.budget_tokens': Too small: expected number to be >=1024",
    ],
    [
      'thinking budget 32769',
      { max_tokens: 40_000, thinking: { type: 'enabled', budget_tokens: 32_769 } },
      'thinking.budget_tokens',
      "Invalid 'thinking.budget_tokens': Too big: expected number to be <=32768",
    ],
    [
      'thinking budget equal to max_tokens',
      { max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 2048 } },
      'thinking.budget_tokens',
      "Invalid 'thinking.budget_tokens': must be less than max_tokens (2048)",
    ],
    [
      'thinking budget above max_tokens',
      { max_tokens: 1500, thinking: { type: 'enabled', budget_tokens: 2000 } },
      'thinking.budget_tokens',
      "Invalid 'thinking.budget_tokens': must be less than max_tokens (1500)",
    ],
    [
      'thinking enabled with temperature 0.7',
      { max_tokens: 4096, temperature: 0.7, thinking: { type: 'enabled', budget_tokens: 2048 } },
      'temperature',
      "Invalid 'temperature': may only be 1 (or unset) while thinking is enabled",
    ],
    [
      'thinking enabled with temperature 0',
      { max_tokens: 4096, temperature: 0, thinking: { type: 'enabled', budget_tokens: 2048 } },
      'temperature',
      "Invalid 'temperature': may only be 1 (or unset) while thinking is enabled",
    ],
    ['an unknown thinking type', { thinking: { type: 'auto' } }, 'thinking.type', "Invalid 'thinking.type': thinking.type must be 'enabled' or 'disabled'"],
    ['enabled thinking without a budget', { thinking: { type: 'enabled' } }, 'thinking.budget_tokens', "Missing required parameter: 'thinking.budget_tokens'."],
    // stop: up to 4
    ['five stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', "Invalid 'stop': at most 4 stop sequences"],
    ['a stop that is a number', { stop: 5 }, 'stop', "Invalid 'stop': Invalid input"],
    // penalties: -2 to 2
    ['presence_penalty above 2', { presence_penalty: 2.1 }, 'presence_penalty', "Invalid 'presence_penalty': Too big: expected number to be <=2"],
    ['presence_penalty below -2', { presence_penalty: -2.1 }, 'presence_penalty', "Invalid 'presence_penalty': Too small: expected number to be >=-2"],
    ['frequency_penalty above 2', { frequency_penalty: 3 }, 'frequency_penalty', "Invalid 'frequency_penalty': Too big: expected number to be <=2"],
    ['frequency_penalty below -2', { frequency_penalty: -2.5 }, 'frequency_penalty', "Invalid 'frequency_penalty': Too small: expected number to be >=-2"],
    // logit_bias: values -100 to 100
    ['a logit_bias value above 100', { logit_bias: { '1234': 101 } }, 'logit_bias.1234', "Invalid 'logit_bias.1234': Too big: expected number to be <=100"],
    [
      'a logit_bias value below -100',
      { logit_bias: { '1234': -100.5 } },
      'logit_bias.1234',
      "Invalid 'logit_bias.1234': Too small: expected number to be >=-100",
    ],
    // n: only 1
    ['n 2', { n: 2 }, 'n', "Invalid 'n': only n = 1 is supported: the native API returns one message"],
    ['n 0', { n: 0 }, 'n', "Invalid 'n': Too small: expected number to be >=1"],
    // required fields and shapes
    ['no max_tokens', { max_tokens: undefined }, 'max_tokens', "Missing required parameter: 'max_tokens'."],
    ['max_tokens 0', { max_tokens: 0 }, 'max_tokens', "Invalid 'max_tokens': Too small: expected number to be >=1"],
    ['no model', { model: undefined }, 'model', "Missing required parameter: 'model'."],
    ['no messages', { messages: [] }, 'messages', "Invalid 'messages': must contain at least one message"],
    ['a numeric system', { system: 5 }, 'system', "Invalid 'system': must be a string or an array of text blocks"],
    [
      'an unknown response_format type',
      { response_format: { type: 'xml' } },
      'response_format.type',
      "Invalid 'response_format.type': response_format.type must be 'text', 'json_object' or 'json_schema'",
    ],
    [
      'an unknown tool_choice type',
      { tool_choice: { type: 'required' } },
      'tool_choice.type',
      "Invalid 'tool_choice.type': tool_choice.type must be 'auto', 'any', 'tool' or 'none'",
    ],
    ['a custom tool without input_schema', { tools: [{ name: 'f' }] }, 'tools[0]', "Invalid 'tools[0]': a custom tool needs an input_schema"],
    [
      'a metadata.user_id over 256 characters',
      { metadata: { user_id: 'u'.repeat(257) } },
      'metadata.user_id',
      "Invalid 'metadata.user_id': Too big: expected string to have <=256 characters",
    ],
  ])('%s', (_what, extra, param, message) => {
    const err = rejection(messagesBody, base(extra));
    expect(err.param).toBe(param);
    expect(err.message).toBe(message);
  });

  test.each<[string, Json, string]>([
    ['a word', { abc: 1 }, 'logit_bias.abc'],
    ['a negative number', { '-1': 1 }, 'logit_bias.-1'],
    ['a decimal', { '1.5': 1 }, 'logit_bias.1.5'],
  ])('a logit_bias key that is %s is not a token id', (_what, logitBias, param) => {
    const err = rejection(messagesBody, base({ logit_bias: logitBias }));
    expect(err.param).toBe(param);
    expect(err.message).toMatch(new RegExp(`^Invalid '${param.replace(/[.-]/g, '\\$&')}': `));
  });

  test.each<[string, string]>([
    ['system', "must be 'user' or 'assistant' (the system prompt goes in the top-level 'system')"],
    ['tool', "must be 'user' or 'assistant' (the system prompt goes in the top-level 'system')"],
    ['developer', "must be 'user' or 'assistant' (the system prompt goes in the top-level 'system')"],
  ])('role %s is refused', (role, message) => {
    const err = rejection(messagesBody, base({ messages: [{ role, content: 'x' }] }));
    expect(err.param).toBe('messages[0].role');
    expect(err.message).toBe(`Invalid 'messages[0].role': ${message}`);
  });

  test.each<[string, unknown]>([
    ['a number', 42],
    ['a single block object', { type: 'text', text: 'x' }],
    ['null', null],
  ])('content that is %s is refused', (_what, content) => {
    const err = rejection(
      messagesBody,
      base({
        messages: [
          { role: 'user', content: 'ok' },
          { role: 'assistant', content },
        ],
      }),
    );
    expect(err.param).toBe('messages[1].content');
    expect(err.message).toBe("Invalid 'messages[1].content': must be a string or an array of content blocks");
  });

  test.each<[string, string]>([
    ['audio', 'audio'],
    ['image_url (the OpenAI shape)', 'image_url'],
    ['input_text', 'input_text'],
  ])('an unknown block type (%s) is refused with the list of types', (_what, type) => {
    const err = rejection(messagesBody, withBlocks({ type }));
    expect(err.param).toBe(`${BLOCK}.type`);
    expect(err.message).toBe(
      `Invalid '${BLOCK}.type': content block type must be one of text, image, document, tool_use, tool_result, thinking, redacted_thinking, search_result, server_tool_use, web_search_tool_result`,
    );
    expect(err.message).toContain(CONTENT_BLOCK_TYPES.join(', '));
  });

  test.each<[string, string, string]>([
    ['PNG bytes labelled image/jpeg', 'image/jpeg', PNG],
    ['JPEG bytes labelled image/png', 'image/png', JPEG],
    ['GIF bytes labelled image/webp', 'image/webp', GIF],
    ['WEBP bytes labelled image/gif', 'image/gif', WEBP],
    ['PDF bytes labelled image/png', 'image/png', PDF],
  ])('mislabelled image data: %s', (_what, mediaType, data) => {
    const err = rejection(messagesBody, withBlocks(image(mediaType, data)));
    expect(err.param).toBe(`${BLOCK}.source.data`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.data': the data is not a ${mediaType} file`);
  });

  test.each<[string, string]>([
    ['image/png', PNG],
    ['image/jpeg', JPEG],
  ])('a data: URL prefix is refused (%s)', (mediaType, data) => {
    const err = rejection(messagesBody, withBlocks(image(mediaType, `data:${mediaType};base64,${data}`)));
    expect(err.param).toBe(`${BLOCK}.source.data`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.data': must be raw base64, without a data: URL prefix`);
  });

  test('image data that is not base64 is refused', () => {
    const err = rejection(messagesBody, withBlocks(image('image/png', '%%%not base64')));
    expect(err.param).toBe(`${BLOCK}.source.data`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.data': must be base64`);
  });

  test.each<[string, string]>([
    ['image/bmp', 'Qk0='],
    ['image/svg+xml', PNG],
    ['application/pdf', PDF],
  ])('image media_type %s is refused', (mediaType, data) => {
    const err = rejection(messagesBody, withBlocks(image(mediaType, data)));
    expect(err.param).toBe(`${BLOCK}.source.media_type`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.media_type': must be one of image/jpeg, image/png, image/gif, image/webp`);
  });

  test('an image source of another type is refused', () => {
    const err = rejection(messagesBody, withBlocks({ type: 'image', source: { type: 'file', file_id: 'file_1' } }));
    expect(err.param).toBe(`${BLOCK}.source.type`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.type': source.type must be 'base64' or 'url'`);
  });

  test('a url source that is not http(s) is refused', () => {
    const err = rejection(messagesBody, withBlocks({ type: 'image', source: { type: 'url', url: 'ftp://cdn.test/cat.png' } }));
    expect(err.param).toBe(`${BLOCK}.source.url`);
  });

  test.each<[string, string]>([
    ['text/plain', Buffer.from('hello').toString('base64')],
    ['application/msword', Buffer.from([0xd0, 0xcf, 0x11, 0xe0]).toString('base64')],
    ['image/png', PNG],
  ])('a %s document is refused: PDF only', (mediaType, data) => {
    const err = rejection(messagesBody, withBlocks(documentBlock(mediaType, data)));
    expect(err.param).toBe(`${BLOCK}.source.media_type`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.media_type': PDF is the only supported document format: media_type must be application/pdf`);
  });

  test('a plain-text document source is refused: PDF only', () => {
    const err = rejection(messagesBody, withBlocks({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'hello' } }));
    expect(err.param).toBe(`${BLOCK}.source.type`);
    expect(err.message).toBe(
      `Invalid '${BLOCK}.source.type': PDF is the only supported document format: source.type must be 'base64' (application/pdf) or 'url'`,
    );
  });

  test('a document labelled application/pdf whose bytes are not a PDF is refused', () => {
    const err = rejection(messagesBody, withBlocks(documentBlock('application/pdf', PNG)));
    expect(err.param).toBe(`${BLOCK}.source.data`);
    expect(err.message).toBe(`Invalid '${BLOCK}.source.data': the data is not a application/pdf file`);
  });

  test.each<[string, Json, string, string]>([
    ['a tool_use without an id', { type: 'tool_use', name: 'f', input: {} }, `${BLOCK}.id`, `Missing required parameter: '${BLOCK}.id'.`],
    [
      'a tool_use whose input is not an object',
      { type: 'tool_use', id: 't', name: 'f', input: 'x' },
      `${BLOCK}.input`,
      `Invalid '${BLOCK}.input': Invalid input: expected record, received string`,
    ],
    [
      'a tool_result without a tool_use_id',
      { type: 'tool_result', content: 'x' },
      `${BLOCK}.tool_use_id`,
      `Missing required parameter: '${BLOCK}.tool_use_id'.`,
    ],
    ['a thinking block without a signature', { type: 'thinking', thinking: 'x' }, `${BLOCK}.signature`, `Missing required parameter: '${BLOCK}.signature'.`],
    ['a text block without text', { type: 'text' }, `${BLOCK}.text`, `Missing required parameter: '${BLOCK}.text'.`],
  ])('%s is refused', (_what, block, param, message) => {
    const err = rejection(messagesBody, withBlocks(block));
    expect(err.param).toBe(param);
    expect(err.message).toBe(message);
  });

  test('a mislabelled image inside a tool_result is found and named', () => {
    const err = rejection(messagesBody, withBlocks({ type: 'tool_result', tool_use_id: 't', content: [image('image/gif', JPEG)] }));
    expect(err.param).toBe(`${BLOCK}.content[0].source.data`);
    expect(err.message).toBe(`Invalid '${BLOCK}.content[0].source.data': the data is not a image/gif file`);
  });

  test('a tool_use block inside a tool_result is refused', () => {
    const err = rejection(messagesBody, withBlocks({ type: 'tool_result', tool_use_id: 't', content: [{ type: 'tool_use', id: 'x', name: 'f', input: {} }] }));
    expect(err.param).toBe(`${BLOCK}.content[0].type`);
    expect(err.message).toBe(`Invalid '${BLOCK}.content[0].type': tool_result content blocks must be text, image, document or search_result`);
  });

  test('the first problem is the one reported (the second block here)', () => {
    const err = rejection(messagesBody, base({ messages: [{ role: 'user', content: [{ type: 'text', text: 'ok' }, image('image/png', JPEG)] }] }));
    expect(err.param).toBe('messages[0].content[1].source.data');
  });
});

describe('chatTextBody', () => {
  const chat = (extra: Json = {}): Json => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello' }], ...extra });

  test('every OpenAI role, string and part content, and provider fields passing through', () => {
    const body = chat({
      messages: [
        { role: 'system', content: 'S' },
        { role: 'developer', content: 'D' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x' },
            { type: 'image_url', image_url: { url: 'https://i.test/a.png' } },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: '42' },
        { role: 'function', name: 'f', content: '42' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
      response_format: { type: 'json_object' },
      reasoning_effort: 'low',
    });
    expect(parseOrThrow(chatTextBody, body)).toEqual(body);
  });

  test.each<[string, Json]>([
    ['temperature 2 (the OpenAI range)', { temperature: 2 }],
    ['n 128', { n: 128 }],
    ['stream with stream_options', { stream: true, stream_options: { include_usage: true } }],
    ['stream false with stream_options null', { stream: false, stream_options: null }],
    ['four stop sequences', { stop: ['a', 'b', 'c', 'd'] }],
    ['null for every optional number', { temperature: null, top_p: null, n: null, max_tokens: null, presence_penalty: null }],
    ['logit_bias at the bounds', { logit_bias: { '1': -100, '2': 100 } }],
  ])('accepted: %s', (_what, extra) => {
    expect(() => parseOrThrow(chatTextBody, chat(extra))).not.toThrow();
  });

  test.each<[string, Json, string, string]>([
    ['temperature above 2', { temperature: 2.01 }, 'temperature', "Invalid 'temperature': Too big: expected number to be <=2"],
    ['temperature below 0', { temperature: -1 }, 'temperature', "Invalid 'temperature': Too small: expected number to be >=0"],
    ['top_p above 1', { top_p: 1.1 }, 'top_p', "Invalid 'top_p': Too big: expected number to be <=1"],
    ['n 0', { n: 0 }, 'n', "Invalid 'n': Too small: expected number to be >=1"],
    ['n 129', { n: 129 }, 'n', "Invalid 'n': Too big: expected number to be <=128"],
    ['five stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', "Invalid 'stop': at most 4 stop sequences"],
    ['presence_penalty above 2', { presence_penalty: 2.5 }, 'presence_penalty', "Invalid 'presence_penalty': Too big: expected number to be <=2"],
    ['frequency_penalty below -2', { frequency_penalty: -3 }, 'frequency_penalty', "Invalid 'frequency_penalty': Too small: expected number to be >=-2"],
    ['a logit_bias value above 100', { logit_bias: { '7': 150 } }, 'logit_bias.7', "Invalid 'logit_bias.7': Too big: expected number to be <=100"],
    ['max_tokens 0', { max_tokens: 0 }, 'max_tokens', "Invalid 'max_tokens': Too small: expected number to be >=1"],
    ['max_completion_tokens 0', { max_completion_tokens: 0 }, 'max_completion_tokens', "Invalid 'max_completion_tokens': Too small: expected number to be >=1"],
    [
      'stream_options without stream',
      { stream_options: { include_usage: true } },
      'stream_options',
      "Invalid 'stream_options': stream_options is only allowed when stream is true",
    ],
    [
      'stream_options with stream false',
      { stream: false, stream_options: { include_usage: true } },
      'stream_options',
      "Invalid 'stream_options': stream_options is only allowed when stream is true",
    ],
    ['no messages', { messages: [] }, 'messages', "Invalid 'messages': messages must not be empty"],
    ['no model', { model: undefined }, 'model', "Missing required parameter: 'model'."],
    [
      'an unknown role',
      { messages: [{ role: 'bot', content: 'x' }] },
      'messages[0].role',
      `Invalid 'messages[0].role': Invalid option: expected one of "system"|"developer"|"user"|"assistant"|"tool"|"function"`,
    ],
    [
      'a content part without a type',
      { messages: [{ role: 'user', content: [{ text: 'x' }] }] },
      'messages[0].content[0].type',
      "Missing required parameter: 'messages[0].content[0].type'.",
    ],
  ])('refused: %s', (_what, extra, param, message) => {
    const err = rejection(chatTextBody, chat(extra));
    expect(err.param).toBe(param);
    expect(err.message).toBe(message);
  });

  test('a logit_bias key that is not a token id names the key', () => {
    expect(rejection(chatTextBody, chat({ logit_bias: { hello: 1 } })).param).toBe('logit_bias.hello');
  });
});
