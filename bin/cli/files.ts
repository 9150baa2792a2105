/**
 * The files commands read: a tool definition (try, runs replay), a tool with its tests (test), a run's
 * inputs (--inputs-file). One reader, so that each says the same when a file cannot be read or parsed, and
 * one reading of a tool file, so that each takes the same tools (JSON or YAML, a tool or a Tool resource).
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { formatIssues } from '../../contract/format-issues.ts';
import { ToolSpec } from '../../contract/resources/kinds.ts';
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

/**
 * The tool a file holds, as POST /v1/tools takes it: the document itself, or the spec of a Tool resource
 * (`kind: Tool`, as `kubectl apply` takes it) with metadata.name as its id when the spec has none. The
 * caller checks the tool; a resource's spec is checked here, as the CRD checks it.
 */
export function toolInDocument(path: string, document: unknown): Record<string, unknown> {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new UsageError(`${path} does not hold a tool (an object)`);
  }
  const record = document as Record<string, unknown>;
  if (record.kind !== 'Tool') return record;
  const spec = ToolSpec.safeParse(record.spec);
  if (!spec.success) throw new UsageError(`${path}: spec is not a Tool spec: ${formatIssues(spec.error)}`);
  const metadata = record.metadata as { name?: unknown } | undefined;
  const id = spec.data.id ?? (typeof metadata?.name === 'string' ? metadata.name : undefined);
  if (!id) throw new UsageError(`${path}: the Tool has neither spec.id nor metadata.name`);
  return { ...(record.spec as Record<string, unknown>), id };
}
