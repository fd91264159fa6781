/** The workflow bundle's entry: every workflow type the worker registers. */
export { videoTaskWorkflow, videoTaskWorkflowV2, videoTaskWorkflowV3 } from './video-task';
export { characterWorkflow } from './character';
export { webhookDelivery } from './webhook-delivery';
export { backgroundResponseWorkflow } from './background-response';
