/** What the API server's RequestInfoFactory derives from a request, as used for RBAC and audit. */
export interface RequestInfo {
  isResourceRequest: boolean;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

const METHOD_VERBS: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  HEAD: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** Subresources of a namespace itself; anything else after /namespaces/<ns>/ is a namespaced resource. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

const TRUE_VALUES = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/** A port of k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory.NewRequestInfo. */
export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
  let parts = path.split('/').filter(Boolean);
  const prefix = parts[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 2) return info; // /apis and /apis/<group> are discovery
    info.apiGroup = parts[0] ?? '';
    parts = parts.slice(1);
  }
  if (parts.length < 2) return info; // /api and /api/v1 are discovery
  info.apiVersion = parts[0] ?? '';
  parts = parts.slice(1);
  info.isResourceRequest = true;
  info.verb = METHOD_VERBS[method.toUpperCase()] ?? method.toLowerCase();

  // The deprecated /watch/ and /proxy/ path prefixes name the verb.
  if ((parts[0] === 'watch' || parts[0] === 'proxy') && parts.length >= 2) {
    info.verb = parts[0];
    parts = parts.slice(1);
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1] ?? '';
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] ?? '')) parts = parts.slice(2);
    }
  }
  info.resource = parts[0] ?? '';
  info.name = parts[1] ?? '';
  info.subresource = parts[2] ?? '';

  if (!info.name && info.verb === 'get') {
    info.verb = TRUE_VALUES.has(query.get('watch') ?? '') ? 'watch' : 'list';
  }
  if (!info.name && info.verb === 'delete') info.verb = 'deletecollection';
  // A single-object list or watch (fieldSelector=metadata.name=x) is authorised against that name.
  if (info.verb === 'list' || info.verb === 'watch') {
    const byName = /(?:^|,)metadata\.name==?([^,]+)/.exec(query.get('fieldSelector') ?? '');
    if (byName?.[1]) info.name = byName[1];
  }
  return info;
}
