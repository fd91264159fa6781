/**
 * Text models: which endpoint serves which model (spec 1, 4.11). The `cm` family is native
 * (POST /v1/messages only); every other text model is served by whatever OpenAI-compatible
 * channel declares it, on POST /v1/chat/completions. A few models exist only behind the
 * Responses API: POST /v1/responses serves them (and any model an `openai-responses` channel
 * lists), and the other two endpoints refuse them with a pointer there.
 */
export const NATIVE_TEXT_MODELS = ['cm-opus-4-5-20251101', 'cm-sonnet-4.5', 'cm-haiku-4.5'] as const;
export type NativeTextModel = (typeof NATIVE_TEXT_MODELS)[number];

export function isNativeTextModel(model: string): model is NativeTextModel {
  return (NATIVE_TEXT_MODELS as readonly string[]).includes(model);
}

/** Upstream names of the native models on the real provider (channels may override them). */
export const DEFAULT_NATIVE_UPSTREAM_MODELS: Record<NativeTextModel, string> = {
  'cm-opus-4-5-20251101': 'claude-opus-4-5-20251101',
  'cm-sonnet-4.5': 'claude-sonnet-4-5',
  'cm-haiku-4.5': 'claude-haiku-4-5',
};

/** Reachable only through the Responses API (spec 1): served on POST /v1/responses, refused on messages and chat. */
export const RESPONSES_ONLY_MODELS = [
  'o1-pro',
  'o3-pro',
  'o3-deep-research',
  'o4-mini-deep-research',
  'gpt-5-pro',
  'gpt-5-codex',
  'codex-mini-latest',
  'computer-use-preview',
] as const;

/** A responses-only model, or one of its dated snapshots (o3-pro-2025-06-10). */
const RESPONSES_ONLY = new RegExp(`^(${RESPONSES_ONLY_MODELS.map((m) => m.replace(/[.-]/g, '\\$&')).join('|')})(-\\d{4}-\\d{2}-\\d{2})?$`);

export function isResponsesOnlyModel(model: string): boolean {
  return RESPONSES_ONLY.test(model);
}

/** What the OpenAI-compatible shortcut (OPENAI_API_KEY) and the demo serve unless told otherwise. */
export const DEFAULT_OPENAI_TEXT_MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1-mini', 'gpt-4.1'] as const;

export const RESPONSES_API_HINT = 'it is served only by the Responses API: call POST /v1/responses of this gateway (the OpenAI SDK: client.responses.create)';
