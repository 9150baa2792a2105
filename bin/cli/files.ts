/**
 * The files commands read: a tool definition (try, runs replay), a tool with its tests (test), a run's
 * inputs (--inputs-file). One reader, so that each says the same when a file cannot be read or parsed.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { UsageError } from './command.ts';

/** Whether the file's name says YAML (.yaml, .yml). */
export const isYaml = (path: string): boolean => /\.ya?ml$/i.test(path);

/**
 * The document in the file: YAML when `yaml` allows it and the name says so, else JSON. A file that
 * cannot be read or parsed is a UsageError naming it, after the option it came from (`--inputs-file`).
 */
export async function readDocument(
  path: string,
  { yaml = false, option }: { yaml?: boolean; option?: string } = {},
): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`${option ? `${option}: ` : ''}cannot read ${path}: ${code}`);
  }
  const asYaml = yaml && isYaml(path);
  try {
    return asYaml ? (parse(text) as unknown) : (JSON.parse(text) as unknown);
  } catch (error) {
    const format = asYaml ? 'YAML' : 'JSON';
    throw new UsageError(
      `${option ? `${option} ` : ''}${path} is not ${format}: ${(error as Error).message}`,
    );
  }
}
