import { Metadata, status, type ServiceError } from '@grpc/grpc-js';

// Trailing metadata a service sets on UNAVAILABLE when a service *it* depends on is down (the
// analysis or embedding service, the object store): retrying the same address will not help.
const UPSTREAM_UNAVAILABLE = 'codecompass-upstream-unavailable';

/** A failed call: its gRPC status code and the service's one-line message, nothing more. */
export class CodeCompassError extends Error {
  /** The gRPC status code (`status.INVALID_ARGUMENT`, ...). */
  readonly code: status;
  /** The code's name, as docs/grpc.md's error table lists it (`INVALID_ARGUMENT`). */
  readonly codeName: string;
  /** The service's own message, which says what to change. */
  readonly details: string;
  /** True when UNAVAILABLE came from a service the called one depends on. */
  readonly upstream: boolean;

  constructor(readonly service: string, readonly address: string, code: status, details: string,
              upstream = false) {
    const codeName = status[code] ?? `CODE_${code}`;
    super(`${service} at ${address}: ${codeName}: ${oneLine(details)}`);
    this.name = 'CodeCompassError';
    this.code = code;
    this.codeName = codeName;
    this.details = oneLine(details);
    this.upstream = upstream;
  }
}

/** The CodeCompassError for whatever a call raised: a gRPC status, or anything else as UNKNOWN. */
export function callError(service: string, address: string, error: unknown): CodeCompassError {
  if (error instanceof CodeCompassError) return error;
  if (isServiceError(error)) {
    const upstream = error.metadata instanceof Metadata && error.metadata.get(UPSTREAM_UNAVAILABLE).length > 0;
    return new CodeCompassError(service, address, error.code, error.details || error.message, upstream);
  }
  return new CodeCompassError(service, address, status.UNKNOWN, error instanceof Error ? error.message : String(error));
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === 'number';
}

// A message is one line wherever it is printed or logged; the first line says what went wrong.
function oneLine(text: string): string {
  return text.split('\n', 1)[0].trim();
}
