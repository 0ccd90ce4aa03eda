// Container health probe. The slim base image has no curl, so Node's own fetch asks the
// service on its PORT; exit 0 means healthy. Usage: node deploy/healthcheck.mjs [/readyz|/healthz]
const path = process.argv[2] ?? '/readyz';
const port = process.env.PORT ?? '8080';

try {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2500) });
  process.exit(response.ok ? 0 : 1);
} catch {
  process.exit(1);
}
