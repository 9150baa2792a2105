import { describe, expect, it } from 'vitest';
import {
  measureExpansion,
  summariseOpenApiDocument,
} from '../../../systems/documentation/parsers/openapi.ts';

describe('the OpenAPI summary', () => {
  it('follows the local $refs where it reads: path items, parameters, schemas, bodies, security schemes', () => {
    const api = {
      openapi: '3.1.0',
      info: { title: 'Shop', version: '2' },
      security: [{ key: [] }],
      paths: {
        '/orders/{id}': { $ref: '#/components/pathItems/Order' },
      },
      components: {
        pathItems: {
          Order: {
            parameters: [{ $ref: '#/components/parameters/Id' }],
            put: {
              operationId: 'putOrder',
              requestBody: { $ref: '#/components/requestBodies/Order' },
              parameters: [{ name: 'dryRun', in: 'query', schema: { $ref: '#/components/schemas/Flag' } }],
            },
          },
        },
        parameters: {
          Id: { name: 'id', in: 'path', required: true, schema: { $ref: '#/components/schemas/Id' } },
        },
        // A reference to a reference, and one to itself.
        schemas: {
          Id: { $ref: '#/components/schemas/Integer' },
          Integer: { type: 'integer' },
          Flag: { $ref: '#/components/schemas/Flag' },
        },
        requestBodies: { Order: { required: true, content: { 'application/json': {} } } },
        securitySchemes: {
          key: { $ref: '#/components/securitySchemes/header' },
          header: { type: 'apiKey', in: 'header', name: 'X-Key' },
        },
      },
    };
    const summary = summariseOpenApiDocument(api, 'upload:shop.yaml');
    expect(summary.operations).toEqual([
      {
        method: 'PUT',
        path: '/orders/{id}',
        operationId: 'putOrder',
        parameters: [
          { name: 'id', in: 'path', required: true, type: 'integer' },
          { name: 'dryRun', in: 'query', required: false },
          { name: 'body', in: 'body', required: true, type: 'application/json' },
        ],
      },
    ]);
    expect(summary.securitySchemes).toEqual([
      { id: 'key', type: 'apiKey', in: 'header', name: 'X-Key' },
      { id: 'header', type: 'apiKey', in: 'header', name: 'X-Key' },
    ]);
    expect(summary.security).toEqual(['key']);
  });
});

describe('measureExpansion', () => {
  /** Levels 0..n-1, each an object whose two properties refer to the next. */
  function doubling(levels: number) {
    const schemas: Record<string, unknown> = {};
    for (let level = 0; level < levels; level++) {
      const next = { $ref: `#/components/schemas/L${level + 1}` };
      schemas[`L${level}`] =
        level + 1 < levels ? { type: 'object', properties: { a: next, b: next } } : { type: 'string' };
    }
    return { openapi: '3.0.3', root: { $ref: '#/components/schemas/L0' }, components: { schemas } };
  }

  it('counts what expanding would make without expanding: each level doubles the size, not the work', () => {
    const ten = measureExpansion(doubling(10));
    const eleven = measureExpansion(doubling(11));
    const sixty = measureExpansion(doubling(60));
    // The components themselves are counted too; the tree under `root` doubles with each level.
    expect(eleven.bytes).toBeGreaterThan(1.9 * ten.bytes);
    expect(sixty.bytes).toBeGreaterThan(2 ** 59);
    expect(eleven.depth).toBe(ten.depth + 2);
  });

  it('matches the JSON text of a document without $refs', () => {
    const document = {
      openapi: '3.0.3',
      info: { title: 'Plain', version: '1' },
      tags: ['a', 'b'],
      n: 12,
      ok: true,
    };
    expect(measureExpansion(document).bytes).toBe(JSON.stringify(document).length);
    expect(measureExpansion(document).depth).toBe(2);
  });

  it('counts a circular reference as left in place', () => {
    const document = { a: { $ref: '#/b' }, b: { next: { $ref: '#/b' } } };
    const { bytes, depth } = measureExpansion(document);
    expect(Number.isFinite(bytes)).toBe(true);
    expect(depth).toBeLessThan(10);
  });
});
