export { startGateway, type GatewayDeps, type RunningGateway } from './service.js';
