// Structured JSON log lines on stderr (stdout carries only the LISTENING
// handshake the launcher parses). Each line names the active span so logs and
// traces can be joined.
import { trace } from '@opentelemetry/api';
import type { LogLevel } from './config';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export function createLogger(
  service: string,
  minLevel: LogLevel,
  sink: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): Logger {
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (RANK[level] < RANK[minLevel]) return;
    const spanContext = trace.getActiveSpan()?.spanContext();
    const record: LogFields = {
      ts: new Date().toISOString(),
      level,
      service,
      msg,
      trace_id: spanContext?.traceId ?? '',
      span_id: spanContext?.spanId ?? '',
      ...fields,
    };
    sink(JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)));
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}
