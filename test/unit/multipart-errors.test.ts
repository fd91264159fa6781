/**
 * The client's error for each form formidable refuses: the limit it passed named, 413 for a
 * limit, 400 for a form that is wrong, the gateway's own failure left to the error middleware.
 */
import { FORM_LIMITS, formError } from '../../src/api/middleware/multipart-body';
import { GatewayError } from '../../src/api/errors';

/** An error as formidable raises it: its code and the HTTP status it suggests. */
const formidable = (code: number, httpCode: number, message = 'formidable says no') => Object.assign(new Error(message), { code, httpCode });

const answer = (err: Error) => {
  if (!(err instanceof GatewayError)) throw new Error(`not a client error: ${err.message}`);
  return { status: err.status, code: err.code, message: err.message };
};

describe('formError', () => {
  test.each([
    ['too many fields', 1007, 413, `The form has more than ${FORM_LIMITS.maxFields} fields.`],
    ['text fields too large', 1006, 413, `The form's text fields exceed ${FORM_LIMITS.maxFieldsBytes} bytes in all.`],
    ['too many files', 1015, 413, `The form has more than ${FORM_LIMITS.maxFiles} files.`],
    ['one file too large', 1016, 413, "The form's files exceed the limit of 2048 bytes (all its files together)."],
    ['the files too large together', 1009, 413, "The form's files exceed the limit of 2048 bytes (all its files together)."],
  ])('%s: 413 request_too_large naming the limit', (_name, code, httpCode, message) => {
    expect(answer(formError(formidable(code, httpCode), 2048))).toEqual({ status: 413, code: 'request_too_large', message });
  });

  test('an empty file: 400 invalid_multipart, not the option name formidable gives', () => {
    expect(answer(formError(formidable(1010, 400, 'options.allowEmptyFiles is false'), 2048))).toEqual({
      status: 400,
      code: 'invalid_multipart',
      message: 'An uploaded file is empty.',
    });
  });

  test("a malformed body: 400 invalid_multipart with the parser's reason", () => {
    expect(answer(formError(formidable(1012, 400, 'bad boundary'), 2048))).toMatchObject({
      status: 400,
      code: 'invalid_multipart',
      message: expect.stringContaining('bad boundary'),
    });
  });

  test("no upload folder is the gateway's failure, not the client's", () => {
    const err = formidable(1018, 500, 'cannot create directory');
    expect(formError(err, 2048)).toBe(err);
  });
});
