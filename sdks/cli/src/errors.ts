/**
 * The CLI's exit codes, which scripts rely on: 0 success, 1 the API (or a bulk item) failed,
 * 2 the command was used wrongly (a missing flag, no credentials, a file that cannot be read).
 */
export const EXIT_OK = 0;
export const EXIT_API_ERROR = 1;
export const EXIT_USAGE = 2;

/** A mistake in how the command was called: printed as one line, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure already reported to the user (a summary of failed lines): exit with `exitCode`, print nothing more. */
export class ReportedFailure extends Error {
  constructor(readonly exitCode: number) {
    super('reported');
  }
}
