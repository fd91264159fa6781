import { channelsFor, type VideoChannel } from '../config/channels';
import { InvalidRequestError } from './errors';

/** A model no configured channel serves is refused at create, instead of becoming a task that fails. */
export function channelCheck(channels: readonly VideoChannel[]): (model: string) => void {
  return (model) => {
    if (channelsFor(channels, model).length === 0) {
      throw new InvalidRequestError(`The model '${model}' is not available on this gateway: no upstream channel serves it.`, 'model', 'model_not_available');
    }
  };
}
