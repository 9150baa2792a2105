import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const apiKeyScopes: Migration = {
  id: 13,
  name: 'api key scopes and the systems a key may use',
  pg: `
      -- What each key may do (api/scopes.ts). Existing keys get exactly what they could do before scopes:
      -- admin keys every scope; other keys every scope but keys:admin, and only tools:read, runs:read and
      -- runs:execute when limited to tools (they could not change tools, systems or run definitions);
      -- gateways:host where host_gateways was set. host_gateways stays (still written, for an older
      -- version reading the store) but is no longer read.
      ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{}';
      ALTER TABLE api_keys ADD COLUMN system_ids text[];
      COMMENT ON COLUMN api_keys.system_ids IS 'systems the key may use in tools and runs; NULL = every system';
      UPDATE api_keys SET scopes = CASE
        WHEN is_admin THEN ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write', 'keys:admin', 'gateways:host']
        WHEN tool_ids IS NOT NULL AND host_gateways THEN ARRAY['tools:read', 'runs:read', 'runs:execute', 'gateways:host']
        WHEN tool_ids IS NOT NULL THEN ARRAY['tools:read', 'runs:read', 'runs:execute']
        WHEN host_gateways THEN ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write', 'gateways:host']
        ELSE ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write']
      END;
      -- Travels with every run like allowed_tool_ids: no key had system_ids before, so nothing to fill in.
      ALTER TABLE runs ADD COLUMN allowed_system_ids text[];
      COMMENT ON COLUMN runs.allowed_system_ids IS
        'systems the API key that started the run (or its chain) may use; NULL = every system';
    `,
  sqlite: `
      ALTER TABLE api_keys ADD COLUMN scopes TEXT_ARRAY NOT NULL DEFAULT '[]';
      -- systems the key may use in tools and runs; NULL = every system
      ALTER TABLE api_keys ADD COLUMN system_ids TEXT_ARRAY;
      UPDATE api_keys SET scopes = CASE
        WHEN is_admin THEN '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write","keys:admin","gateways:host"]'
        WHEN tool_ids IS NOT NULL AND host_gateways THEN '["tools:read","runs:read","runs:execute","gateways:host"]'
        WHEN tool_ids IS NOT NULL THEN '["tools:read","runs:read","runs:execute"]'
        WHEN host_gateways THEN '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write","gateways:host"]'
        ELSE '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write"]'
      END;
      -- systems the API key that started the run (or its chain) may use; NULL = every system
      ALTER TABLE runs ADD COLUMN allowed_system_ids TEXT_ARRAY;
    `,
};
