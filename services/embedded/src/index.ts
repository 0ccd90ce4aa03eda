export { startEmbedded, type EmbeddedOptions, type RunningEmbedded } from './embedded.js';
export { clientIdOf, type DevCredentials } from './dev-files.js';
export {
  CLUSTER_SERVICES,
  DEPLOYMENT_QUEUES,
  removeDeploymentFromBroker,
  startLocalCluster,
  type ClusterService,
  type LocalCluster,
  type LocalClusterOptions,
} from './cluster/local-cluster.js';
export { lastLines, type ServiceProcess } from './cluster/service-process.js';
