export { startConsole, type ConsoleDeps, type RunningConsole } from './service.js';
export {
  consoleConfig,
  cookieIsSecure,
  DEFAULT_SESSION_IDLE_SECONDS,
  DEFAULT_SESSION_MAX_AGE_SECONDS,
  settingsFromConfig,
  type ConsoleSettings,
} from './settings.js';
export { CONSOLE_SCHEMA, consoleMigrations } from './store/migrations.js';
