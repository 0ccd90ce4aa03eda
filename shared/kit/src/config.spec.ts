import assert from 'node:assert/strict';
import { ConfigError, configFields, loadConfig, z } from './config.js';
import { distributedServiceConfig } from './runtime.js';

const goodEnv = {
  PORT: '3002',
  DATABASE_URL: 'postgres://merx@db:5432/merx',
  AMQP_URL: 'amqp://guest:guest@rabbit:5672',
  MERX_PUBLIC_URL: 'https://api.example.com/',
  MERX_JWKS_URL: 'http://oauth:3001/oauth/jwks',
  MERX_SERVICE_TOKEN: 'config-spec-service-token-0123456789abcdef',
};

function configErrorOf(work: () => unknown): ConfigError {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('loadConfig', () => {
  it('returns parsed values with defaults applied', () => {
    const config = loadConfig('catalog', distributedServiceConfig(3002, 9002), { ...goodEnv, UNRELATED: 'x' });
    assert.deepEqual(config, {
      PORT: 3002,
      HOST: '0.0.0.0',
      ADMIN_PORT: 9002,
      ADMIN_HOST: '0.0.0.0',
      LOG_LEVEL: 'info',
      DATABASE_URL: 'postgres://merx@db:5432/merx',
      AMQP_URL: 'amqp://guest:guest@rabbit:5672',
      MERX_PUBLIC_URL: 'https://api.example.com',
      MERX_JWKS_URL: 'http://oauth:3001/oauth/jwks',
      MERX_DB_POOL_SIZE: 10,
      MERX_MIGRATIONS: 'apply',
      MERX_DB_CONNECT_TIMEOUT_MS: 5_000,
      MERX_DB_STATEMENT_TIMEOUT_MS: 30_000,
      MERX_DB_PREPARED_STATEMENTS: 'named',
      MERX_SERVICE_TOKEN: 'config-spec-service-token-0123456789abcdef',
      MERX_OAUTH_URL: 'http://oauth:3001',
      MERX_DEPLOYMENT: 'merx',
      MERX_BUS_RETRY_SCHEDULE: [1_000, 5_000, 30_000, 120_000, 600_000],
      MERX_BUS_DELIVERY_LIMIT: 10,
      MERX_BUS_EVENTS_PER_MESSAGE: 100,
    });
    assert.equal(loadConfig('catalog', distributedServiceConfig(3002, 9002), { ...goodEnv, PORT: undefined }).PORT, 3002);
    assert.equal(loadConfig('catalog', distributedServiceConfig(3002, 9002), { ...goodEnv, PORT: '0', MERX_DB_POOL_SIZE: '3' }).MERX_DB_POOL_SIZE, 3);
  });

  it('names every bad or missing variable on one line', () => {
    const env = { ...goodEnv, PORT: 'eighty', DATABASE_URL: undefined, AMQP_URL: 'http://rabbit:5672', LOG_LEVEL: 'loud', MERX_DB_POOL_SIZE: '0' };
    const error = configErrorOf(() => loadConfig('catalog', distributedServiceConfig(3002, 9002), env));
    assert.equal(error.name, 'ConfigError');
    assert.equal(error.service, 'catalog');
    assert.ok(error.message.startsWith('catalog: configuration error: '), error.message);
    assert.equal(error.message.includes('\n'), false, error.message);
    for (const name of ['PORT', 'DATABASE_URL', 'AMQP_URL', 'LOG_LEVEL', 'MERX_DB_POOL_SIZE']) {
      assert.ok(error.message.includes(name), `${name} missing from: ${error.message}`);
    }
    for (const fine of ['MERX_PUBLIC_URL', 'MERX_JWKS_URL', 'HOST', 'MERX_SERVICE_TOKEN']) assert.equal(error.message.includes(fine), false, `${fine} is fine`);
    assert.equal(error.problems.length, 5);
    assert.match(error.message, /DATABASE_URL is required \(e\.g\. postgres:/);
    assert.match(error.message, /AMQP_URL must be a amqp: or amqps:\/\/ URL/);
  });

  it('explains secrets that are missing or short', () => {
    const schema = z.object({ SESSION_SECRET: configFields.secret('cookie signing'), OTHER: configFields.secret('other') });
    const error = configErrorOf(() => loadConfig('oauth', schema, { SESSION_SECRET: 'short' }));
    assert.equal(error.message.includes('\n'), false);
    assert.match(error.message, /SESSION_SECRET must be at least 32 characters \(cookie signing\)/);
    assert.match(error.message, /OTHER is required \(other\); generate one with: openssl rand -base64 32/);
    assert.equal(error.message.includes('short'), false, 'the bad secret value itself is never echoed');
  });

  it('reads process.env by default', () => {
    const schema = z.object({ MERX_KIT_TEST_VALUE: z.string() });
    process.env.MERX_KIT_TEST_VALUE = 'from-env';
    try {
      assert.deepEqual(loadConfig('kit', schema), { MERX_KIT_TEST_VALUE: 'from-env' });
    } finally {
      delete process.env.MERX_KIT_TEST_VALUE;
    }
    assert.throws(() => loadConfig('kit', schema), ConfigError);
  });
});
