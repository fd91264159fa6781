import type { Config } from '../../config/env';

/** The Temporal Web UI page of a task's workflow (the workflow id is the task id), or null without TEMPORAL_UI_URL. */
export function temporalWorkflowUrl(config: Config, workflowId: string): string | null {
  if (!config.temporalUiUrl) return null;
  return `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.env.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}
