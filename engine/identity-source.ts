/**
 * Sources that return their first argument unchanged, such as `(sourceData) => sourceData`: the engine
 * answers them without the sandbox (their result is the input, which is JSON already). Recognised
 * conservatively, by their exact shape; anything else goes to the sandbox.
 */

const NAME = '[A-Za-z_$][A-Za-z0-9_$]*';
/** `x => x`, `(x) => x`, `(x) => (x)`, `(x) => { return x; }`, `function (x) { return x; }`, in parentheses or not. */
const IDENTITY_SHAPES = [
  new RegExp(`^(${NAME})\\s*=>\\s*(?:\\(\\s*\\1\\s*\\)|\\1|\\{\\s*return\\s+\\1\\s*;?\\s*\\})$`),
  new RegExp(
    `^\\(\\s*(${NAME})\\s*\\)\\s*=>\\s*(?:\\(\\s*\\1\\s*\\)|\\1|\\{\\s*return\\s+\\1\\s*;?\\s*\\})$`,
  ),
  new RegExp(`^function\\s*(?:${NAME})?\\s*\\(\\s*(${NAME})\\s*\\)\\s*\\{\\s*return\\s+\\1\\s*;?\\s*\\}$`),
];
const RESERVED = new Set(['await', 'yield', 'arguments', 'eval', 'this', 'async', 'function', 'return']);

/** Whether `source` is a function that returns its first argument unchanged. */
export function isIdentitySource(source: string): boolean {
  let text = source.trim();
  if (text.endsWith(';')) text = text.slice(0, -1).trimEnd();
  // One pair of parentheses around the whole function expression: `((s) => s)`.
  if (text.startsWith('(') && text.endsWith(')') && /^\(\s*(?:\(|function\b|[A-Za-z_$])/.test(text)) {
    const inner = text.slice(1, -1).trim();
    if (IDENTITY_SHAPES.some((shape) => shape.test(inner))) return matches(inner);
  }
  return matches(text);
}

function matches(text: string): boolean {
  for (const shape of IDENTITY_SHAPES) {
    const match = shape.exec(text);
    if (match?.[1] !== undefined && !RESERVED.has(match[1])) return true;
  }
  return false;
}
