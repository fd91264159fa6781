/**
 * `npm run openapi`: writes docs/openapi.json from the code (src/api/openapi). A unit test fails
 * while the committed file differs, so run this after changing a route, a schema or a view.
 */
import fs from 'node:fs';
import { OPENAPI_DOCS_FILE, openApiDocsPath, openApiDocsText } from '../src/api/openapi/docs-file';

const text = openApiDocsText();
const file = openApiDocsPath();
const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
if (before === text) {
  console.log(`${OPENAPI_DOCS_FILE} is up to date`);
} else {
  fs.writeFileSync(file, text);
  console.log(`${OPENAPI_DOCS_FILE} written (${Math.round(text.length / 1024)} KiB)`);
}
