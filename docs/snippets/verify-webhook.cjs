const crypto = require('node:crypto');

/**
 * Verifies a completion webhook from the gateway (Standard Webhooks): the raw body exactly as
 * received, the request's headers (lower-case names), and the key's whsec_ secret. Returns the
 * parsed event, or throws. Deduplicate by headers['webhook-id'] (the same on every retry).
 */
function verifyWebhook(secret, headers, rawBody, now = Date.now()) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) throw new Error('missing webhook headers');
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - Number(timestamp)) > 5 * 60) {
    throw new Error('webhook timestamp too old or in the future');
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest();
  const valid = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
  if (!valid) throw new Error('no valid webhook signature');
  return JSON.parse(rawBody);
}

module.exports = { verifyWebhook };
