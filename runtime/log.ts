// Structured JSON logs, one line per event. The sink is injectable so tests can read or silence logs.
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;
export type LogSink = (line: string) => void;

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export function createLogger(
  options: { level?: LogLevel | "silent"; sink?: LogSink; base?: LogFields; now?: () => Date } = {},
): Logger {
  const level = options.level ?? "info";
  const sink = options.sink ?? ((line: string) => process.stdout.write(line + "\n"));
  const base = options.base ?? {};
  const now = options.now ?? (() => new Date());
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields): void => {
    if (level === "silent" || ORDER[lvl] < ORDER[level]) return;
    sink(JSON.stringify({ time: now().toISOString(), level: lvl, msg, ...base, ...fields }));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger({ level, sink, now, base: { ...base, ...fields } }),
  };
}
