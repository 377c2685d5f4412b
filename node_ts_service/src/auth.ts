// Who may call this service (issue 31 §4), by the rules of the Python services
// (py_services/codecompass/common/transport.py and bearer.py), read from the same variables:
// - the service token (CODECOMPASS_GRPC_AUTH_TOKEN, or CODECOMPASS_GRPC_AUTH_TOKEN_FILE: one token a
//   line, `#` lines and blanks aside, every one accepted, read again when the file changes, so a
//   token rotates with no restart). Bound beyond loopback the service refuses to start without one
//   (config.ts); when set, every call must carry `authorization: Bearer <token>`, compared in
//   constant time, or is refused with UNAUTHENTICATED. grpc.health.v1.Health is exempt: Kubernetes'
//   native gRPC probes and Docker health checks send no metadata. Reflection is not: it maps every
//   RPC for whoever reaches the port (`grpcurl -H 'authorization: Bearer …'`);
// - TLS from PEM files: a certificate and key make the server TLS only, a client CA makes it require
//   a client certificate signed by it (mTLS). Read at start: a renewed certificate takes a restart.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from './logging';

// 16 characters of a random token (`secrets.token_urlsafe`) carry 96 bits, beyond guessing over a network.
export const MIN_TOKEN_CHARS = 16;
export const HEALTH_SERVICE = 'grpc.health.v1.Health';
export const UNAUTHENTICATED_MESSAGE = 'missing or wrong service token: send the metadata authorization: Bearer <token>';

/** A token or token file that must not be used; the message holds no token. */
export class TokenError extends Error {}

export function checkLength(token: string, source: string): string {
  if (token.length < MIN_TOKEN_CHARS) {
    throw new TokenError(
      `the bearer token from ${source} is ${token.length} character${token.length === 1 ? '' : 's'} long: ` +
        `a token must have at least ${MIN_TOKEN_CHARS} characters; make one with ` +
        "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`",
    );
  }
  return token;
}

/** The tokens `file` holds, the current one first. */
export function readTokenFile(file: string, setting: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new TokenError(`${setting} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const tokens = [...new Set(text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line && !line.startsWith('#')))];
  if (tokens.length === 0) throw new TokenError(`${setting} ${file}: it holds no token (one a line, the current one first)`);
  return tokens.map((token) => checkLength(token, `${setting} ${file}`));
}

function stamp(file: string): string | undefined {
  // A Kubernetes Secret volume swaps a symlink (another inode), an editor rewrites in place.
  try {
    const info = fs.statSync(file, { bigint: true });
    return `${info.dev}:${info.ino}:${info.mtimeNs}:${info.size}`;
  } catch {
    return undefined;
  }
}

/** The accepted tokens: the variable's, fixed, or the token file's as it stands. A file that cannot be
 * read or holds no usable token after a change keeps the tokens read before, so a rotation caught
 * half-way never opens the server nor locks everyone out. */
export class BearerTokens {
  private tokens: Buffer[];
  private stamp: string | undefined;

  constructor(
    private readonly source: { token?: string; file?: string; setting: string },
    private readonly logger: Logger,
  ) {
    this.stamp = source.token ? undefined : stamp(source.file!);
    this.tokens = (source.token ? [checkLength(source.token, source.setting)] : readTokenFile(source.file!, source.setting)).map((t) => Buffer.from(t));
  }

  accepts(given: Buffer): boolean {
    let matched = false;
    // Every token compared, each in constant time on equal lengths (timingSafeEqual requires them):
    // neither which token matched nor how much of a guess did may show in the time taken. The length
    // check itself only tells a length, which MIN_TOKEN_CHARS makes worthless.
    for (const token of this.current()) {
      if (token.length === given.length && crypto.timingSafeEqual(token, given)) matched = true;
    }
    return matched;
  }

  private current(): Buffer[] {
    if (this.source.token) return this.tokens;
    const now = stamp(this.source.file!);
    if (now === this.stamp) return this.tokens;
    this.stamp = now;
    try {
      const tokens = readTokenFile(this.source.file!, this.source.setting);
      this.tokens = tokens.map((t) => Buffer.from(t));
      // How many, never which.
      this.logger.info('bearer tokens read again', { token_file: this.source.file, tokens: tokens.length });
    } catch (err) {
      this.logger.warn(`kept the bearer tokens read before: ${(err as Error).message}`, {});
    }
    return this.tokens;
  }
}

function authorized(metadata: grpc.Metadata, tokens: BearerTokens): boolean {
  const [given] = metadata.get('authorization');
  const text = typeof given === 'string' ? given : given?.toString('utf8') ?? '';
  const [scheme, ...rest] = text.trim().split(' ');
  return scheme.toLowerCase() === 'bearer' && tokens.accepts(Buffer.from(rest.join(' ').trim()));
}

/** Refuses, with UNAUTHENTICATED and one line, a call (health's aside) without an accepted token. */
export function tokenInterceptor(tokens: BearerTokens, logger: Logger): grpc.ServerInterceptor {
  return (method, call) => {
    const service = method.path.replace(/^\//, '').split('/')[0];
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        if (service === HEALTH_SERVICE || authorized(metadata, tokens)) {
          next(metadata);
          return;
        }
        // Who tried, never with what.
        logger.warn('refused a call without a valid service token', { method: method.path, peer: call.getPeer() });
        call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: UNAUTHENTICATED_MESSAGE });
      })
      .build();
    return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder().withStart((next) => next(listener)).build());
  };
}

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile: string | undefined;
}

/** The server's credentials: TLS (mTLS with a client CA) from the files, else plaintext. */
export function serverCredentials(tls: TlsFiles | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  const clientCa = tls.clientCaFile === undefined ? null : fs.readFileSync(tls.clientCaFile);
  return grpc.ServerCredentials.createSsl(clientCa, [{ private_key: fs.readFileSync(tls.keyFile), cert_chain: fs.readFileSync(tls.certFile) }], clientCa !== null);
}
