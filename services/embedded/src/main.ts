import path from 'node:path';
import { configFields, createLogger, exitOnConfigError, loadConfig, stopOnSignals, z } from '@merx/kit';
import { throttleSettingsFromEnv } from '@merx/gateway';
import { webhookSettingsFromEnv } from '@merx/webhooks';
import { startEmbedded } from './embedded.js';

const embeddedConfig = z.object({
  PORT: configFields.port(8080),
  LOG_LEVEL: configFields.logLevel,
  MERX_DATA_DIR: z.string().min(1).default('./.merx'),
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080').optional(),
  MERX_ACCESS_TOKEN_TTL: configFields.positiveInt(900),
});

let config;
let webhooks;
try {
  config = loadConfig('merx', embeddedConfig);
  // Private addresses allowed by default: a receiver on the developer's own machine just works.
  webhooks = webhookSettingsFromEnv(process.env, { allowPrivate: true });
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('merx', config.LOG_LEVEL);
const dataDir = path.resolve(config.MERX_DATA_DIR);
const merx = await startEmbedded({
  dataDir,
  port: config.PORT,
  logger,
  publicUrl: config.MERX_PUBLIC_URL,
  accessTokenTtlSeconds: config.MERX_ACCESS_TOKEN_TTL,
  throttle: throttleSettingsFromEnv(process.env),
  webhooks,
});
const { credentials } = merx;
process.stdout.write(
  [
    '',
    `  Merx is running (embedded mode${merx.firstStart ? ', first start: sandbox merchant created' : ''})`,
    '',
    `  Base URL      ${credentials.base_url}`,
    `  Merchant      ${credentials.merchant_id}`,
    `  API key       ${credentials.api_key}`,
    `  Credentials   ${path.join(dataDir, 'dev.json')}`,
    '',
    '  Get a token:',
    `    curl -s -u "${credentials.api_key.split('_').slice(0, 3).join('_')}:${credentials.api_key}" -d grant_type=client_credentials ${credentials.base_url}/oauth/token`,
    '',
  ].join('\n') + '\n',
);
stopOnSignals(logger, () => merx.stop());
