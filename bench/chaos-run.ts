/**
 * One chaos run against one stack (chaos-stack.ts): for `seconds`, waves of video tasks and text
 * requests while processes are SIGKILLed at random moments (a seeded schedule) and their
 * supervisor starts them again; then every accepted task is followed to its end and the money
 * is checked. The clients behave as a careful user's would: a create is retried with the same
 * Idempotency-Key until it is answered (a 4xx ends it), a text request is not retried.
 */
import { randomUUID } from 'node:crypto';
import { ADMIN_TOKEN, type ChaosStack } from './chaos-stack';
import { seededRandom } from '../test/support/seeded-random';

export interface ChaosOptions {
  seconds: number;
  seed: number;
  /** Seconds between kills: each gap is drawn from [min, max]. */
  killEvery: [number, number];
  /** Video creates per second, and text requests in flight at once. */
  createsPerSecond: number;
  textClients: number;
  /** The longest a task may take to end after the chaos stopped. */
  settleSeconds: number;
  log: (line: string) => void;
}

export interface KillEvent {
  target: string;
  at: number;
  /** Seconds from the kill to the first create, and the first text answer, that succeeded after it (null: none did). */
  createsBackAfter: number | null;
  textBackAfter: number | null;
}

export interface ChaosReport {
  mode: string;
  seconds: number;
  kills: KillEvent[];
  restarts: number;
  tasks: { accepted: number; completed: number; failed: number; lost: string[]; refusedCreates: number; unansweredCreates: number };
  text: { answered: number; failed: number; refused: number };
  money: {
    charges: number;
    refunds: number;
    /** Task ids charged more than once, and Idempotency-Keys answered with more than one task. */
    doubleCharges: string[];
    /** Tasks charged, not refunded, that no client was ever told of. */
    unknownCharges: string[];
    /** Accepted tasks whose ledger does not match their end (completed: charge only; failed: charge and refund). */
    wrongSettlements: string[];
    auditMismatches: unknown[];
    balance: number;
    spent: number;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function admin<T>(url: string, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', ...init.headers },
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Retries an admin call while the API is down (it is being restarted). */
async function patiently<T>(fn: () => Promise<T>, seconds = 120): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

export async function runChaos(stack: ChaosStack, opts: ChaosOptions): Promise<ChaosReport> {
  const rnd = seededRandom(opts.seed);
  const { url } = stack;
  const issued = await patiently(() =>
    admin<{ id: string; key: string }>(url, '/admin/keys', { method: 'POST', body: JSON.stringify({ name: `chaos-${Date.now()}`, quota: 1_000_000_000_000 }) }),
  );
  const auth = { authorization: `Bearer ${issued.key}` };
  const started = Date.now();
  const stopAt = started + opts.seconds * 1000;
  const createSuccesses: number[] = [];
  const textSuccesses: number[] = [];

  // Tasks: one create every 1/rate s, each retried with its Idempotency-Key until answered.
  const accepted = new Map<string, string>(); // task id -> idempotency key
  const answersOfKey = new Map<string, Set<string>>();
  let refusedCreates = 0;
  let unansweredCreates = 0;
  const creates: Promise<void>[] = [];
  const createOne = async (n: number) => {
    const idempotencyKey = `chaos-${randomUUID()}`;
    const body = JSON.stringify({ model: 'vidgen3-fast', prompt: `chaos task ${n} ${idempotencyKey} [sim:ms=${1000 + Math.floor(rnd() * 3000)}]` });
    for (let attempt = 0; Date.now() < stopAt + opts.settleSeconds * 1000; attempt++) {
      try {
        const res = await fetch(`${url}/v1/video/create`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body,
          signal: AbortSignal.timeout(15_000),
        });
        const answer = (await res.json()) as { id?: string };
        if (res.status === 200 && answer.id) {
          accepted.set(answer.id, idempotencyKey);
          const ids = answersOfKey.get(idempotencyKey) ?? new Set();
          answersOfKey.set(idempotencyKey, ids.add(answer.id));
          createSuccesses.push(Date.now());
          return;
        }
        if (res.status >= 400 && res.status < 500 && res.status !== 409 && res.status !== 429) {
          refusedCreates++;
          opts.log(`create refused: HTTP ${res.status} ${JSON.stringify(answer)}`);
          return;
        }
      } catch {
        // the API is down or cut the connection: retry with the same key
      }
      await sleep(Math.min(2000, 200 * 2 ** Math.min(attempt, 4)));
    }
    unansweredCreates++;
  };

  // Text: clients sending messages (plain and streamed) back to back, never retrying.
  const text = { answered: 0, failed: 0, refused: 0 };
  const textClient = async (c: number) => {
    for (let i = 0; Date.now() < stopAt; i++) {
      const stream = i % 2 === 1;
      try {
        const res = await fetch(`${url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': issued.key, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'cm-haiku-4.5', max_tokens: 64, stream, messages: [{ role: 'user', content: `chaos text ${c}-${i} [sim:delay=20]` }] }),
          signal: AbortSignal.timeout(30_000),
        });
        const body = await res.text();
        if (res.status === 200 && (!stream || body.includes('message_stop'))) {
          text.answered++;
          textSuccesses.push(Date.now());
        } else if (res.status >= 400 && res.status < 500) text.refused++;
        else text.failed++;
      } catch {
        text.failed++;
        await sleep(200);
      }
    }
  };

  // Kills at random moments.
  const kills: { target: string; at: number }[] = [];
  const killer = (async () => {
    for (;;) {
      const [min, max] = opts.killEvery;
      const gap = (min + rnd() * (max - min)) * 1000;
      if (Date.now() + gap >= stopAt) return;
      await sleep(gap);
      const target = stack.targets[Math.floor(rnd() * stack.targets.length)]!;
      opts.log(`t+${((Date.now() - started) / 1000).toFixed(1)} s: SIGKILL ${target.name}`);
      kills.push({ target: target.name, at: Date.now() });
      await target.kill();
    }
  })();

  const texts = Array.from({ length: opts.textClients }, (_, c) => textClient(c));
  for (let n = 0; Date.now() < stopAt; n++) {
    creates.push(createOne(n));
    await sleep(1000 / opts.createsPerSecond);
  }
  await Promise.all([killer, ...texts]);
  await Promise.all(creates);
  opts.log(`chaos over after ${opts.seconds} s: ${accepted.size} tasks accepted; waiting for them to end`);

  // Every accepted task to its end.
  const finals = new Map<string, string>();
  const settleBy = Date.now() + opts.settleSeconds * 1000;
  for (const id of accepted.keys()) {
    while (Date.now() < settleBy) {
      try {
        const res = await fetch(`${url}/v1/video/query?id=${encodeURIComponent(id)}`, { headers: auth, signal: AbortSignal.timeout(10_000) });
        if (res.status === 200) {
          const status = ((await res.json()) as { status: string }).status;
          if (status === 'completed' || status === 'failed') {
            finals.set(id, status);
            break;
          }
        } else if (res.status === 404) {
          finals.set(id, 'missing');
          break;
        }
      } catch {
        // restarting
      }
      await sleep(500);
    }
  }
  // Let the reconciler and the hold sweep finish their work, then read the money.
  await sleep(7000);
  const ledger: { kind: string; ref: string; amount: number }[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await patiently(() =>
      admin<{ data: { kind: string; ref: string; amount: number }[] }>(url, `/admin/keys/${issued.id}/ledger?limit=1000&offset=${offset}`),
    );
    ledger.push(...page.data);
    if (page.data.length < 1000) break;
  }
  const audit = await patiently(() => admin<{ mismatches: unknown[] }>(url, '/admin/audit'));
  const view = await patiently(() => admin<{ balance: number; spent: number }>(url, `/admin/keys/${issued.id}`));

  const chargesOf = new Map<string, number>();
  const refundsOf = new Map<string, number>();
  for (const e of ledger) {
    if (e.kind === 'charge') chargesOf.set(e.ref, (chargesOf.get(e.ref) ?? 0) + 1);
    if (e.kind === 'refund') refundsOf.set(e.ref, (refundsOf.get(e.ref) ?? 0) + 1);
  }
  const doubleCharges = [
    ...[...chargesOf].filter(([, n]) => n > 1).map(([ref]) => ref),
    ...[...answersOfKey].filter(([, ids]) => ids.size > 1).map(([key]) => `idempotency key ${key}`),
  ];
  const wrongSettlements = [...finals]
    .filter(([id, status]) => {
      const charged = chargesOf.get(id) ?? 0;
      const refunded = refundsOf.get(id) ?? 0;
      return status === 'completed' ? charged !== 1 || refunded !== 0 : status === 'failed' ? charged !== 1 || refunded !== 1 : false;
    })
    .map(([id, status]) => `${id} (${status})`);

  const firstAfter = (times: number[], at: number) => {
    const t = times.filter((x) => x >= at).sort((a, b) => a - b)[0];
    return t === undefined ? null : Math.round((t - at) / 100) / 10;
  };
  return {
    mode: stack.mode,
    seconds: opts.seconds,
    kills: kills.map((k) => ({ ...k, createsBackAfter: firstAfter(createSuccesses, k.at), textBackAfter: firstAfter(textSuccesses, k.at) })),
    restarts: stack.restarts(),
    tasks: {
      accepted: accepted.size,
      completed: [...finals.values()].filter((s) => s === 'completed').length,
      failed: [...finals.values()].filter((s) => s === 'failed').length,
      lost: [...accepted.keys()].filter((id) => finals.get(id) !== 'completed' && finals.get(id) !== 'failed'),
      refusedCreates,
      unansweredCreates,
    },
    text,
    money: {
      charges: [...chargesOf.values()].reduce((a, b) => a + b, 0),
      refunds: [...refundsOf.values()].reduce((a, b) => a + b, 0),
      doubleCharges,
      // A create answered 503 may leave a charge the reconciler refunds later: that one is settled, not unknown.
      unknownCharges: [...chargesOf.keys()].filter((ref) => !accepted.has(ref) && !refundsOf.has(ref)),
      wrongSettlements,
      auditMismatches: audit.mismatches,
      balance: view.balance,
      spent: view.spent,
    },
  };
}

/** The run's verdict: what must never happen, whatever was killed when. */
export function chaosProblems(report: ChaosReport): string[] {
  const problems: string[] = [];
  if (report.tasks.lost.length > 0) problems.push(`${report.tasks.lost.length} accepted task(s) lost: ${report.tasks.lost.slice(0, 5).join(', ')}`);
  if (report.tasks.unansweredCreates > 0) problems.push(`${report.tasks.unansweredCreates} create(s) never answered after the chaos stopped`);
  if (report.money.doubleCharges.length > 0) problems.push(`double charges: ${report.money.doubleCharges.slice(0, 5).join(', ')}`);
  if (report.money.unknownCharges.length > 0) problems.push(`charges no client was told of: ${report.money.unknownCharges.slice(0, 5).join(', ')}`);
  if (report.money.wrongSettlements.length > 0) problems.push(`tasks settled wrongly: ${report.money.wrongSettlements.slice(0, 5).join(', ')}`);
  if (report.money.auditMismatches.length > 0) problems.push(`ledger audit: ${JSON.stringify(report.money.auditMismatches.slice(0, 3))}`);
  if (report.money.balance < 0) problems.push(`balance below zero: ${report.money.balance}`);
  return problems;
}

export function formatReport(r: ChaosReport): string {
  const lines = [
    `chaos, ${r.mode}, ${r.seconds} s: ${r.kills.length} kills, ${r.restarts} supervisor restarts`,
    `  tasks     accepted ${r.tasks.accepted}, completed ${r.tasks.completed}, failed ${r.tasks.failed}, lost ${r.tasks.lost.length}; creates refused ${r.tasks.refusedCreates}, never answered ${r.tasks.unansweredCreates}`,
    `  text      answered ${r.text.answered}, failed ${r.text.failed} (cut by a kill), refused ${r.text.refused}`,
    `  money     charges ${r.money.charges}, refunds ${r.money.refunds}, double charges ${r.money.doubleCharges.length}, unknown charges ${r.money.unknownCharges.length}, wrong settlements ${r.money.wrongSettlements.length}, audit mismatches ${r.money.auditMismatches.length}; spent ${r.money.spent}, balance ${r.money.balance}`,
    '  kills     target                      creates back after   text back after',
    ...r.kills.map(
      (k) => `            ${k.target.padEnd(28)}${String(k.createsBackAfter ?? '-').padStart(8)} s${String(k.textBackAfter ?? '-').padStart(16)} s`,
    ),
  ];
  return lines.join('\n');
}
