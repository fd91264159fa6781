/** What an upstream client call failed with, checked to be an UpstreamError (the workflow's terms: retryable or rejected). */
import { UpstreamError } from '../../src/providers/http';

export async function upstreamFailure(p: Promise<unknown>): Promise<UpstreamError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof UpstreamError)) throw new Error(`expected an UpstreamError, got ${err === null ? 'success' : String(err)}`);
  return err;
}
