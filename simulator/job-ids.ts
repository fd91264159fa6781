/**
 * Job and character ids that carry their own state. A job's status and progress are pure
 * functions of the clock, its creation time, its duration and its outcome (jobs.ts); this
 * packs those, and what the protocol answers with (model, seconds, size, ...), into the id, so
 * a simulator started again after a crash (kill -9 of `npm start` included) answers polls,
 * downloads and remixes of the jobs an earlier process created, with the same outcome and the
 * same progress timeline, and accepts its characters. Nothing is written anywhere.
 *
 * Layout, most significant bits first: the creation time in ms (so ids sort by time, as
 * OpenAI's do), a layout version, the fields, random bits, and a 32-bit check (HMAC-SHA256
 * under a fixed key: not a secret, only a guard that makes a made-up or mistyped id unknown
 * instead of a job). Shapes stay those of the providers: `video_` + 32 hex, `char_` + 32 hex,
 * and a Veo operation id of 31 lowercase letters and digits.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Outcome } from './jobs';

/** The longest job an id can describe: 2^27 - 1 ms, about 37 h (jobs are capped at 24 h). */
export const MAX_ID_DURATION_MS = 2 ** 27 - 1;

const VERSION = 1;
const CHECK_KEY = 'provider-simulator/job-ids/v1';
const OUTCOMES: readonly Outcome[] = ['success', 'fail', 'filtered'];

/** An OpenAI-style video: its model, seconds and size as indexes into the module's tables. */
export interface OpenAiVideoFacts {
  createdAt: number;
  durationMs: number;
  outcome: Outcome;
  model: number;
  seconds: number;
  size: number;
}

/** A Veo operation. The model is any `veo-*` name, so only a 16-bit hash of it fits. */
export interface VeoOperationFacts {
  createdAt: number;
  durationMs: number;
  outcome: Outcome;
  sampleCount: number;
  /** 0: 16:9, 1: 9:16. */
  aspect: number;
  /** parameters.durationSeconds (4..8), or null when the request had none. */
  durationSeconds: number | null;
  modelHash: number;
}

export interface CharacterFacts {
  createdAt: number;
  selfPortrait: boolean;
}

type Field = readonly [value: number | bigint, bits: number];

const OPENAI_BITS = [42, 2, 27, 2, 2, 3, 3, 15] as const; // + 32 check = 128
const VEO_BITS = [42, 2, 27, 2, 2, 1, 3, 16, 33] as const; // + 32 check = 160
const CHARACTER_BITS = [42, 2, 1, 51] as const; // + 32 check = 128
const VEO_ID_LENGTH = 31; // 160 bits in base 36

export function openAiVideoId(f: OpenAiVideoFacts): string {
  const payload = pack([
    [f.createdAt, 42],
    [VERSION, 2],
    [duration(f.durationMs), 27],
    [OUTCOMES.indexOf(f.outcome), 2],
    [f.model, 2],
    [f.seconds, 3],
    [f.size, 3],
    [random(15), 15],
  ]);
  return `video_${withCheck('video', payload).toString(16).padStart(32, '0')}`;
}

export function readOpenAiVideoId(id: string): OpenAiVideoFacts | null {
  const m = /^video_([0-9a-f]{32})$/.exec(id);
  const fields = m?.[1] ? unpack('video', BigInt(`0x${m[1]}`), OPENAI_BITS) : null;
  if (!fields) return null;
  const [createdAt, , durationMs, outcome, model, seconds, size] = fields;
  const o = OUTCOMES[outcome ?? -1];
  if (o === undefined) return null;
  return { createdAt: createdAt ?? 0, durationMs: durationMs ?? 0, outcome: o, model: model ?? 0, seconds: seconds ?? 0, size: size ?? 0 };
}

export function veoOperationId(f: VeoOperationFacts): string {
  const payload = pack([
    [f.createdAt, 42],
    [VERSION, 2],
    [duration(f.durationMs), 27],
    [OUTCOMES.indexOf(f.outcome), 2],
    [f.sampleCount - 1, 2],
    [f.aspect, 1],
    [f.durationSeconds === null ? 0 : f.durationSeconds - 3, 3],
    [f.modelHash, 16],
    [random(33), 33],
  ]);
  return withCheck('veo', payload).toString(36).padStart(VEO_ID_LENGTH, '0');
}

export function readVeoOperationId(id: string): VeoOperationFacts | null {
  if (!new RegExp(`^[0-9a-z]{${VEO_ID_LENGTH}}$`).test(id)) return null;
  const fields = unpack('veo', base36(id), VEO_BITS);
  if (!fields) return null;
  const [createdAt, , durationMs, outcome, samples, aspect, seconds, modelHash] = fields;
  const o = OUTCOMES[outcome ?? -1];
  if (o === undefined) return null;
  return {
    createdAt: createdAt ?? 0,
    durationMs: durationMs ?? 0,
    outcome: o,
    sampleCount: (samples ?? 0) + 1,
    aspect: aspect ?? 0,
    durationSeconds: seconds ? seconds + 3 : null,
    modelHash: modelHash ?? 0,
  };
}

export function characterId(f: CharacterFacts): string {
  const payload = pack([
    [f.createdAt, 42],
    [VERSION, 2],
    [f.selfPortrait ? 1 : 0, 1],
    [random(51), 51],
  ]);
  return `char_${withCheck('char', payload).toString(16).padStart(32, '0')}`;
}

export function readCharacterId(id: string): CharacterFacts | null {
  const m = /^char_([0-9a-f]{32})$/.exec(id);
  const fields = m?.[1] ? unpack('char', BigInt(`0x${m[1]}`), CHARACTER_BITS) : null;
  if (!fields) return null;
  return { createdAt: fields[0] ?? 0, selfPortrait: fields[2] === 1 };
}

/** 16 bits of the model's name: a Veo operation polled under another model stays unknown. */
export function modelHash(model: string): number {
  return createHmac('sha256', CHECK_KEY).update(`model:${model}`).digest().readUInt16BE(0);
}

function duration(ms: number): number {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_ID_DURATION_MS) throw new RangeError(`job duration ${ms} ms does not fit a job id`);
  return ms;
}

function random(bits: number): bigint {
  return randomBytes(8).readBigUInt64BE() & ((1n << BigInt(bits)) - 1n);
}

function pack(fields: readonly Field[]): { value: bigint; bits: number } {
  let value = 0n;
  let bits = 0;
  for (const [v, width] of fields) {
    const n = BigInt(v);
    if (n < 0n || n >= 1n << BigInt(width)) throw new RangeError(`${n} does not fit ${width} bits of a job id`);
    value = (value << BigInt(width)) | n;
    bits += width;
  }
  return { value, bits };
}

function check(kind: string, payload: bigint): bigint {
  return BigInt(
    createHmac('sha256', CHECK_KEY)
      .update(`${kind}:${payload.toString(16)}`)
      .digest()
      .readUInt32BE(0),
  );
}

function withCheck(kind: string, payload: { value: bigint }): bigint {
  return (payload.value << 32n) | check(kind, payload.value);
}

/** The fields of an id whose check matches and whose layout version is known, else null. */
function unpack(kind: string, id: bigint, widths: readonly number[]): number[] | null {
  const payload = id >> 32n;
  if ((id & 0xffffffffn) !== check(kind, payload)) return null;
  const total = widths.reduce((a, b) => a + b, 0);
  if (payload >> BigInt(total) !== 0n) return null;
  const out: number[] = [];
  let shift = total;
  for (const width of widths) {
    shift -= width;
    out.push(Number((payload >> BigInt(shift)) & ((1n << BigInt(width)) - 1n)));
  }
  return out[1] === VERSION ? out : null;
}

function base36(text: string): bigint {
  let n = 0n;
  for (const ch of text) n = n * 36n + BigInt(parseInt(ch, 36));
  return n;
}

/**
 * A Responses API response (`resp_` + 48 hex, OpenAI's shape): what its status timeline and its
 * usage need, so a restarted simulator still answers a background response's polls with the
 * same status and the same billable usage (its text, which the id cannot hold, is then generic).
 */
export interface ResponseFacts {
  createdAt: number;
  /** 0 for a foreground response (complete when answered). */
  durationMs: number;
  failed: boolean;
  background: boolean;
  reasoning: boolean;
  /** `store: false` responses are not retrievable, by this process or a later one. */
  stored: boolean;
  inputTokens: number;
  textTokens: number;
  reasoningTokens: number;
}

const RESPONSE_BITS = [42, 2, 27, 1, 1, 1, 1, 20, 20, 16, 29] as const; // + 32 check = 192

export function responseId(f: ResponseFacts): string {
  const payload = pack([
    [f.createdAt, 42],
    [VERSION, 2],
    [duration(f.durationMs), 27],
    [f.failed ? 1 : 0, 1],
    [f.background ? 1 : 0, 1],
    [f.reasoning ? 1 : 0, 1],
    [f.stored ? 1 : 0, 1],
    [Math.min(f.inputTokens, 2 ** 20 - 1), 20],
    [Math.min(f.textTokens, 2 ** 20 - 1), 20],
    [Math.min(f.reasoningTokens, 2 ** 16 - 1), 16],
    [random(29), 29],
  ]);
  return `resp_${withCheck('resp', payload).toString(16).padStart(48, '0')}`;
}

export function readResponseId(id: string): ResponseFacts | null {
  const m = /^resp_([0-9a-f]{48})$/.exec(id);
  const fields = m?.[1] ? unpack('resp', BigInt(`0x${m[1]}`), RESPONSE_BITS) : null;
  if (!fields) return null;
  const [createdAt, , durationMs, failed, background, reasoning, stored, inputTokens, textTokens, reasoningTokens] = fields;
  return {
    createdAt: createdAt ?? 0,
    durationMs: durationMs ?? 0,
    failed: failed === 1,
    background: background === 1,
    reasoning: reasoning === 1,
    stored: stored === 1,
    inputTokens: inputTokens ?? 0,
    textTokens: textTokens ?? 0,
    reasoningTokens: reasoningTokens ?? 0,
  };
}
