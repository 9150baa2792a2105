/** A kubeglue process's output as its log lines (contract/log.ts): each line parsed as the JSON it must be. */
export interface LogLine {
  level: number;
  time: number;
  pid: number;
  hostname: string;
  role?: string;
  msg: string;
  [key: string]: unknown;
}

/** Every non-empty line parsed; a line that is not a JSON object throws, naming it. */
export function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON log line: ${line}`);
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error(`not a JSON object: ${line}`);
      return parsed as LogLine;
    });
}
