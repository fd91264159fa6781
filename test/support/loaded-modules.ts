/**
 * Preloaded into a gateway process under test (NODE_OPTIONS=--require <this, compiled>): writes
 * the modules the process has loaded (require.cache's file names) to LOADED_MODULES_FILE every
 * second and when it exits, so a test can tell what a real run loaded.
 */
import fs from 'node:fs';

const file = process.env.LOADED_MODULES_FILE;
if (file) {
  const write = () => fs.writeFileSync(file, JSON.stringify(Object.keys(require.cache)));
  setInterval(write, 1000).unref();
  process.on('exit', write);
}
