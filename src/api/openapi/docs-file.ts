import path from 'node:path';
import { projectRoot } from '../../config/paths';
import { buildOpenApiDocument } from './document';

/** The committed copy of the document, for readers without a running gateway. */
export const OPENAPI_DOCS_FILE = 'docs/openapi.json';

/** The server the committed copy names: a gateway on its default port (PUBLIC_BASE_URL unset). */
const DOCS_SERVER_URL = 'http://localhost:8080';

export function openApiDocsPath(): string {
  return path.join(projectRoot(), OPENAPI_DOCS_FILE);
}

/** What docs/openapi.json must hold, byte for byte. */
export function openApiDocsText(): string {
  return `${JSON.stringify(buildOpenApiDocument(DOCS_SERVER_URL), null, 2)}\n`;
}
