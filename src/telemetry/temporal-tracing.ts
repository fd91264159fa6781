/**
 * Temporal's own OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry), wired as
 * the gateway uses them: the client's, so that starting a workflow is a span of the request that
 * started it and passes its context on in the workflow's headers; the workflow's (inside the
 * traced workflow bundle: RunWorkflow, StartActivity), whose spans leave the workflow sandbox
 * through the `exporter` sink; and the activities' (RunActivity), under which upstream calls
 * hang. Loaded only when tracing is on.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { ProcessTracing } from './tracing';

/**
 * The module the traced workflow bundle registers as its workflow interceptors
 * (scripts/bundle-workflows.ts); a worker without a pre-built bundle registers it itself.
 */
export const WORKFLOW_TRACING_MODULE = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

export function tracingClientInterceptors(): WorkflowClientInterceptor[] {
  return [new OpenTelemetryWorkflowClientInterceptor()];
}

/** What a traced worker adds to its options (replay workers the same, so that replays run the same code). */
export interface TracedWorkerOptions {
  interceptors: WorkerInterceptors;
  sinks: InjectedSinks<OpenTelemetrySinks>;
}

/** What of a workflow's info its spans carry: which run it is, nothing of what it holds. */
type SpanWorkflowInfo = Pick<WorkflowInfo, 'workflowId' | 'runId' | 'workflowType' | 'taskQueue' | 'namespace' | 'attempt'>;

/**
 * The package's sink copies the whole WorkflowInfo onto every workflow span as attributes: the
 * memo (a task's state, its prompt included) and the search attributes (the owner's key id)
 * among them. This one passes on only the fields above.
 */
function workflowSpanSink(tracing: Pick<ProcessTracing, 'processor' | 'resource'>): InjectedSinks<OpenTelemetrySinks>['exporter'] {
  const exporter = makeWorkflowExporter(tracing.processor, tracing.resource);
  return {
    export: {
      ...exporter.export,
      fn: (info, spans) => {
        const { workflowId, runId, workflowType, taskQueue, namespace, attempt } = info;
        const kept: SpanWorkflowInfo = { workflowId, runId, workflowType, taskQueue, namespace, attempt };
        // The package's function only copies the info's fields onto the spans: the rest is not read.
        return exporter.export.fn(kept as WorkflowInfo, spans);
      },
    },
  };
}

export function tracedWorkerOptions(tracing: Pick<ProcessTracing, 'processor' | 'resource'>): TracedWorkerOptions {
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      // Used only when the worker bundles at start (no dist/workflow-bundle-traced.js).
      workflowModules: [WORKFLOW_TRACING_MODULE],
    },
    // Spans made inside the workflow sandbox, handed to the process's batch processor.
    sinks: { exporter: workflowSpanSink(tracing) },
  };
}
