/** The workflow bundle's entry: every workflow type the worker registers. */
export { videoTaskWorkflow } from './video-task';
export { characterWorkflow } from './character';
export { webhookDelivery } from './webhook-delivery';
export { backgroundResponseWorkflow } from './background-response';
