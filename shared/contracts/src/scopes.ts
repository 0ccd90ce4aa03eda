/** OAuth scopes of the platform, with the words a consent page and the docs show for each. */
export const scopeDescriptions = {
  'merchant:read': 'Read the merchant account and its settings.',
  'merchant:write': 'Change the merchant account and its settings.',
  'products:read': 'Read products.',
  'products:write': 'Create, change and delete products.',
  'config:read': 'Read sources, destinations, rules, connections and ingested records.',
  'config:write': 'Create, change and delete sources, destinations, rules and connections, and ingest records.',
  'audit:read': 'Read the audit log and verify its hash chain.',
  'webhooks:read': 'Read webhook subscriptions, deliveries, dead letters and events.',
  'webhooks:write': 'Create, change and delete webhook subscriptions, rotate their secrets and replay dead letters.',
  'api_keys:write': 'Create and revoke API keys.',
  'sandbox:reset': 'Erase all data of a sandbox merchant.',
} as const;

export type Scope = keyof typeof scopeDescriptions;

export const scopeNames = Object.keys(scopeDescriptions) as Scope[];
