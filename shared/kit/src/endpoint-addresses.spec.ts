import assert from 'node:assert/strict';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { checkEndpointUrl, classifyAddress, guardedLookup, refuseLiteralHost, type HostResolver, type TargetPolicy } from './endpoint-addresses.js';

const STRICT: TargetPolicy = { allowPrivateAddresses: false, allowedPrivateHosts: [], requireHttps: true };
const LENIENT: TargetPolicy = { ...STRICT, requireHttps: false };

/** A resolver answering from a table; unknown names fail like getaddrinfo does. */
function resolverOf(table: Record<string, string[]>): HostResolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

const DNS = resolverOf({
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'localhost.example': ['127.0.0.1'],
  'mixed.example': ['93.184.215.14', '10.1.2.3'],
  'metadata.example': ['169.254.169.254'],
  'erp.internal': ['10.20.30.40'],
});

/** `field:code` of each error, for compact assertions. */
async function codes(url: unknown, policy: TargetPolicy = STRICT): Promise<string[]> {
  return (await checkEndpointUrl(url, policy, DNS)).map((error) => `${error.field}:${error.code}`);
}

describe('delivery addresses', () => {
  describe('classifyAddress', () => {
    const cases: Array<[string, string]> = [
      ['93.184.215.14', 'public'],
      ['8.8.8.8', 'public'],
      ['10.0.0.1', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['172.32.0.1', 'public'],
      ['192.168.1.1', 'private'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['169.254.169.254', 'link_local'],
      ['100.64.0.1', 'cgnat'],
      ['100.127.255.255', 'cgnat'],
      ['100.128.0.1', 'public'],
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'reserved'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['240.0.0.1', 'reserved'],
      ['255.255.255.255', 'reserved'],
      ['192.0.0.8', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['198.19.255.255', 'reserved'],
      ['192.0.2.1', 'reserved'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['fe80::1', 'link_local'],
      ['fe80::1%eth0', 'link_local'],
      ['febf::1', 'link_local'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['ff02::1', 'multicast'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:93.184.215.14', 'public'],
      ['64:ff9b::a00:1', 'private'],
      ['64:ff9b::127.0.0.1', 'loopback'],
      ['64:ff9b::8.8.8.8', 'public'],
      ['2002:a9fe:a9fe::1', 'link_local'],
      ['2001:db8::1', 'reserved'],
      ['::127.0.0.1', 'reserved'],
      ['2606:4700:4700::1111', 'public'],
      ['2a00:1450:4001:81c::200e', 'public'],
      ['4000::1', 'reserved'],
      ['not-an-ip', 'reserved'],
    ];
    for (const [ip, kind] of cases) {
      it(`${ip} is ${kind}`, () => assert.equal(classifyAddress(ip), kind));
    }
  });

  describe('checkEndpointUrl', () => {
    it('accepts an https URL whose every address is public', async () => {
      assert.deepEqual(await codes('https://hooks.example.com/merx?tenant=1'), []);
    });

    it('refuses missing, non-string, overlong and malformed URLs without resolving them', async () => {
      const before = DNS.calls.length;
      assert.deepEqual(await codes(undefined), ['url:required']);
      assert.deepEqual(await codes(''), ['url:required']);
      assert.deepEqual(await codes(42), ['url:invalid_type']);
      assert.deepEqual(await codes(`https://hooks.example.com/${'a'.repeat(2048)}`), ['url:too_long']);
      assert.deepEqual(await codes('/relative/path'), ['url:invalid_url']);
      assert.deepEqual(await codes('ftp://hooks.example.com/'), ['url:invalid_url']);
      assert.deepEqual(await codes('https://'), ['url:invalid_url']);
      assert.deepEqual(await codes('https://user:pass@hooks.example.com/'), ['url:credentials_in_url']);
      assert.deepEqual(await codes('https://user@hooks.example.com/'), ['url:credentials_in_url']);
      assert.deepEqual(DNS.calls.length, before);
    });

    it('requires https only when the policy says so', async () => {
      assert.deepEqual(await codes('http://hooks.example.com/'), ['url:https_required']);
      assert.deepEqual(await codes('http://hooks.example.com/', LENIENT), []);
    });

    it('refuses a host resolving to a loopback address, naming the address and its kind', async () => {
      const errors = await checkEndpointUrl('https://localhost.example/hook', STRICT, DNS);
      assert.deepEqual(errors, [
        {
          field: 'url',
          code: 'private_address',
          message: 'url resolves to 127.0.0.1, a loopback address; webhooks go to public addresses only',
        },
      ]);
    });

    it('refuses a host when any one of its addresses is non-public', async () => {
      const [error] = await checkEndpointUrl('https://mixed.example/', STRICT, DNS);
      assert.equal(error?.code, 'private_address');
      assert.match(error!.message, /10\.1\.2\.3, a private address/);
      assert.match((await checkEndpointUrl('https://metadata.example/', STRICT, DNS))[0]!.message, /a link-local address/);
    });

    it('classifies IP literals directly, in every spelling the URL parser normalises', async () => {
      const before = DNS.calls.length;
      assert.deepEqual(await codes('https://10.0.0.1/'), ['url:private_address']);
      assert.deepEqual(await codes('https://[::1]:8443/'), ['url:private_address']);
      assert.deepEqual(await codes('https://[::ffff:169.254.169.254]/'), ['url:private_address']);
      assert.deepEqual(await codes('https://2130706433/'), ['url:private_address']); // 127.0.0.1 as a number
      assert.deepEqual(await codes('https://0x7f.1/'), ['url:private_address']);
      assert.deepEqual(await codes('https://93.184.215.14/'), []);
      assert.equal(DNS.calls.length, before);
      const [error] = await checkEndpointUrl('https://10.0.0.1/', STRICT, DNS);
      assert.equal(error?.message, 'url points to 10.0.0.1, a private address; webhooks go to public addresses only');
    });

    it('exempts everything when private addresses are allowed, and exact hosts when listed', async () => {
      assert.deepEqual(await codes('https://localhost.example/', { ...STRICT, allowPrivateAddresses: true }), []);
      const erp: TargetPolicy = { ...STRICT, allowedPrivateHosts: ['erp.internal', '::1', '10.9.8.7'] };
      assert.deepEqual(await codes('https://ERP.internal/hooks', erp), []);
      assert.deepEqual(await codes('https://[::1]/', erp), []);
      assert.deepEqual(await codes('https://10.9.8.7/', erp), []);
      assert.deepEqual(await codes('https://localhost.example/', erp), ['url:private_address']);
      assert.deepEqual(await codes('https://10.9.8.6/', erp), ['url:private_address']);
    });

    it('resolves with the system resolver by default', async () => {
      const errors = await checkEndpointUrl('https://localhost/hooks', STRICT);
      assert.deepEqual(
        errors.map((error) => error.code),
        ['private_address'],
      );
      assert.match(errors[0]!.message, /^url resolves to (127\.0\.0\.1|::1), a loopback address/);
    });

    it('accepts a host that does not resolve yet (it is checked again at each connection)', async () => {
      assert.deepEqual(await codes('https://not-yet.example/'), []);
    });
  });

  describe('refuseLiteralHost', () => {
    it('refuses non-public IP literals the policy does not exempt, and ignores names', () => {
      assert.match(refuseLiteralHost('10.0.0.1', STRICT)!.message, /^10\.0\.0\.1 is a private address/);
      assert.equal(refuseLiteralHost('[::1]', STRICT)?.kind, 'loopback');
      assert.equal(refuseLiteralHost('[::1]', { ...STRICT, allowedPrivateHosts: ['::1'] }), null);
      assert.equal(refuseLiteralHost('93.184.215.14', STRICT), null);
      assert.equal(refuseLiteralHost('localhost', STRICT), null);
    });
  });

  describe('guardedLookup', () => {
    /** Calls the net-style lookup and returns what its callback got. */
    function lookup(policy: TargetPolicy, hostname: string, options: LookupOptions) {
      return new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
        guardedLookup(policy, DNS)(hostname, options, (error, address, family) => resolve({ error, address, family })),
      );
    }

    it('answers a single address when net asks without all', async () => {
      const answer = await lookup(STRICT, 'hooks.example.com', {});
      assert.equal(answer.error, null);
      assert.equal(answer.address, '93.184.215.14');
      assert.equal(answer.family, 4);
    });

    it('answers every address when net asks with all: true (autoSelectFamily)', async () => {
      const answer = await lookup(STRICT, 'hooks.example.com', { all: true });
      assert.equal(answer.error, null);
      assert.deepEqual(answer.address, [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ]);
    });

    for (const all of [false, true]) {
      it(`fails with EMERX_BLOCKED_ADDRESS when a name resolves to a non-public address (all: ${all})`, async () => {
        const answer = await lookup(STRICT, 'localhost.example', { all });
        assert.equal(answer.error?.code, 'EMERX_BLOCKED_ADDRESS');
        assert.equal(answer.error?.message, 'localhost.example resolves to 127.0.0.1, a loopback address; webhooks go to public addresses only');
        assert.equal((await lookup(STRICT, 'mixed.example', { all })).error?.code, 'EMERX_BLOCKED_ADDRESS');
      });
    }

    it('lets exempt hosts through and passes resolution errors on unchanged', async () => {
      const exempt = await lookup({ ...STRICT, allowedPrivateHosts: ['erp.internal'] }, 'erp.internal', { all: true });
      assert.deepEqual(exempt.address, [{ address: '10.20.30.40', family: 4 }]);
      assert.equal((await lookup({ ...STRICT, allowPrivateAddresses: true }, 'localhost.example', {})).address, '127.0.0.1');
      assert.equal((await lookup(STRICT, 'nowhere.example', {})).error?.code, 'ENOTFOUND');
    });
  });
});
