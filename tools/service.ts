/**
 * tools/: the ToolService (tools as Tool resources, read through an informer) and tool validation (one
 * function for REST and for applied resources).
 *
 * May import: contract, config, engine, kube, store, platform, systems.
 */
import {
  KG_ERR_TOOL_CHANGED_CONCURRENTLY,
  KG_ERR_TOOL_EXISTS,
  KG_ERR_TOOL_ID_MISMATCH,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import {
  systemIdsProblem,
  type Tool,
  type ToolInput,
  type ToolUpdateBody,
  unusedSystemIds,
} from '../contract/api/tool.ts';
import {
  resourceNameForId,
  toolFromResource,
  toolIdOf,
  toolManifest,
  toolToResource,
} from '../contract/resources/convert.ts';
import type { ToolManifest, ToolResource } from '../contract/resources/kinds.ts';
import type { Informer } from '../kube/informer.ts';
import { isResourceError, type KubeglueResources } from '../kube/resources/index.ts';
import { assertSystemsGranted } from '../systems/grants.ts';
import { type ToolValidationOptions, validateToolDefinition } from './validation.ts';

export interface ToolListQuery {
  page: number;
  limit: number;
  /** 'only': the archived tools alone. */
  includeArchived: boolean | 'only';
  folder?: string | undefined;
  /** Words that must all appear in the id, name, instruction or folder (any case). */
  search?: string | undefined;
  /** null: every tool. */
  toolIds: string[] | null;
}

export interface ToolServiceDeps {
  resources: KubeglueResources;
  informer: Informer<ToolResource>;
  namespace: string;
  /**
   * Where the save-time checks look systems up: every save goes through checkTool, the same check the
   * Tool reconciler makes of a Tool applied with kubectl; a problem is KG_ERR_TOOL_INVALID (422).
   */
  validation: ToolValidationOptions;
}

/** Which systems the key saving a tool may use (GitOps and kubectl write Tool resources without one). */
export interface ToolSaveGrant {
  /** null: every system. */
  systemIds: readonly string[] | null;
}

const UPDATE_ATTEMPTS = 3;

/** `folder=a/b` matches tools in `a/b` and below it. */
function inFolder(tool: Tool, folder: string | undefined): boolean {
  if (folder === undefined) return true;
  const wanted = folder.replace(/\/+$/, '');
  return tool.folder === wanted || (tool.folder ?? '').startsWith(`${wanted}/`);
}

/** Whether every word of `search` is in the tool's id, name, instruction or folder, in any case. */
function matchesSearch(tool: Tool, search: string | undefined): boolean {
  const words = (search ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const text = [tool.id, tool.name, tool.instruction, tool.folder].filter(Boolean).join('\n').toLowerCase();
  return words.every((word) => text.includes(word));
}

function matchesArchived(tool: Tool, includeArchived: ToolListQuery['includeArchived']): boolean {
  if (includeArchived === 'only') return tool.archived;
  return includeArchived || !tool.archived;
}

/** Every folder of the tools and their parents, sorted, each with how many tools are in it or below. */
function foldersOf(tools: readonly Tool[]): { path: string; tools: number }[] {
  const counts = new Map<string, number>();
  for (const tool of tools) {
    const parts = (tool.folder ?? '').split('/').filter(Boolean);
    for (let depth = 1; depth <= parts.length; depth++) {
      const path = parts.slice(0, depth).join('/');
      counts.set(path, (counts.get(path) ?? 0) + 1);
    }
  }
  return [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([path, count]) => ({ path, tools: count }));
}

/** Tools as the REST API sees them, stored as Tool resources (the same objects kubectl and GitOps see). */
export class ToolService {
  readonly #deps: ToolServiceDeps;

  constructor(deps: ToolServiceDeps) {
    this.#deps = deps;
  }

  #fromCache(id: string): ToolResource | undefined {
    const cached = this.#deps.informer.get(resourceNameForId(id));
    return cached && toolIdOf(cached) === id ? cached : undefined;
  }

  /** The tool by id: from memory, else from the store (a tool written a moment ago by another process). */
  async get(id: string): Promise<Tool | undefined> {
    const resource = this.#fromCache(id) ?? (await this.#deps.resources.tools.get(resourceNameForId(id)));
    if (!resource || toolIdOf(resource) !== id) return undefined;
    return toolFromResource(resource);
  }

  /** The tool as the Tool resource to keep in Git and apply with kubectl, in this server's namespace. */
  async manifest(id: string): Promise<ToolManifest | undefined> {
    const tool = await this.get(id);
    return tool ? toolManifest(tool, this.#deps.namespace) : undefined;
  }

  list(query: ToolListQuery) {
    const visible = this.#deps.informer
      .values()
      .map(toolFromResource)
      .filter((tool) => matchesArchived(tool, query.includeArchived))
      .filter((tool) => query.toolIds === null || query.toolIds.includes(tool.id));
    const all = visible
      .filter((tool) => inFolder(tool, query.folder) && matchesSearch(tool, query.search))
      .sort((a, b) => a.id.localeCompare(b.id));
    const start = (query.page - 1) * query.limit;
    const data = all.slice(start, start + query.limit);
    return {
      data,
      page: query.page,
      limit: query.limit,
      total: all.length,
      hasMore: start + data.length < all.length,
      folders: foldersOf(visible),
    };
  }

  /** Ids of the tools (archived ones included) whose steps use the system, sorted. */
  usingSystem(systemId: string): string[] {
    return this.#deps.informer
      .values()
      .map(toolFromResource)
      .filter((tool) =>
        tool.steps.some((step) => step.config.type === 'request' && step.config.systemId === systemId),
      )
      .map((tool) => tool.id)
      .sort();
  }

  /** `grant.systemIds`: the systems the saving key may use (null: every system). */
  async create(input: ToolInput, grant: ToolSaveGrant): Promise<Tool> {
    const tool = await this.#check(input, (parsed) => assertSystemsGranted(grant.systemIds, parsed.steps));
    const now = new Date().toISOString();
    try {
      const created = await this.#deps.resources.tools.create(
        toolToResource({ ...tool, updatedAt: now }, this.#deps.namespace),
      );
      this.#deps.informer.observe('ADDED', created);
      return toolFromResource(created);
    } catch (error) {
      if (isResourceError(error, 'AlreadyExists')) throw KG_ERR_TOOL_EXISTS(tool.id);
      // A busy API server may refuse a write with a conflict even on create: the caller may retry.
      if (isResourceError(error, 'Conflict')) throw KG_ERR_TOOL_CHANGED_CONCURRENTLY(tool.id);
      throw error;
    }
  }

  /**
   * The tool as it results from the update must use only systems in `grant.systemIds`. `changesOf`, a
   * function, gives the changes from the tool as stored, again at each attempt after a concurrent write
   * (a test appended to the tests another write just changed).
   */
  async update(
    id: string,
    changesOf: ToolUpdateBody | ((current: Tool) => ToolUpdateBody),
    grant: ToolSaveGrant,
  ): Promise<Tool> {
    if (typeof changesOf !== 'function' && changesOf.id !== undefined && changesOf.id !== id) {
      throw KG_ERR_TOOL_ID_MISMATCH(changesOf.id, id);
    }
    for (let attempt = 1; ; attempt++) {
      const existing = await this.#deps.resources.tools.get(resourceNameForId(id));
      if (!existing || toolIdOf(existing) !== id) throw KG_ERR_TOOL_NOT_FOUND(id);
      const body = typeof changesOf === 'function' ? changesOf(toolFromResource(existing)) : changesOf;
      if (body.id !== undefined && body.id !== id) throw KG_ERR_TOOL_ID_MISMATCH(body.id, id);
      // systemIds (superglue's clients) is checked against the resulting steps, never stored.
      const { id: _id, createdAt: _c, updatedAt: _u, systemIds, ...changes } = body;
      const defined = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
      // null removes a field (JSON Merge Patch): the tool is parsed without it.
      const fields = Object.entries({ ...toolFromResource(existing), ...defined }).filter(
        ([, value]) => value !== null,
      );
      const merged = await this.#check({ ...Object.fromEntries(fields), id }, (parsed) => {
        assertSystemsGranted(grant.systemIds, parsed.steps);
        const unused = unusedSystemIds(systemIds, parsed.steps);
        if (unused.length > 0) {
          throw KG_ERR_VALIDATION('tool update', `systemIds: ${systemIdsProblem(unused, parsed.steps)}`);
        }
      });
      try {
        const updated = await this.#deps.resources.tools.update(
          toolToResource({ ...merged, updatedAt: new Date().toISOString() }, this.#deps.namespace, existing),
        );
        this.#deps.informer.observe('MODIFIED', updated);
        return toolFromResource(updated);
      } catch (error) {
        // Someone else wrote in between: apply the same changes to their version.
        if (isResourceError(error) && error.code === 409 && attempt < UPDATE_ATTEMPTS) continue;
        if (isResourceError(error) && error.code === 409) throw KG_ERR_TOOL_CHANGED_CONCURRENTLY(id);
        if (isResourceError(error) && error.code === 404) throw KG_ERR_TOOL_NOT_FOUND(id);
        throw error;
      }
    }
  }

  async delete(id: string): Promise<void> {
    const existing = await this.#deps.resources.tools.get(resourceNameForId(id));
    if (!existing || toolIdOf(existing) !== id) throw KG_ERR_TOOL_NOT_FOUND(id);
    try {
      await this.#deps.resources.tools.delete(existing.metadata.name);
      this.#deps.informer.observe('DELETED', existing);
    } catch (error) {
      if (isResourceError(error) && error.code === 404) throw KG_ERR_TOOL_NOT_FOUND(id);
      throw error;
    }
  }

  /** `authorize` sees the parsed tool before any system is looked up (checkTool). */
  #check(input: unknown, authorize: (tool: Tool) => void): Promise<Tool> {
    return validateToolDefinition(input, { ...this.#deps.validation, authorize });
  }
}
