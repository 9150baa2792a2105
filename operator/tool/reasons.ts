/** Names the Tool controller writes into the Ready condition; tests and `kubectl describe` read the same. */

export const ToolConditionType = { Ready: 'Ready' } as const;

export const ToolReason = {
  /** Every script compiles, every schema is valid, every system exists. */
  Valid: 'Valid',
  /**
   * The spec breaks the Tool schema: a missing field, duplicate or reserved step ids (the API server of
   * a cluster without CEL checks none of these; the same messages as a REST save's).
   */
  InvalidSpec: 'InvalidSpec',
  /** A transform, data selector, stop condition or template does not compile. */
  CompileError: 'CompileError',
  /** inputSchema or outputSchema is not a valid JSON Schema. */
  InvalidSchema: 'InvalidSchema',
  /** Pagination settings do not make sense. */
  InvalidPagination: 'InvalidPagination',
  /** A step's URL (or its System's) has a scheme no step speaks: MSSQL, MongoDB, or an unknown one. */
  UnsupportedProtocol: 'UnsupportedProtocol',
  /** A step names a systemId no System has. */
  UnknownSystem: 'UnknownSystem',
  /** A System the steps use is Ready=False (the message names it and its reason); runs are refused. */
  SystemNotReady: 'SystemNotReady',
  /** Problems of more than one kind (the message lists each). */
  InvalidTool: 'InvalidTool',
} as const;
export type ToolReason = (typeof ToolReason)[keyof typeof ToolReason];
