import { BUS_WORK_QUEUES } from '@merx/contracts';
import { z } from './config.js';

/**
 * Every name a deployment uses on a shared broker (and in a shared Redis) starts with its
 * deployment name, so two deployments on one RabbitMQ virtual host never read each other's
 * events: each has its own topic exchange, and its queues are bound only to that exchange.
 * Services name their queues logically (`audit.events`); the bus alone turns that into the
 * broker's name, so no service can step outside its deployment by accident.
 */
export const DEFAULT_DEPLOYMENT = 'merx';

export const deploymentField = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be 1-40 of a-z 0-9 -, starting with a letter (e.g. merx, merx-staging)')
  .default(DEFAULT_DEPLOYMENT);

/** Every durable work queue of a deployment by logical name; the contract names them for the operator API. */
export const WORK_QUEUES = BUS_WORK_QUEUES;

export const workQueueNames = (): string[] => Object.values(WORK_QUEUES);

export interface BrokerNames {
  deployment: string;
  /** The topic exchange every event of this deployment is published to (`merx.events`). */
  exchange: string;
  /** The broker's name of a durable queue given by its logical name (`merx.audit.events`). */
  queue(logical: string): string;
  /**
   * The name the same queue had before deployment prefixes existed (`audit.events`), for the
   * default deployment only: a deployment upgraded in place drains it before deleting it.
   */
  legacyQueue(logical: string): string | undefined;
}

export function brokerNamesOf(deployment: string = DEFAULT_DEPLOYMENT): BrokerNames {
  deploymentField.parse(deployment);
  return {
    deployment,
    exchange: `${deployment}.events`,
    queue: (logical) => `${deployment}.${logical}`,
    legacyQueue: (logical) => (deployment === DEFAULT_DEPLOYMENT ? logical : undefined),
  };
}

/** The prefix of this deployment's keys in a Redis it may share with others (`merx:rl:` for the limiter). */
export const redisPrefixOf = (deployment: string, area: string) => `${deployment}:${area}:`;
