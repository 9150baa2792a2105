import { describe, expect, it } from 'vitest';
import { MAX_INSTRUCTION_LENGTH, Tool } from '../../../contract/api/tool.ts';
import {
  isDns1123Subdomain,
  labelValueForId,
  resourceNameForId,
  systemResourceName,
  systemToResource,
  toolFromResource,
  toolToResource,
} from '../../../contract/resources/convert.ts';
import { ToolResource } from '../../../contract/resources/kinds.ts';
import { SYSTEM_ID_LABEL } from '../../../contract/resources/labels.ts';

const tool = Tool.parse({
  id: 'fetch-users',
  name: 'Fetch users',
  steps: [{ id: 'list', config: { url: 'https://example.test/users' } }],
  updatedAt: '2026-11-01T10:00:00.000Z',
});

describe('tool <-> resource conversion', () => {
  it('uses a DNS-1123 id as metadata.name and keeps it out of spec', () => {
    const resource = toolToResource(tool, 'default');
    expect(resource.metadata.name).toBe('fetch-users');
    expect(resource.spec.id).toBeUndefined();
    expect(ToolResource.safeParse(resource).success).toBe(true);
  });

  it('derives a valid name for a custom id and keeps the id in spec.id, reversibly', () => {
    for (const id of ['Fetch Users!', 'CRM.Sync_v2', 'A'.repeat(128), 'ünïcode-工具']) {
      const resource = toolToResource({ ...tool, id }, 'default');
      expect(isDns1123Subdomain(resource.metadata.name)).toBe(true);
      expect(resource.spec.id).toBe(id);
      expect(toolFromResource({ ...resource, metadata: { ...resource.metadata } }).id).toBe(id);
    }
  });

  it('reads an instruction stored before the length limit cut to it, so the tool still parses', () => {
    const long = 'x'.repeat(MAX_INSTRUCTION_LENGTH * 3);
    const resource = structuredClone(toolToResource(tool, 'default'));
    resource.spec.instruction = long;
    (resource.spec.steps[0] as { instruction?: string }).instruction = long;
    const read = toolFromResource(resource);
    expect(read.instruction).toBe(long.slice(0, MAX_INSTRUCTION_LENGTH));
    expect(read.steps[0]?.instruction).toHaveLength(MAX_INSTRUCTION_LENGTH);
    expect(Tool.safeParse(read).success).toBe(true);
  });

  it('gives ids that slug the same way different names', () => {
    expect(resourceNameForId('My Tool')).not.toBe(resourceNameForId('my-tool!'));
    expect(resourceNameForId('My Tool')).toMatch(/^my-tool-[0-9a-f]{10}$/);
  });

  it('round-trips every field and maps timestamps to metadata, with milliseconds as every answer', () => {
    const resource = toolToResource(tool, 'default');
    resource.metadata.creationTimestamp = '2026-10-01T00:00:00Z';
    expect(toolFromResource(resource)).toEqual({ ...tool, createdAt: '2026-10-01T00:00:00.000Z' });
  });

  it('answers updatedAt no earlier than createdAt, and createdAt for an object without the annotation', () => {
    // The annotation is written a moment before the API server stamps the creation in whole seconds.
    const resource = toolToResource({ ...tool, updatedAt: '2026-10-01T00:00:00.999Z' }, 'default');
    resource.metadata.creationTimestamp = '2026-10-01T00:00:01Z';
    expect(toolFromResource(resource)).toMatchObject({
      createdAt: '2026-10-01T00:00:01.000Z',
      updatedAt: '2026-10-01T00:00:01.000Z',
    });
    const applied = { ...resource, metadata: { ...resource.metadata, annotations: {} } };
    expect(toolFromResource(applied).updatedAt).toBe('2026-10-01T00:00:01.000Z');
  });

  it('keeps metadata of the existing object on update', () => {
    const existing = toolToResource(tool, 'default');
    existing.metadata.resourceVersion = '42';
    existing.metadata.uid = 'uid-1';
    const updated = toolToResource({ ...tool, name: 'Renamed' }, 'default', existing);
    expect(updated.metadata).toMatchObject({ resourceVersion: '42', uid: 'uid-1' });
    expect(updated.spec.name).toBe('Renamed');
  });
});

describe('system resources', () => {
  it('names one object per environment and links them by label', () => {
    const prod = systemToResource({ id: 'crm', environment: 'prod' }, 'default', 'crm-prod-credentials');
    const dev = systemToResource({ id: 'crm', environment: 'dev' }, 'default', undefined);
    expect(prod.metadata.name).toBe('crm-prod');
    expect(dev.metadata.name).toBe(systemResourceName('crm', 'dev'));
    expect(prod.metadata.labels?.[SYSTEM_ID_LABEL]).toBe(dev.metadata.labels?.[SYSTEM_ID_LABEL]);
    expect(prod.spec.credentialsSecretRef).toEqual({ name: 'crm-prod-credentials' });
    expect(dev.spec.credentialsSecretRef).toBeUndefined();
  });

  it('derives label values that Kubernetes accepts', () => {
    expect(labelValueForId('crm')).toBe('crm');
    expect(labelValueForId('x'.repeat(100))).toMatch(/^x{40}-[0-9a-f]{10}$/);
  });
});
