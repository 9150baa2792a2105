/**
 * The registry's machinery. A setting is declared once: its environment variable, a zod schema that
 * parses the variable's text, the default as it would be written in the environment, the roles that read
 * it and one line of documentation. Settings are grouped in sections (one per page section of
 * docs/configuration.md) whose nesting is the shape a role receives: `documentation.zip.maxEntries`.
 */
import type { z } from 'zod';
import { formatIssues, suggestKey } from '../contract/format-issues.ts';

/**
 * The programs that read settings: the roles of `kubeglue <role>`, the client commands of `kubeglue`
 * (`cli`), then `npm run bench` and `.ci/run`.
 */
export const ROLES = ['embedded', 'api', 'operator', 'runner', 'agent', 'cli', 'bench', 'ci'] as const;
export type Role = (typeof ROLES)[number];

/** The processes that serve the /v1 API, and with it what the API writes: the embedded one and the api role. */
export const API_ROLES = ['embedded', 'api'] as const;

/** The long-running processes that keep runs in the store: the API's and the operator. */
export const SERVER_ROLES = [...API_ROLES, 'operator'] as const;

/**
 * The default as it would be written in the environment (undefined: unset). Where roles differ, one per
 * role and `otherwise` for the others.
 */
export type SettingDefault = string | undefined | { readonly [R in Role | 'otherwise']?: string };

export class Setting<S extends z.ZodType = z.ZodType, R extends Role = Role> {
  readonly name: string;
  readonly schema: S;
  readonly default: SettingDefault;
  readonly roles: readonly R[];
  readonly doc: string;

  constructor(name: string, schema: S, defaultValue: SettingDefault, roles: readonly R[], doc: string) {
    this.name = name;
    this.schema = schema;
    this.default = defaultValue;
    this.roles = roles;
    this.doc = doc;
  }

  /** The text the role gets when the variable is unset. */
  defaultFor(role: Role): string | undefined {
    const value = this.default;
    return typeof value === 'object' ? (value[role] ?? value.otherwise) : value;
  }
}

/** One variable: `setting('KUBEGLUE_PORT', port, '8080', ['embedded', 'api'], 'port of the /v1 API')`. */
export function setting<S extends z.ZodType, const R extends readonly Role[]>(
  name: string,
  schema: S,
  defaultValue: SettingDefault,
  roles: R,
  doc: string,
): Setting<S, R[number]> {
  return new Setting(name, schema, defaultValue, roles, doc);
}

export interface Tree {
  readonly [key: string]: Setting<z.ZodType, Role> | Tree;
}

/** A titled part of the registry: a section of docs/configuration.md. */
export interface Section<T extends Tree = Tree> {
  readonly title: string;
  /** A paragraph for the page: who sets these and why. */
  readonly about: string;
  readonly settings: T;
}

export function section<const T extends Tree>(title: string, about: string, settings: T): Section<T> {
  return { title, about, settings };
}

/** Whether role R reads the setting, or any setting of the subtree. */
type ReadBy<N, R extends Role> =
  N extends Setting<z.ZodType, infer Rs>
    ? R extends Rs
      ? true
      : false
    : true extends { [K in keyof N]: ReadBy<N[K], R> }[keyof N]
      ? true
      : false;

/** The values role R gets from a tree: the same nesting, only what R reads, each leaf its schema's output. */
export type Select<T, R extends Role> = {
  -readonly [K in keyof T as ReadBy<T[K], R> extends true ? K : never]: T[K] extends Setting<infer S, Role>
    ? z.output<S>
    : Select<T[K], R>;
};

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

export interface Registry<T> {
  readonly sections: readonly Section[];
  /** Every section's settings, merged: the shape roles select from. */
  readonly tree: T;
  /** Every setting by its variable name, in declaration order. */
  readonly byName: ReadonlyMap<string, Setting>;
}

function leaves(tree: Tree, path: string, out: Array<{ path: string; setting: Setting }>): void {
  for (const [key, node] of Object.entries(tree)) {
    const here = path ? `${path}.${key}` : key;
    if (node instanceof Setting) out.push({ path: here, setting: node });
    else leaves(node, here, out);
  }
}

/** Every setting of a tree, in declaration order. */
export function settingsIn(tree: Tree): Setting[] {
  return Object.values(tree).flatMap((node) => (node instanceof Setting ? [node] : settingsIn(node)));
}

/** The registry of the sections; a variable or a top-level key declared twice is refused at load. */
export function registry<const S extends readonly Section[]>(
  ...sections: S
): Registry<UnionToIntersection<S[number]['settings']>> {
  const tree: Record<string, Setting | Tree> = {};
  const byName = new Map<string, Setting>();
  for (const part of sections) {
    for (const [key, node] of Object.entries(part.settings)) {
      if (key in tree) throw new Error(`settings registry: '${key}' is declared twice`);
      tree[key] = node;
    }
    const found: Array<{ path: string; setting: Setting }> = [];
    leaves(part.settings, '', found);
    for (const { setting: declared } of found) {
      if (byName.has(declared.name)) {
        throw new Error(`settings registry: ${declared.name} is declared twice`);
      }
      byName.set(declared.name, declared);
    }
  }
  return { sections, tree: tree as UnionToIntersection<S[number]['settings']>, byName };
}

export type Environment = Readonly<Record<string, string | undefined>>;

/** The subtree's values for `role`, or undefined when the role reads none of it; problems are collected. */
function parseTree(tree: Tree, role: Role, env: Environment, problems: string[]): object | undefined {
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [key, node] of Object.entries(tree)) {
    if (node instanceof Setting) {
      if (!node.roles.includes(role)) continue;
      any = true;
      const parsed = node.schema.safeParse(env[node.name] ?? node.defaultFor(role));
      if (parsed.success) out[key] = parsed.data;
      else problems.push(formatIssues(parsed.error, node.name));
    } else {
      const values = parseTree(node, role, env, problems);
      if (values === undefined) continue;
      any = true;
      out[key] = values;
    }
  }
  return any ? out : undefined;
}

/**
 * The settings `role` reads, parsed from `env`; throws naming every invalid variable (never its value:
 * some are secrets), after `prefix`.
 */
export function parseSettings<T, R extends Role>(
  settings: Registry<T>,
  role: R,
  env: Environment,
  prefix: string,
): Select<T, R> {
  const problems: string[] = [];
  const values = parseTree(settings.tree as Tree, role, env, problems) ?? {};
  if (problems.length > 0) throw new Error(`${prefix}: ${problems.join('; ')}`);
  return values as Select<T, R>;
}

/**
 * A warning for each KUBEGLUE_* variable of `env` that no setting declares, naming the closest one. A
 * variable declared for another role is not reported: one environment often serves several roles.
 */
export function unknownVariables(settings: Registry<unknown>, env: Environment): string[] {
  // Compared without the common prefix, which would make any two names look alike.
  const bare = (name: string) => name.replace(/^KUBEGLUE_/, '');
  const known = new Map([...settings.byName.keys()].map((name) => [bare(name), name]));
  return Object.keys(env)
    .filter((name) => name.startsWith('KUBEGLUE_') && !settings.byName.has(name))
    .sort()
    .map((name) => {
      const closest = known.get(suggestKey(bare(name), [...known.keys()]) ?? '');
      return `${name} is not a kubeglue setting${closest ? ` (did you mean ${closest}?)` : ''}; it is ignored`;
    });
}

/** The variable's text for a child's environment (a runner Pod): lists comma-separated. */
export function settingText(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}
