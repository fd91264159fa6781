/**
 * The peer gateways that bench:peers measures against this one, installed outside the
 * product's dependencies under .tools/peers/ (gitignored), at pinned versions:
 *
 *   portkey   npm @portkey-ai/gateway into .tools/peers/portkey (a package.json of its own);
 *   litellm   PyPI litellm[proxy] into the virtual environment .tools/peers/litellm-venv.
 *
 * Each install is skipped when a stamp file records the same pins; a failed one (no network,
 * no python3) is reported with the reason and the tail of its log, never thrown, so the bench
 * goes on with the peers it has. Standalone, to install ahead of a run:
 *
 *   node dist/bench/peers-install.js [--peers litellm,portkey]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/config/paths';
import { listOf } from './text-load';

export const PEERS = ['portkey', 'litellm'] as const;
export type PeerName = (typeof PEERS)[number];

/** The newest release on the npm registry. */
export const PORTKEY_VERSION = '1.15.2';
/**
 * @portkey-ai/gateway asks for @hono/node-server ^1.3.3, which resolves to 1.19.x. Since 1.14,
 * node-server's lightweight Response hands out the upstream fetch's own Headers object, whose
 * guard is "immutable", and Portkey appends its x-portkey-* headers to it: every streamed
 * answer fails with `TypeError: immutable` ("Something went wrong", Portkey-AI/gateway#1389,
 * which names 1.14.2 as the last good version; 1.14.2 fails the same way here). 1.13.8 copies
 * the headers into a fresh Response and streams.
 */
export const PORTKEY_HONO_NODE_SERVER = '1.13.8';
/**
 * The newest litellm whose `proxy` extra resolves from the package index this project reaches:
 * 1.103.8 and later (1.106.x, 1.109.x included) require certifi>=2026.10.19, which it does
 * not have.
 */
export const LITELLM_VERSION = '1.103.7';

const INSTALL_TIMEOUT_MS = 15 * 60_000;

export interface Installed {
  ok: true;
  peer: PeerName;
  /** What was installed, for the report: "@portkey-ai/gateway 1.15.2 (...)". */
  version: string;
  /** The program and arguments that start it; the bench appends its port. */
  command: string;
  args: string[];
  cwd: string;
  /** Seconds the install took in this run; 0 when it was already there. */
  seconds: number;
  cached: boolean;
}

export interface NotInstalled {
  ok: false;
  peer: PeerName;
  reason: string;
}

export type InstallResult = Installed | NotInstalled;

export const peersDir = (root = projectRoot()): string => path.join(root, '.tools', 'peers');

/** Runs a command with its output appended to `log`; resolves with its exit code (or the error that kept it from running). */
function run(command: string, args: string[], cwd: string, log: string, env: NodeJS.ProcessEnv = process.env): Promise<number | string> {
  return new Promise((resolve) => {
    fs.appendFileSync(log, `\n$ ${command} ${args.join(' ')}\n`);
    const fd = fs.openSync(log, 'a');
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve(err.message);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(signal ? `killed by ${signal}${signal === 'SIGKILL' ? ` after ${INSTALL_TIMEOUT_MS / 60_000} min` : ''}` : (code ?? -1));
    });
  });
}

/** What a log says went wrong, for a failure message: npm's and pip's error lines, else its last lines. */
function tail(log: string, lines = 3): string {
  try {
    const all = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !/^WARNING: Location .* is ignored/.test(l) && !/Unknown user config/.test(l));
    const errors = all.filter((l) => /^npm error (code|errno|network|notarget|404)|^ERROR:/.test(l));
    return (errors.length > 0 ? errors.slice(0, lines) : all.slice(-lines)).map((l) => l.slice(0, 300)).join(' | ');
  } catch {
    return '';
  }
}

const failed = (peer: PeerName, what: string, outcome: number | string, log: string): NotInstalled => ({
  ok: false,
  peer,
  reason: `${what} ${typeof outcome === 'number' ? `exited with code ${outcome}` : `failed: ${outcome}`} (log ${log}): ${tail(log)}`,
});

const stampOf = (dir: string) => path.join(dir, '.bench-peers-installed');
const readStamp = (dir: string): string | undefined => {
  try {
    return fs.readFileSync(stampOf(dir), 'utf8');
  } catch {
    return undefined;
  }
};

export async function installPortkey(root = projectRoot()): Promise<InstallResult> {
  const dir = path.join(peersDir(root), 'portkey');
  const entry = path.join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  const manifest = {
    name: 'bench-peer-portkey',
    private: true,
    dependencies: { '@portkey-ai/gateway': PORTKEY_VERSION },
    overrides: { '@hono/node-server': PORTKEY_HONO_NODE_SERVER },
  };
  const stamp = JSON.stringify(manifest);
  const version = `@portkey-ai/gateway ${PORTKEY_VERSION} (@hono/node-server ${PORTKEY_HONO_NODE_SERVER})`;
  const installed = (seconds: number, cached: boolean): Installed => ({
    ok: true,
    peer: 'portkey',
    version,
    command: process.execPath,
    args: [entry, '--headless'],
    cwd: dir,
    seconds,
    cached,
  });
  if (readStamp(dir) === stamp && fs.existsSync(entry)) return installed(0, true);

  const started = Date.now();
  fs.mkdirSync(dir, { recursive: true });
  fs.rmSync(stampOf(dir), { force: true });
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const log = path.join(dir, 'install.log');
  fs.writeFileSync(log, '');
  // --ignore-scripts: the package's only script is `postinstall: patch-package`, and the
  // published package ships no patches; npm 11 would hold it back anyway and warn.
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const code = await run(npm, ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=dev', '--fetch-retries=1', '--fetch-timeout=60000'], dir, log);
  if (code !== 0) return failed('portkey', 'npm install', code, log);
  if (!fs.existsSync(entry)) return { ok: false, peer: 'portkey', reason: `npm install succeeded but ${entry} is missing (log ${log})` };
  fs.writeFileSync(stampOf(dir), stamp);
  return installed((Date.now() - started) / 1000, false);
}

export async function installLitellm(root = projectRoot()): Promise<InstallResult> {
  const venv = path.join(peersDir(root), 'litellm-venv');
  const bin = path.join(venv, 'bin');
  const litellm = path.join(bin, 'litellm');
  const spec = `litellm[proxy]==${LITELLM_VERSION}`;
  const version = `litellm[proxy] ${LITELLM_VERSION}`;
  const installed = (seconds: number, cached: boolean): Installed => ({
    ok: true,
    peer: 'litellm',
    version,
    command: litellm,
    args: [],
    cwd: venv,
    seconds,
    cached,
  });
  if (readStamp(venv) === spec && fs.existsSync(litellm)) return installed(0, true);

  const started = Date.now();
  fs.mkdirSync(peersDir(root), { recursive: true });
  const log = path.join(peersDir(root), 'litellm-install.log');
  fs.writeFileSync(log, '');
  if (!fs.existsSync(path.join(bin, 'python'))) {
    const python = process.env.PYTHON ?? 'python3';
    const code = await run(python, ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'], root, log);
    if (code !== 0)
      return { ok: false, peer: 'litellm', reason: `${python} 3.9 or newer is needed for litellm (${typeof code === 'number' ? 'too old' : code})` };
    const made = await run(python, ['-m', 'venv', venv], root, log);
    if (made !== 0) return failed('litellm', `${python} -m venv`, made, log);
  }
  fs.rmSync(stampOf(venv), { force: true });
  const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  const code = await run(path.join(bin, 'python'), ['-m', 'pip', 'install', '--quiet', '--retries', '2', '--timeout', '60', spec], root, log, env);
  if (code !== 0) return failed('litellm', 'pip install', code, log);
  if (!fs.existsSync(litellm)) return { ok: false, peer: 'litellm', reason: `pip install succeeded but ${litellm} is missing (log ${log})` };
  fs.writeFileSync(stampOf(venv), spec);
  return installed((Date.now() - started) / 1000, false);
}

/** Installs the peers asked for, at once (npm and pip do not compete much). */
export async function installPeers(peers: readonly PeerName[], root = projectRoot()): Promise<Record<PeerName, InstallResult | null>> {
  const [portkey, litellm] = await Promise.all([
    peers.includes('portkey') ? installPortkey(root) : null,
    peers.includes('litellm') ? installLitellm(root) : null,
  ]);
  return { portkey, litellm };
}

/** One line per peer: installed (how long it took) or why not. */
export function describeInstall(result: InstallResult): string {
  if (!result.ok) return `${result.peer}: NOT installed, skipped: ${result.reason}`;
  return `${result.peer}: ${result.version}, ${result.cached ? 'already installed' : `installed in ${result.seconds.toFixed(1)} s`}`;
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--peers');
  const peers = listOf('peers', i >= 0 && argv[i + 1] ? argv[i + 1]! : PEERS.join(','), PEERS);
  void installPeers(peers).then((results) => {
    const done = Object.values(results).filter((r): r is InstallResult => r !== null);
    for (const r of done) console.log(describeInstall(r));
    process.exitCode = done.every((r) => r.ok) ? 0 : 1;
  });
}
