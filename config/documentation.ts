/** Bounds of documentation processing (fetching, crawling, unpacking and parsing a system's documentation). */
import { positiveInt } from './schemas.ts';
import { API_ROLES, section, setting } from './setting.ts';

const MIB = 1024 * 1024;

export const DOCUMENTATION = section(
  'Documentation processing',
  "Bounds of fetching, crawling, unpacking and parsing a system's documentation, which runs in the API " +
    'process; a document past a bound is refused or cut with a message naming the setting.',
  {
    documentation: {
      maxBytes: setting(
        'KUBEGLUE_DOCS_MAX_BYTES',
        positiveInt,
        String(20 * MIB),
        API_ROLES,
        'one fetched file, and the largest upload (larger: 413)',
      ),
      maxPages: setting(
        'KUBEGLUE_DOCS_MAX_PAGES',
        positiveInt,
        '20',
        API_ROLES,
        'fetches of one crawl (the first URL included)',
      ),
      maxTotalBytes: setting(
        'KUBEGLUE_DOCS_MAX_TOTAL_BYTES',
        positiveInt,
        String(100 * MIB),
        API_ROLES,
        'bytes fetched by one crawl',
      ),
      timeoutMs: setting(
        'KUBEGLUE_DOCS_TIMEOUT_MS',
        positiveInt,
        '120000',
        API_ROLES,
        'one processing, fetches and parsing included',
      ),
      maxRetainedChars: setting(
        'KUBEGLUE_DOCS_MAX_RETAINED_CHARS',
        positiveInt,
        '2000000',
        API_ROLES,
        'size of the kept summary (JSON characters); beyond it documents are cut and `truncated` is true',
      ),
      zip: {
        maxEntries: setting(
          'KUBEGLUE_DOCS_ZIP_MAX_ENTRIES',
          positiveInt,
          '1000',
          API_ROLES,
          'entries of one zip',
        ),
        maxTotalBytes: setting(
          'KUBEGLUE_DOCS_ZIP_MAX_BYTES',
          positiveInt,
          String(100 * MIB),
          API_ROLES,
          'unpacked bytes of one zip',
        ),
        maxRatio: setting(
          'KUBEGLUE_DOCS_ZIP_MAX_RATIO',
          positiveInt,
          '100',
          API_ROLES,
          'unpacked bytes per packed byte (judged from 1 MiB unpacked on)',
        ),
      },
      openapi: {
        maxExpandedBytes: setting(
          'KUBEGLUE_DOCS_OPENAPI_MAX_EXPANDED_BYTES',
          positiveInt,
          String(16 * MIB),
          API_ROLES,
          'an OpenAPI document whose $refs expanded would make more JSON than this is not validated',
        ),
        maxDepth: setting(
          'KUBEGLUE_DOCS_OPENAPI_MAX_DEPTH',
          positiveInt,
          '128',
          API_ROLES,
          '… nor one whose $refs expanded would nest deeper than this',
        ),
        timeoutMs: setting(
          'KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS',
          positiveInt,
          '30000',
          API_ROLES,
          'the worker thread that parses, summarises and validates one OpenAPI document is stopped after this',
        ),
        memoryMb: setting(
          'KUBEGLUE_DOCS_OPENAPI_MEMORY_MB',
          positiveInt,
          '512',
          API_ROLES,
          'heap limit of that worker thread',
        ),
      },
    },
  },
);
