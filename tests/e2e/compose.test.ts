import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';

/**
 * The packaging is checked statically: docker-compose.yml against Compose itself, and the
 * Compose file, the Kubernetes manifests and the Dockerfile against what the services need.
 * No image is built and no container started (CI has no Docker daemon), so this suite is the
 * same in embedded and distributed mode.
 */

type Json = Record<string, unknown>;
interface ComposeResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

const COMMON_ENV = ['NODE_ENV', 'LOG_LEVEL', 'PORT', 'MERX_PUBLIC_URL', 'MERX_JWKS_URL', 'MERX_OAUTH_URL', 'MERX_DEPLOYMENT'];
/** Every process that calls or serves an internal route. */
const SERVICE_CREDENTIAL = ['MERX_SERVICE_TOKEN'];
const BACKEND_ENV = ['DATABASE_URL', 'AMQP_URL'];
/** What each service's configuration schema requires. A service not listed owns a schema and uses the bus. */
const ENV_BY_SERVICE: Record<string, string[]> = {
  gateway: [...COMMON_ENV, ...SERVICE_CREDENTIAL, 'MERX_OAUTH_URL', 'MERX_CATALOG_URL', 'REDIS_URL', 'AMQP_URL'],
  oauth: [...COMMON_ENV, ...BACKEND_ENV, ...SERVICE_CREDENTIAL, 'MERX_OPERATOR_TOKEN', 'MERX_COOKIE_SECRET'],
  catalog: [...COMMON_ENV, ...BACKEND_ENV, ...SERVICE_CREDENTIAL],
  // Sessions in its own schema, no bus; the API through the gateway.
  console: [...COMMON_ENV, 'DATABASE_URL', 'MERX_GATEWAY_URL', 'MERX_CONSOLE_CLIENT_SECRET'],
  // Both keep signing secrets sealed with one shared key ring.
  webhooks: [...COMMON_ENV, ...BACKEND_ENV, ...SERVICE_CREDENTIAL, 'MERX_SECRETS_KEYS'],
  merchants: [...COMMON_ENV, ...BACKEND_ENV, ...SERVICE_CREDENTIAL, 'MERX_SECRETS_KEYS'],
};
/** Runs every service in one process: the default mode, never a container of its own. */
const NOT_A_CONTAINER = new Set(['embedded']);
const BACKING_SERVICES = ['postgres', 'rabbitmq', 'redis'];

/** Stand-ins supplied for the check; each is asserted to reach the container unchanged. */
const SECRETS: Record<string, string> = {
  POSTGRES_PASSWORD: 'compose-test-postgres-password',
  RABBITMQ_PASSWORD: 'compose-test-rabbitmq-password',
  MERX_OPERATOR_TOKEN: 'compose-test-operator-token-0123456789abcdef',
  MERX_COOKIE_SECRET: 'compose-test-cookie-secret-0123456789abcdef',
  MERX_CONSOLE_CLIENT_SECRET: 'compose-test-console-secret-0123456789abcdef',
  MERX_SERVICE_TOKEN: 'compose-test-service-token-0123456789abcdef',
  MERX_SECRETS_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
};

/** Container settings that hold a secret, whatever the variable that feeds them is called. */
const SECRET_ENV_KEYS = [...Object.keys(SECRETS), 'MERX_AMQP_PASSWORD'];

const repoRoot = findRepoRoot(path.dirname(fileURLToPath(import.meta.url)));
const distributedServices = listDistributedServices();

describe('production packaging (docker-compose.yml, deploy/)', function () {
  this.timeout(60_000);

  let scratchDir = '';
  let emptyEnvFile = '';
  let resolvedConfig: Json | undefined;

  before(() => {
    scratchDir = mkdtempSync(path.join(tmpdir(), 'merx-compose-test-'));
    // Keeps a developer's ./.env out of the check: only what the test supplies counts.
    emptyEnvFile = path.join(scratchDir, 'empty.env');
    writeFileSync(emptyEnvFile, '');
  });

  after(() => {
    if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
  });

  async function dockerCompose(args: string[], env: Record<string, string>): Promise<ComposeResult> {
    const child = spawn('docker-compose', ['--env-file', emptyEnvFile, '-f', 'docker-compose.yml', ...args], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratchDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const status = await new Promise<number | null>((resolve, reject) => {
      child.on('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT'
            ? new assert.AssertionError({ message: 'docker-compose is not installed: `bash tests/install-system-packages.sh` (run by npm test) installs it' })
            : error,
        ),
      );
      child.on('close', resolve);
    });
    return { status, stdout, stderr };
  }

  /** The file as Compose resolves it (interpolated, anchors merged), with the stand-in secrets. */
  async function resolved(): Promise<Json> {
    if (!resolvedConfig) {
      const result = await dockerCompose(['config'], SECRETS);
      assert.equal(result.status, 0, `docker-compose config failed:\n${result.stderr}`);
      resolvedConfig = asRecord(parse(result.stdout), 'resolved compose config');
    }
    return resolvedConfig;
  }

  describe('docker-compose.yml', () => {
    it('is accepted by docker-compose config -q when the secrets are supplied', async () => {
      const result = await dockerCompose(['config', '-q'], SECRETS);
      assert.equal(result.status, 0, `docker-compose config -q failed:\n${result.stderr}`);
    });

    it('gives every service an admin port on the Compose network only, never published', async () => {
      const services = servicesOf(await resolved());
      for (const name of distributedServices) {
        const service = asRecord(services[name], name);
        const adminPort = environmentOf(service).ADMIN_PORT;
        assert.match(String(adminPort), /^\d+$/, `${name}: ADMIN_PORT`);
        assert.notEqual(adminPort, environmentOf(service).PORT, `${name}: the admin port must not be the public one`);
        const exposed = asOptionalArray(service.expose).map(String);
        assert.ok(exposed.includes(String(adminPort)), `${name}: expose ${String(adminPort)}`);
        const published = asOptionalArray(service.ports).map((port) =>
          String(typeof port === 'string' ? port.split(':').at(-1) : asRecord(port, `${name} port`).target),
        );
        assert.ok(!published.includes(String(adminPort)), `${name} publishes its admin port`);
      }
    });

    it('is refused, naming the variable, when any secret is missing', async () => {
      await Promise.all(
        Object.keys(SECRETS).map(async (missing) => {
          const env = { ...SECRETS };
          delete env[missing];
          const result = await dockerCompose(['config', '-q'], env);
          assert.notEqual(result.status, 0, `Compose accepted the file without ${missing}`);
          assert.match(result.stderr, new RegExp(missing), `the error does not name ${missing}:\n${result.stderr}`);
        }),
      );
    });

    it('never gives a secret a default', () => {
      const text = readFileSync(path.join(repoRoot, 'docker-compose.yml'), 'utf8');
      for (const name of Object.keys(SECRETS)) {
        const uses = [...text.matchAll(new RegExp(`\\$\\{${name}([^A-Z0-9_][^}]*)?\\}`, 'g'))];
        assert.ok(uses.length > 0, `${name} is never used`);
        for (const [use, modifier] of uses) {
          assert.ok(modifier?.startsWith(':?'), `${use} must be required (\${${name}:?message}), not defaulted or optional`);
        }
      }
      // Not even as a literal value hidden behind a YAML anchor.
      const raw = asRecord(parse(text, { merge: true }), 'docker-compose.yml');
      for (const [name, service] of Object.entries(asRecord(raw.services, 'services'))) {
        const env = environmentOf(asRecord(service, name));
        for (const secret of SECRET_ENV_KEYS) {
          if (secret in env) assert.match(env[secret] ?? '', /^\$\{[A-Z0-9_]+:\?[^}]*\}$/, `${name}: ${secret} must come from the environment`);
        }
      }
    });

    it('has a service for every service under services/, running its own entry point', async () => {
      const services = servicesOf(await resolved());
      for (const name of distributedServices) {
        const service = services[name];
        assert.ok(service, `docker-compose.yml has no service "${name}" (services/${name}/src/main.ts exists)`);
        assert.ok(commandOf(service).includes(`services/${name}/dist/src/main.js`), `${name} must run node services/${name}/dist/src/main.js`);
      }
    });

    it('gives every service each setting it validates at start-up', async () => {
      const services = servicesOf(await resolved());
      for (const name of distributedServices) {
        const env = environmentOf(asRecord(services[name], name));
        for (const variable of ENV_BY_SERVICE[name] ?? [...COMMON_ENV, ...BACKEND_ENV]) {
          assert.ok(env[variable], `${name} lacks ${variable}`);
        }
        assert.equal(env.MERX_JWKS_URL, 'http://oauth:3001/oauth/jwks', `${name}: MERX_JWKS_URL`);
        assert.match(env.MERX_PUBLIC_URL ?? '', /^https?:\/\//, `${name}: MERX_PUBLIC_URL`);
        if (env.DATABASE_URL) assert.ok(env.DATABASE_URL.includes(`:${SECRETS.POSTGRES_PASSWORD}@`), `${name}: DATABASE_URL must carry POSTGRES_PASSWORD`);
        if (env.AMQP_URL) assert.ok(env.AMQP_URL.includes(`:${SECRETS.RABBITMQ_PASSWORD}@`), `${name}: AMQP_URL must carry RABBITMQ_PASSWORD`);
      }
      const oauth = environmentOf(asRecord(services.oauth, 'oauth'));
      assert.equal(oauth.MERX_OPERATOR_TOKEN, SECRETS.MERX_OPERATOR_TOKEN);
      assert.equal(oauth.MERX_COOKIE_SECRET, SECRETS.MERX_COOKIE_SECRET);
      assert.equal(environmentOf(asRecord(services.rabbitmq, 'rabbitmq')).MERX_AMQP_PASSWORD, SECRETS.RABBITMQ_PASSWORD);
      assert.equal(environmentOf(asRecord(services.postgres, 'postgres')).POSTGRES_PASSWORD, SECRETS.POSTGRES_PASSWORD);
    });

    it('lets the gateway reach every other service on the port that service listens on', async () => {
      const services = servicesOf(await resolved());
      const gateway = environmentOf(asRecord(services.gateway, 'gateway'));
      assert.equal(gateway.PORT, '8080');
      for (const name of distributedServices.filter((service) => service !== 'gateway')) {
        const port = environmentOf(asRecord(services[name], name)).PORT;
        assert.equal(gateway[`MERX_${name.toUpperCase()}_URL`], `http://${name}:${port}`, `gateway: MERX_${name.toUpperCase()}_URL`);
      }
    });

    it('publishes only the gateway, on 8080 (HTTP) and 50051 (gRPC), and names no container, so every service scales', async () => {
      for (const [name, service] of Object.entries(servicesOf(await resolved()))) {
        assert.equal(service.container_name, undefined, `${name} has a container_name: it could not be scaled`);
        if (name !== 'gateway') assert.equal(service.ports, undefined, `${name} publishes a port; only the gateway may`);
      }
      const ports = asArray(servicesOf(await resolved()).gateway?.ports, 'gateway ports');
      const targets = ports.map((port) => String(typeof port === 'string' ? port.split(':').at(-1) : asRecord(port, 'gateway port').target));
      assert.deepEqual(targets, ['8080', '50051']);
    });

    it('points the gateway at the gRPC port of each service that owns a gRPC service', async () => {
      const services = servicesOf(await resolved());
      const gateway = environmentOf(asRecord(services.gateway, 'gateway'));
      assert.equal(gateway.GRPC_PORT, '50051');
      for (const name of ['catalog', 'merchants', 'webhooks']) {
        const port = environmentOf(asRecord(services[name], name)).GRPC_PORT;
        assert.equal(gateway[`MERX_${name.toUpperCase()}_GRPC`], `${name}:${port}`, `gateway: MERX_${name.toUpperCase()}_GRPC`);
      }
    });

    it('starts each service only once what it depends on is healthy', async () => {
      const services = servicesOf(await resolved());
      for (const name of [...distributedServices, ...BACKING_SERVICES]) {
        const service = asRecord(services[name], name);
        assert.ok(service.healthcheck, `${name} has no healthcheck`);
        assert.equal(service.restart, 'unless-stopped', `${name}: restart policy`);
      }
      for (const name of distributedServices) {
        const dependsOn = asRecord(services[name]?.depends_on, `${name} depends_on`);
        for (const [dependency, how] of Object.entries(dependsOn)) {
          // The one-shot migrate service is never healthy: it has finished, or it has failed.
          const expected = dependency === 'migrate' ? 'service_completed_successfully' : 'service_healthy';
          assert.equal(asRecord(how, `${name} -> ${dependency}`).condition, expected, `${name} -> ${dependency}`);
        }
        // The console uses no bus; it needs its database and the oauth service it signs users in with.
        const needs =
          name === 'gateway'
            ? ['redis', 'oauth', ...distributedServices.filter((other) => other !== 'gateway')]
            : name === 'console'
              ? ['postgres', 'migrate', 'oauth']
              : ['postgres', 'rabbitmq', 'migrate'];
        for (const dependency of needs) assert.ok(dependency in dependsOn, `${name} must wait for ${dependency}`);
      }
    });

    it('migrates once per deployment: a one-shot migrate service, and services that only verify their schema', async () => {
      const services = servicesOf(await resolved());
      const migrate = asRecord(services.migrate, 'migrate');
      assert.ok(commandOf(migrate).includes('services/embedded/dist/src/migrate.js'), 'migrate runs the migrate command');
      assert.equal(migrate.restart, 'no', 'a finished migration is not restarted');
      assert.ok(environmentOf(migrate).DATABASE_URL, 'migrate has DATABASE_URL');
      assert.ok(existsSync(path.join(repoRoot, 'services/embedded/src/migrate.ts')), 'the command exists');
      for (const name of distributedServices.filter((other) => other !== 'gateway')) {
        assert.equal(environmentOf(asRecord(services[name], name)).MERX_MIGRATIONS, 'verify', `${name} must only verify its schema`);
      }
    });
  });

  describe('deploy/k8s', () => {
    let objects: Json[] = [];
    before(() => {
      objects = loadKubernetesObjects();
    });
    const ofKind = (kind: string) => objects.filter((object) => object.kind === kind);
    const named = (object: Json) => asRecord(object.metadata, 'metadata').name;

    it('gives every Deployment an image and both probes on a declared port', () => {
      const deployments = ofKind('Deployment');
      assert.ok(deployments.length > 0, 'no Deployment in deploy/k8s');
      for (const deployment of deployments) {
        const name = String(named(deployment));
        for (const container of containersOf(deployment)) {
          assert.ok(typeof container.image === 'string' && container.image.length > 0, `${name}: container without an image`);
          const declared = asArray(container.ports, `${name} ports`).flatMap((port) => {
            const { name: portName, containerPort } = asRecord(port, `${name} port`);
            return [portName, containerPort];
          });
          for (const [probe, expectedPath] of [
            ['readinessProbe', '/readyz'],
            ['livenessProbe', '/healthz'],
          ] as const) {
            const httpGet = asRecord(asRecord(container[probe], `${name} ${probe}`).httpGet, `${name} ${probe}.httpGet`);
            assert.equal(httpGet.path, expectedPath, `${name}: ${probe} path`);
            assert.ok(declared.includes(httpGet.port), `${name}: ${probe} port ${String(httpGet.port)} is not a container port`);
          }
          assert.ok(asRecord(container.resources, `${name} resources`).requests, `${name}: resource requests`);
        }
      }
    });

    it('declares each admin port on its pod for Prometheus, and routes it through no Service', () => {
      for (const name of distributedServices) {
        const deployment = ofKind('Deployment').find((object) => named(object) === name);
        assert.ok(deployment, `deploy/k8s has no Deployment "${name}"`);
        const [container] = containersOf(deployment);
        const env = asOptionalArray(container!.env).map((entry) => asRecord(entry, `${name} env`));
        const adminPort = Number(env.find((entry) => entry.name === 'ADMIN_PORT')?.value);
        assert.ok(Number.isInteger(adminPort) && adminPort > 0, `${name}: ADMIN_PORT`);
        const declared = asArray(container!.ports, `${name} ports`).map((port) => asRecord(port, `${name} port`));
        assert.ok(
          declared.some((port) => port.name === 'admin' && port.containerPort === adminPort),
          `${name}: container port "admin" ${adminPort}`,
        );
        const annotations = asRecord(
          asRecord(asRecord(asRecord(deployment.spec, 'spec').template, 'template').metadata, 'template metadata').annotations,
          `${name} pod annotations`,
        );
        assert.deepEqual(
          [annotations['prometheus.io/scrape'], annotations['prometheus.io/port'], annotations['prometheus.io/path']],
          ['true', String(adminPort), '/metrics'],
          `${name}: scrape annotations`,
        );
        for (const probe of ['readinessProbe', 'livenessProbe'])
          assert.notEqual(asRecord(asRecord(container![probe], probe).httpGet, 'httpGet').port, 'admin', `${name}: ${probe} on the public port`);
      }
      for (const service of ofKind('Service')) {
        for (const port of asOptionalArray(asRecord(service.spec, 'spec').ports).map((entry) => asRecord(entry, 'service port'))) {
          assert.notEqual(port.targetPort, 'admin', `Service ${String(named(service))} routes an admin port`);
        }
      }
    });

    it('has a Deployment and a Service for every service, and scales the gateway and catalog', () => {
      for (const name of distributedServices) {
        const deployment = ofKind('Deployment').find((object) => named(object) === name);
        assert.ok(deployment, `deploy/k8s has no Deployment "${name}"`);
        const [container] = containersOf(deployment);
        const invocation = [...asOptionalArray(container?.command), ...asOptionalArray(container?.args)].join(' ');
        assert.ok(invocation.includes(`services/${name}/dist/src/main.js`), `${name}: the container must run services/${name}/dist/src/main.js`);
        assert.ok(
          ofKind('Service').some((object) => named(object) === name),
          `deploy/k8s has no Service "${name}"`,
        );
      }
      for (const name of ['gateway', 'catalog']) {
        const hpa = ofKind('HorizontalPodAutoscaler').find((object) => named(object) === name);
        assert.ok(hpa, `no HorizontalPodAutoscaler for ${name}`);
        assert.equal(asRecord(asRecord(hpa.spec, 'hpa spec').scaleTargetRef, 'scaleTargetRef').name, name);
      }
      assert.ok(
        ofKind('PodDisruptionBudget').some((object) => named(object) === 'gateway'),
        'no PodDisruptionBudget for the gateway',
      );
    });

    it('carries no secret value', () => {
      for (const secret of ofKind('Secret')) {
        for (const field of ['data', 'stringData']) {
          for (const [key, value] of Object.entries(asRecord(secret[field] ?? {}, field))) {
            assert.equal(value, '', `Secret ${String(named(secret))} has a value for ${key}`);
          }
        }
      }
    });
  });

  describe('deploy/Dockerfile', () => {
    it('builds on node:20-bookworm-slim and runs the gateway by default as a non-root user with a health check', () => {
      const dockerfile = readFileSync(path.join(repoRoot, 'deploy/Dockerfile'), 'utf8');
      assert.match(dockerfile, /^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
      const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map(([, user]) => user);
      assert.ok(users.length > 0 && users.at(-1) !== 'root' && users.at(-1) !== '0', 'the final stage must switch to a non-root user');
      assert.match(dockerfile, /^HEALTHCHECK [^\n]*(\\\n[^\n]*)*CMD \["node"/m, 'HEALTHCHECK must use node: the slim image has no curl');
      assert.match(dockerfile, /^CMD \["node", "services\/gateway\/dist\/src\/main\.js"\]$/m);
    });
  });
});

function findRepoRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && 'workspaces' in asRecord(JSON.parse(readFileSync(manifest, 'utf8')), manifest)) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no workspace root above ${start}`);
  }
}

/** Every folder under services/ with an entry point, plus the three this issue defines. */
function listDistributedServices(): string[] {
  const servicesDir = path.join(repoRoot, 'services');
  const withEntryPoint = readdirSync(servicesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !NOT_A_CONTAINER.has(entry.name))
    .filter((entry) => existsSync(path.join(servicesDir, entry.name, 'src', 'main.ts')))
    .map((entry) => entry.name);
  return [...new Set([...Object.keys(ENV_BY_SERVICE), ...withEntryPoint])].sort();
}

function loadKubernetesObjects(): Json[] {
  const dir = path.join(repoRoot, 'deploy', 'k8s');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml') || file.endsWith('.yml'))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).flatMap((document) => {
        assert.deepEqual(document.errors, [], `deploy/k8s/${file} does not parse`);
        const object: unknown = document.toJS();
        return object == null ? [] : [asRecord(object, file)];
      }),
    );
}

function containersOf(deployment: Json): Json[] {
  const template = asRecord(asRecord(deployment.spec, 'spec').template, 'template');
  return asArray(asRecord(template.spec, 'pod spec').containers, 'containers').map((container) => asRecord(container, 'container'));
}

function servicesOf(config: Json): Record<string, Json> {
  return Object.fromEntries(Object.entries(asRecord(config.services, 'services')).map(([name, service]) => [name, asRecord(service, name)]));
}

function commandOf(service: Json): string {
  const command = service.command;
  return Array.isArray(command) ? command.join(' ') : String(command ?? '');
}

function environmentOf(service: Json): Record<string, string | undefined> {
  const environment = service.environment ?? {};
  const entries: [string, unknown][] = Array.isArray(environment)
    ? environment.map((item) => {
        const [key = '', ...value] = String(item).split('=');
        return [key, value.length > 0 ? value.join('=') : undefined];
      })
    : Object.entries(asRecord(environment, 'environment'));
  return Object.fromEntries(entries.map(([key, value]) => [key, value == null ? undefined : String(value)]));
}

function asRecord(value: unknown, what: string): Json {
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `${what} must be a mapping`);
  return value as Json;
}

function asArray(value: unknown, what: string): unknown[] {
  assert.ok(Array.isArray(value), `${what} must be a list`);
  return value;
}

function asOptionalArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
