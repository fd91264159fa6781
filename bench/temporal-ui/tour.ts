import { captureTemporalUi, type Shot, type ShotName } from './capture';
import { findChromium } from './chromium';
import { GatewayClient } from './gateway-client';
import { createUiScenario, type UiScenario } from './scenario';

export interface TourOptions {
  apiUrl: string;
  adminToken: string;
  uiUrl: string;
  namespace: string;
  outDir: string;
  /** A chromium binary; `chromium` on PATH when unset. */
  chromiumPath?: string;
  log?: (line: string) => void;
}

export interface TourResult {
  scenario: UiScenario;
  shots: Record<ShotName, Shot>;
}

/**
 * The whole tour on a running gateway: keys and tasks made through its API, then the Temporal
 * UI's pages on them photographed; the task left running for the pictures is cancelled after.
 * `npm run screenshot:temporal-ui` and test/e2e/temporal-ui.test.ts both run this.
 */
export async function runTemporalUiTour(opts: TourOptions): Promise<TourResult> {
  const log = opts.log ?? (() => undefined);
  const chromiumPath = findChromium(opts.chromiumPath); // before any task is made: a missing browser fails at once
  const scenario = await createUiScenario(new GatewayClient(opts.apiUrl, opts.adminToken), log);
  try {
    const shots = await captureTemporalUi({ uiUrl: opts.uiUrl, namespace: opts.namespace, scenario, outDir: opts.outDir, chromiumPath, log });
    return { scenario, shots };
  } finally {
    await scenario.cleanup();
  }
}
