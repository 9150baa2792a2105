import { describe, expect, it } from 'vitest';
import * as errors from '../../../contract/api/errors.ts';
import {
  ApiError,
  ERROR_CATALOG,
  isApiError,
  KG_ERR_RUN_LIMIT,
  KG_ERR_TOOL_NOT_FOUND,
} from '../../../contract/api/errors.ts';

/** Every `KG_ERR_*` export of the catalog module. */
const definitions = Object.entries(errors).filter(([name]) => name.startsWith('KG_ERR_')) as Array<
  [string, errors.ErrorDefinition<unknown[]>]
>;

describe('the error catalog', () => {
  it('declares each code once, under its own name, with an error status', () => {
    expect(definitions.length).toBeGreaterThan(30);
    for (const [name, definition] of definitions) {
      expect(definition.code).toBe(name);
      expect(definition.statusCode).toBeGreaterThanOrEqual(400);
      expect(definition.statusCode).toBeLessThan(600);
    }
    const codes = ERROR_CATALOG.map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect([...codes].sort()).toEqual(definitions.map(([name]) => name).sort());
  });

  it('raises errors by name that carry code, status, message and headers', () => {
    const error = KG_ERR_TOOL_NOT_FOUND('crm-sync');
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      code: 'KG_ERR_TOOL_NOT_FOUND',
      statusCode: 404,
      message: "Tool 'crm-sync' not found",
    });
    expect(isApiError(error, KG_ERR_TOOL_NOT_FOUND)).toBe(true);
    expect(isApiError(error, KG_ERR_RUN_LIMIT)).toBe(false);
    expect(isApiError(new Error('x'))).toBe(false);
    expect(KG_ERR_RUN_LIMIT(8).headers).toEqual({ 'Retry-After': '1' });
  });
});
