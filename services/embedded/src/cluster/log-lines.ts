/**
 * One short line per log record of a child service for the launcher's terminal
 * (`catalog  INFO  request completed GET /api/v1/products 200 3ms`); the full JSON stays in
 * the service's log file. Lines that are not pino JSON are shown as they are.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

export function formatServiceLine(service: string, line: string): string {
  const label = service.padEnd(10);
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${label} ${line}`;
  }
  const level = LEVELS[record.level as number] ?? String(record.level ?? '');
  const request = record.req as { method?: string; url?: string } | undefined;
  const details = [
    request?.method && request.url ? `${request.method} ${request.url}` : undefined,
    typeof (record.res as { statusCode?: number } | undefined)?.statusCode === 'number' ? String((record.res as { statusCode: number }).statusCode) : undefined,
    typeof record.responseTime === 'number' ? `${record.responseTime}ms` : undefined,
    typeof record.url === 'string' && !request ? record.url : undefined,
    (record.err as { message?: string } | undefined)?.message,
  ].filter(Boolean);
  return `${label} ${level.padEnd(5)} ${String(record.msg ?? '')}${details.length ? ` ${details.join(' ')}` : ''}`;
}
