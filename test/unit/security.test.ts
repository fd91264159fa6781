import { isTaskIdShape, newRemixTaskId, newTaskId, newVideoObjectId } from '../../src/catalog/task-id';
import { isPrivateAddress } from '../../src/net/url-guard';
import { UrlSigner } from '../../src/files/signed-url';

test.each([
  ['127.0.0.1', true],
  ['10.1.2.3', true],
  ['172.20.0.1', true],
  ['192.168.1.1', true],
  ['169.254.169.254', true],
  ['100.64.0.1', true],
  ['0.0.0.0', true],
  ['::1', true],
  ['fd00::1', true],
  ['fe80::1', true],
  ['::ffff:127.0.0.1', true],
  ['::ffff:7f00:1', true],
  // IPv4 inside IPv6 in every other form: compatible, translated (SIIT), NAT64, 6to4, Teredo.
  ['::127.0.0.1', true],
  ['::ffff:0:7f00:1', true],
  ['64:ff9b::a9fe:a9fe', true],
  ['64:ff9b:1::a00:1', true],
  ['2002:7f00:1::1', true],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true],
  ['fec0::1', true],
  ['100::1', true],
  ['192.88.99.1', true],
  ['8.8.8.8', false],
  ['1.1.1.1', false],
  ['2606:4700::1111', false],
  ['::ffff:8.8.8.8', false],
  ['not-an-ip', true],
])('isPrivateAddress(%s) = %s', (address, expected) => {
  expect(isPrivateAddress(address)).toBe(expected);
});

// The fetcher of user URLs (deadline, size cap, redirects, temporary files): url-guard.test.ts.

describe('signed links', () => {
  const signer = new UrlSigner('secret', 'http://gw', 60);
  const parts = (url: string) => {
    const u = new URL(url);
    return {
      key: decodeURIComponent(u.pathname.slice('/files/'.length)),
      expires: u.searchParams.get('expires') ?? '',
      sig: u.searchParams.get('signature') ?? '',
    };
  };
  test('a fresh link verifies; another key, a changed expiry or another secret does not', () => {
    const p = parts(signer.sign('videos/a/b.mp4', 1_000_000));
    expect(p.key).toBe('videos/a/b.mp4');
    expect(signer.verify(p.key, p.expires, p.sig, 1_000_000)).toBe('ok');
    expect(signer.verify('videos/a/c.mp4', p.expires, p.sig, 1_000_000)).toBe('invalid');
    expect(signer.verify(p.key, String(Number(p.expires) + 1), p.sig, 1_000_000)).toBe('invalid');
    expect(new UrlSigner('other', 'http://gw', 60).verify(p.key, p.expires, p.sig, 1_000_000)).toBe('invalid');
    expect(signer.verify(p.key, undefined, p.sig)).toBe('invalid');
  });
  test('an old link is expired', () => {
    const p = parts(signer.sign('videos/x.mp4', 1_000_000));
    expect(signer.verify(p.key, p.expires, p.sig, 1_000_000 + 61_000)).toBe('expired');
  });
});

test('task ids have the spec shapes and are recognised', () => {
  const id = newTaskId('vidgen3.1-fast', 1795335070122);
  expect(id).toMatch(/^vidgen3\.1-fast:1795335070122-[a-z0-9]{10}$/);
  expect(newRemixTaskId('motion-2')).toMatch(/^motion-2:remix-\d+-[a-z0-9]{10}$/);
  expect(newVideoObjectId()).toMatch(/^video_[0-9a-f-]{36}$/);
  for (const good of [id, newRemixTaskId('motion-2'), newVideoObjectId()]) expect(isTaskIdShape(good)).toBe(true);
  for (const bad of ['', '../x', 'vidgen3', 'vidgen3:abc-def', 'a'.repeat(300)]) expect(isTaskIdShape(bad)).toBe(false);
  expect(newTaskId('motion-2')).not.toBe(newTaskId('motion-2'));
});
