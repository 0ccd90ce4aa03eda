import type { AdminService, Stack } from '../stack.js';

const ADMIN_SERVICES: AdminService[] = ['gateway', 'oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'console'];

/** The sum of every sample of a counter or gauge in a Prometheus text exposition whose labels include `labels`. */
function metricSum(text: string, name: string, labels: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{') || !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * A metric summed over the processes reporting `services` (one admin listener embedded, one per
 * service distributed; each listener read once), over the samples whose labels include `labels`
 * (`reason="unauthenticated"`).
 */
export async function stackMetric(
  stack: Stack,
  name: string,
  { services = ADMIN_SERVICES, labels = '' }: { services?: AdminService[]; labels?: string } = {},
): Promise<number> {
  const urls = [...new Set(services.map((service) => stack.adminUrl(service)))];
  const texts = await Promise.all(urls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  return texts.reduce((sum, text) => sum + metricSum(text, name, labels), 0);
}
