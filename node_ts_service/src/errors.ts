// Failures every layer shares; the gRPC edge maps each to a status code.

/** The caller cancelled (or went away); work for the call stops. */
export class CancelledError extends Error {
  constructor() {
    super('request cancelled by the client');
    this.name = 'CancelledError';
  }
}
