// `node dist/src/healthcheck.js HOST:PORT [--service NAME] [--timeout S]`: the analysis image's
// container health check (deploy/compose.yaml). Exits 0 when the server answers SERVING to the
// standard grpc.health.v1 Check, else 1 with one line saying what it answered or why it could not
// be asked; the same contract as the Python images' `python -m codecompass.clients.health`.
// The client comes from grpc-health-check's own service definition (the package the server
// registers health with), so no health message is encoded here, and the image needs no
// grpc_health_probe binary. It loads no telemetry: a probe every few seconds is no trace. It dials
// TLS when CODECOMPASS_GRPC_TLS_CA_FILE is set (with the client certificate of
// CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE/_KEY_FILE, the name CODECOMPASS_GRPC_TLS_SERVER_NAME), as the
// Python health client does, and sends no token: health needs none.
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

export const SERVING = 'SERVING';
// Not statuses of the protocol: the server has no such service, or could not be asked at all.
export const SERVICE_UNKNOWN = 'SERVICE_UNKNOWN';
export const UNREACHABLE = 'UNREACHABLE';
// Well under a container runtime's own health-check timeout (compose: 5 s).
export const DEFAULT_TIMEOUT_S = 3;

export interface Health {
  status: string;
  detail: string;
}

const HealthClient = grpc.makeClientConstructor(healthService, 'grpc.health.v1.Health');
type CheckCallback = (err: grpc.ServiceError | null, res?: { status: string }) => void;
type HealthStub = InstanceType<typeof HealthClient> & { check(req: { service: string }, opts: grpc.CallOptions, cb: CheckCallback): void };

/** How to dial, from the variables of the services' `grpc` settings. */
export function channelSecurity(env: NodeJS.ProcessEnv = process.env): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  const file = (name: string) => {
    const value = env[name]?.trim();
    return value ? fs.readFileSync(value) : null;
  };
  const ca = file('CODECOMPASS_GRPC_TLS_CA_FILE');
  if (ca === null) return { credentials: grpc.credentials.createInsecure(), options: {} };
  const serverName = env.CODECOMPASS_GRPC_TLS_SERVER_NAME?.trim();
  return {
    credentials: grpc.credentials.createSsl(ca, file('CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE'), file('CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE')),
    options: serverName ? { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName } : {},
  };
}

/** The health of `service` ('' = the whole server) at `address`. */
export function checkHealth(address: string, service = '', timeoutS = DEFAULT_TIMEOUT_S): Promise<Health> {
  const { credentials, options } = channelSecurity();
  const client = new HealthClient(address, credentials, options) as HealthStub;
  return new Promise<Health>((resolve) => {
    client.check({ service }, { deadline: Date.now() + timeoutS * 1000 }, (err, res) => {
      client.close();
      if (!err) resolve({ status: res!.status, detail: '' });
      else if (err.code === grpc.status.NOT_FOUND) resolve({ status: SERVICE_UNKNOWN, detail: `the server has no service '${service}'` });
      else resolve({ status: UNREACHABLE, detail: `${grpc.status[err.code]}: ${err.details}` });
    });
  });
}

export class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): { address: string; service: string; timeoutS: number } {
  const usage = 'usage: node dist/src/healthcheck.js HOST:PORT [--service NAME] [--timeout S]';
  let address: string | undefined;
  let service = '';
  let timeoutS = DEFAULT_TIMEOUT_S;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--service' || arg === '--timeout') {
      const value = argv[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value\n${usage}`);
      if (arg === '--service') service = value;
      else {
        timeoutS = Number(value);
        if (!(timeoutS > 0)) throw new UsageError(`--timeout must be a number above 0, got '${value}'\n${usage}`);
      }
    } else if (address === undefined && !arg.startsWith('-')) {
      address = arg;
    } else {
      throw new UsageError(`unexpected argument '${arg}'\n${usage}`);
    }
  }
  if (address === undefined) throw new UsageError(usage);
  return { address, service, timeoutS };
}

/** The command: its exit code, and one line on stderr unless SERVING (usage errors exit 2). */
export async function main(argv: readonly string[], stderr: (line: string) => void): Promise<number> {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    stderr(err.message);
    return 2;
  }
  let health: Health;
  try {
    health = await checkHealth(args.address, args.service, args.timeoutS);
  } catch (err) {
    // A TLS file that cannot be read: one line, as every other answer.
    stderr(`${args.address}: cannot dial it: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (health.status === SERVING) return 0;
  stderr(`${args.address}: ${health.status}${health.detail ? ` (${health.detail})` : ''}`);
  return 1;
}

if (require.main === module) {
  void main(process.argv.slice(2), (line) => process.stderr.write(`${line}\n`)).then((code) => process.exit(code));
}
