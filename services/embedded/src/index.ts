export { startEmbedded, type DevCredentials, type EmbeddedOptions, type RunningEmbedded } from './embedded.js';
