import type { JsonValue } from '../../contract/json.ts';

/**
 * Selectors: function sources that only read fields of their arguments and arrange them in object and
 * array literals, such as `(s) => s.get.data.ok` or `(s) => ({ id: s.user.data.id, tags: [s.a, 'x'] })`.
 * The sandbox answers them on the host, without entering an isolate: no user code runs (the source is
 * parsed into a path template, never executed), so nothing of one run can reach another, and a
 * context (~0.3 ms of CPU to create) is not needed.
 *
 * The answer is the one a fresh context would give, or none (the caller then evaluates in the isolate);
 * so the sandbox asks only where the evaluation would get a fresh context: outside a run, or in a run
 * none of whose evaluations went to an isolate yet (its code may have changed its context's prototypes,
 * `Object.prototype.toJSON` included, which a later evaluation of the run sees).
 * The isolate sees the JSON image of the arguments (`JSON.parse(JSON.stringify(args))`), so every read
 * here follows that image: an `undefined` member is missing, an `undefined` array element or a
 * non-finite number is `null`. Whatever the image could not settle without V8's prototypes is left to
 * the isolate: a property of `null`/`undefined` (a TypeError), a missing key that names something on
 * `Object.prototype` or `Array.prototype` (`toString`, `map`), any property of a number or boolean, a
 * string's property other than `length`, a value that is not a plain object, array or JSON primitive
 * (a `Date`, an object with `toJSON`). The result leaves as JSON, as from the isolate.
 *
 * The grammar (anything else is not a selector): a parenthesized or bare parameter list of plain
 * identifiers, `=>`, and an expression made of: a path from a parameter (`.name`, `?.name`,
 * `[0]`, `["key"]`, `?.[…]`), ending at most in `.map((item, index, array) => expression)` over an
 * array (the expression may read the callback's and the function's parameters), a parenthesized object literal at the top (`({ … })`) or an object literal
 * inside, with `name`, `"string"` or integer keys (never `__proto__`), an array literal, a string,
 * number, `true`, `false`, `null` or `undefined`, and operators: `cond ? a : b`, `&&`, `||`, `??`, `!`,
 * unary `-`, `===`, `!==`, `<`, `<=`, `>`, `>=`, `+`, `-`, `*`, `/`, `%` with JS's precedence (so
 * `(s) => ({ ok: s.get.data.ok === true })` is one); at least one path (a constant is left to the isolate).
 * Operators other than `!`, `&&`, `||`, `??` and `? :` are computed only on JSON primitives (the host's V8
 * computes them as the isolate's: converting a primitive calls no method); an object operand (converted
 * through a prototype's `valueOf`/`toString`, or compared by identity) is left to the isolate. Only the
 * operand a logical operator or a conditional takes is evaluated, as in JS. An answer that would cost the
 * host much (more than MAX_STEPS expressions evaluated, or about MAX_ANSWER_CHARS of JSON) is left to the
 * isolate, whose timeout and memory limit bound it.
 */
export type Selector = (args: readonly JsonValue[]) => { value: JsonValue } | undefined;

type Node =
  | { kind: 'path'; root: Slot; steps: Step[] }
  | { kind: 'object'; entries: [string, Node][] }
  | { kind: 'array'; items: Node[] }
  | { kind: 'literal'; value: JsonValue | undefined }
  | { kind: 'unary'; operator: UnaryOperator; operand: Node }
  | { kind: 'binary'; operator: BinaryOperator; left: Node; right: Node }
  | { kind: 'logical'; operator: LogicalOperator; left: Node; right: Node }
  | { kind: 'conditional'; test: Node; then: Node; otherwise: Node };

type UnaryOperator = '!' | '-';
type BinaryOperator = '===' | '!==' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%';
type LogicalOperator = '&&' | '||' | '??';

/** A parameter: of the function (frame 0) or of a `.map` callback inside it (frame 1, 2, …). */
interface Slot {
  frame: number;
  index: number;
}

type Step =
  | { kind: 'get'; key: string; optional: boolean }
  /** `.map((item, index, array) => body)` on an array, with the callback's parameters in a new frame. */
  | { kind: 'map'; body: Node; optional: boolean };

/** Why a read cannot be answered here: the isolate must answer. */
const UNSETTLED = Symbol('unsettled');
/** An optional chain met null or undefined: the whole chain is undefined. */
const SHORT_CIRCUIT = Symbol('short-circuit');
/** The JSON image of a missing member. */
const MISSING = undefined;

type Value = unknown;

/**
 * The host-side answer of `source`, or undefined when it is not a selector. Parsing is cheap but not free:
 * the caller caches it per source.
 */
export function compileSelector(source: string): Selector | undefined {
  const tokens = tokenize(source);
  if (tokens === undefined) return undefined;
  let parsed: { body: Node } | undefined;
  try {
    parsed = new Parser(tokens).function();
  } catch {
    // The parser recurses per nesting level: a source nested deeper than the stack (`!!!…!s.a`,
    // `[[[…]]]`) is left to V8's parser, which reports it.
    return undefined;
  }
  if (parsed === undefined) return undefined;
  const { body } = parsed;
  return (args) => {
    let value: ReturnType<typeof evaluate>;
    stepsLeft = MAX_STEPS;
    try {
      value = evaluate(body, [args]);
    } catch {
      // A string past V8's longest (`RangeError: Invalid string length`), a stack overflow: the isolate
      // reports it as its own.
      return undefined;
    }
    if (value === UNSETTLED) return undefined;
    if (value === SHORT_CIRCUIT) return { value: null };
    // A large answer (a `.map` repeating a long string, concatenations) is left to the isolate, whose
    // memory limit bounds it; the host has none.
    if (!fitsIn(value, MAX_ANSWER_CHARS)) return undefined;
    return jsonCopy(value);
  };
}

/**
 * Expressions one answer may evaluate (a `.map` evaluates its callback per element, nested ones multiply):
 * past it the isolate, whose CPU timeout bounds it, answers. The host has no timeout.
 */
const MAX_STEPS = 1_000_000;
let stepsLeft = 0;

/** Characters an answer answered on the host may have as JSON, about; larger ones go to the isolate. */
const MAX_ANSWER_CHARS = 4 * 1024 * 1024;

/** Whether the JSON text of `value` stays within `budget` characters (about: quotes and escapes aside). */
function fitsIn(value: Value, budget: number): boolean {
  let left = budget;
  const visit = (node: Value, depth: number): boolean => {
    if (typeof node === 'string') left -= node.length + 2;
    else if (node === null || typeof node !== 'object') left -= 8;
    else if (depth > 256) return false;
    else {
      const values = Array.isArray(node) ? (node as Value[]) : Object.values(node as Record<string, Value>);
      left -= 2 + values.length;
      if (!Array.isArray(node)) for (const key of Object.keys(node)) left -= key.length + 3;
      for (const child of values) if (!visit(child, depth + 1)) return false;
    }
    return left >= 0;
  };
  return visit(value, 0);
}

/** The result as the isolate answers it: a JSON copy (undefined and non-finite numbers are null). */
function jsonCopy(value: Value): { value: JsonValue } | undefined {
  if (value === undefined || value === null) return { value: null };
  if (typeof value === 'string' || typeof value === 'boolean') return { value };
  // JSON has no -0: the isolate's answer is 0.
  if (typeof value === 'number') return { value: Number.isFinite(value) ? value + 0 : null };
  try {
    const text = JSON.stringify(value);
    return { value: text === undefined ? null : (JSON.parse(text) as JsonValue) };
  } catch {
    // A BigInt or a cycle the arguments' JSON copy would have refused: the isolate path reports it.
    return undefined;
  }
}

/** The parameters in scope: the function's arguments, then each enclosing `.map` callback's. */
type Frames = readonly (readonly unknown[])[];

function evaluate(node: Node, frames: Frames): Value | typeof UNSETTLED | typeof SHORT_CIRCUIT {
  if (--stepsLeft < 0) return UNSETTLED;
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'path': {
      const params = frames[node.root.frame] ?? [];
      // A missing argument is undefined in the isolate too (the call passes only the given ones).
      let value: Value = node.root.index < params.length ? image(params[node.root.index]) : undefined;
      if (value === UNSETTLED) return UNSETTLED;
      for (const step of node.steps) {
        if (value === null || value === undefined) {
          if (step.optional) return SHORT_CIRCUIT;
          return UNSETTLED;
        }
        value = step.kind === 'get' ? read(value, step.key) : map(value, step.body, frames);
        if (value === UNSETTLED) return UNSETTLED;
      }
      return value;
    }
    case 'object': {
      const object: Record<string, Value> = {};
      for (const [key, child] of node.entries) {
        const value = evaluate(child, frames);
        if (value === UNSETTLED) return UNSETTLED;
        object[key] = value === SHORT_CIRCUIT ? undefined : value;
      }
      return object;
    }
    case 'array': {
      const array: Value[] = [];
      for (const child of node.items) {
        const value = evaluate(child, frames);
        if (value === UNSETTLED) return UNSETTLED;
        array.push(value === SHORT_CIRCUIT ? undefined : value);
      }
      return array;
    }
    case 'unary': {
      const operand = operandOf(node.operand, frames);
      if (operand === UNSETTLED) return UNSETTLED;
      if (node.operator === '!') return !operand;
      return isPrimitive(operand) ? -(operand as number) : UNSETTLED;
    }
    case 'logical': {
      // Only the operand the operator takes is evaluated, as in the isolate (the other may throw there).
      const left = operandOf(node.left, frames);
      if (left === UNSETTLED) return UNSETTLED;
      if (node.operator === '&&') return left ? operandOf(node.right, frames) : left;
      if (node.operator === '||') return left ? left : operandOf(node.right, frames);
      return left === null || left === undefined ? operandOf(node.right, frames) : left;
    }
    case 'conditional': {
      const test = operandOf(node.test, frames);
      if (test === UNSETTLED) return UNSETTLED;
      return operandOf(test ? node.then : node.otherwise, frames);
    }
    case 'binary': {
      const left = operandOf(node.left, frames);
      if (left === UNSETTLED) return UNSETTLED;
      const right = operandOf(node.right, frames);
      if (right === UNSETTLED) return UNSETTLED;
      return binary(node.operator, left, right);
    }
  }
}

/** An operand's value: an optional chain that met null or undefined is undefined (the chain ends there). */
function operandOf(node: Node, frames: Frames): Value | typeof UNSETTLED {
  const value = evaluate(node, frames);
  return value === SHORT_CIRCUIT ? undefined : value;
}

function isPrimitive(value: Value): boolean {
  return (
    value === null ||
    value === undefined ||
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean'
  );
}

/**
 * A binary operator on JSON primitives, which the host computes as the isolate does (the same V8, and no
 * user code: a primitive's conversion calls no method). An object operand would be converted through its
 * prototype's `valueOf`/`toString` (`+`, `<`) or compared by identity (`===`; the JSON copy gives the
 * isolate new objects): left to the isolate.
 */
function binary(operator: BinaryOperator, left: Value, right: Value): Value | typeof UNSETTLED {
  if (!isPrimitive(left) || !isPrimitive(right)) return UNSETTLED;
  const a = left as number;
  const b = right as number;
  switch (operator) {
    case '===':
      return a === b;
    case '!==':
      return a !== b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return a / b;
    case '%':
      return a % b;
  }
}

/**
 * `array.map(callback)` as a fresh context's `Array.prototype.map` runs it on the JSON image: the
 * callback gets each element (as its image), its index and the array; anything but an array (a string,
 * an object whose `map` is missing) is left to the isolate.
 */
function map(value: Value, body: Node, frames: Frames): Value | typeof UNSETTLED {
  if (!Array.isArray(value)) return UNSETTLED;
  const mapped: Value[] = [];
  for (let index = 0; index < value.length; index++) {
    const element = image(value[index]);
    if (element === UNSETTLED) return UNSETTLED;
    const result = evaluate(body, [...frames, [element === MISSING ? null : element, index, value]]);
    if (result === UNSETTLED) return UNSETTLED;
    mapped.push(result === SHORT_CIRCUIT ? undefined : result);
  }
  return mapped;
}

/**
 * The JSON image of a host value as a container or primitive the isolate would see, or UNSETTLED when
 * that needs more than this file knows (objects that are not plain, objects with `toJSON`).
 */
function image(value: unknown): Value | typeof UNSETTLED {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return MISSING;
  if (typeof value !== 'object') return UNSETTLED;
  if (Array.isArray(value)) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return UNSETTLED;
  if ('toJSON' in value) return UNSETTLED;
  return value;
}

const isEnumerableOwn = Object.prototype.propertyIsEnumerable;
const INDEX = /^(?:0|[1-9][0-9]{0,8})$/;
const EMPTY_OBJECT: object = Object.freeze({});
const EMPTY_ARRAY: object = Object.freeze([]);

/** `container[key]` as the isolate would read it from the JSON image; UNSETTLED when a prototype decides. */
function read(container: Value, key: string): Value | typeof UNSETTLED {
  if (typeof container === 'string') return key === 'length' ? container.length : UNSETTLED;
  if (typeof container !== 'object' || container === null) return UNSETTLED;
  if (Array.isArray(container)) {
    if (key === 'length') return container.length;
    if (INDEX.test(key)) {
      const index = Number(key);
      if (index >= container.length) return undefined;
      // An undefined element, a hole or a function is null in the JSON image.
      const element = image(container[index]);
      return element === MISSING ? null : element;
    }
    return key in EMPTY_ARRAY ? UNSETTLED : undefined;
  }
  // JSON.stringify keeps own enumerable members only.
  const member = isEnumerableOwn.call(container, key)
    ? image((container as Record<string, unknown>)[key])
    : MISSING;
  if (member !== MISSING) return member;
  // Missing from the image: the isolate reads Object.prototype, whose members are V8's, as here.
  return key in EMPTY_OBJECT ? UNSETTLED : undefined;
}

// ---- tokens and grammar ----

/** The binary operators by precedence, loosest first (JS's: equality, relational, additive, multiplicative). */
const BINARY_LEVELS: readonly (readonly BinaryOperator[])[] = [
  ['===', '!=='],
  ['<=', '>=', '<', '>'],
  ['+', '-'],
  ['*', '/', '%'],
];

type Token =
  | { type: 'name'; text: string }
  | { type: 'string'; value: string }
  | { type: 'number'; value: number }
  | { type: 'punct'; text: string };

const TOKEN =
  /\s*(?:([A-Za-z_$][A-Za-z0-9_$]*)|("(?:[^"\\\n\r\u2028\u2029]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")|('[^'\\\n\r\u2028\u2029]*')|((?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![A-Za-z0-9_$])|(=>|\?\.(?![0-9])|===|!==|==|!=|&&|\|\||\?\?|<=|>=|\+\+|--|\*\*|[()[\]{}.,:?!<>+\-*/%=]))/y;

/**
 * Longer operators match first, and `==`, `!=`, `++`, `--`, `**` and `=` are tokens of their own, so that
 * the parser refuses them whole rather than reading `a --1` as `a - -1`. A `/` is only ever division: a
 * regular expression or a comment (`//`) leaves an operator where an operand must be, and is refused.
 */
function tokenize(source: string): Token[] | undefined {
  const tokens: Token[] = [];
  let text = source.trimEnd();
  if (text.endsWith(';')) text = text.slice(0, -1);
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const match = TOKEN.exec(text);
    if (match === null) return undefined;
    const [, name, double, single, number, punct] = match;
    if (name !== undefined) tokens.push({ type: 'name', text: name });
    else if (double !== undefined) tokens.push({ type: 'string', value: JSON.parse(double) as string });
    else if (single !== undefined) tokens.push({ type: 'string', value: single.slice(1, -1) });
    else if (number !== undefined) tokens.push({ type: 'number', value: Number(number) });
    else if (punct !== undefined) tokens.push({ type: 'punct', text: punct });
    else return undefined;
  }
  return tokens;
}

/** Words that cannot name a parameter (reserved in sloppy or strict code, or special). */
const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally ' +
    'for function if import in instanceof new null return super switch this throw true try typeof var void ' +
    'while with yield let static implements interface package private protected public await async eval ' +
    'arguments undefined of get set'
  ).split(' '),
);

class Parser {
  readonly #tokens: Token[];
  #at = 0;
  /** The parameter names in scope, the function's first, then each enclosing callback's. */
  #scopes: string[][] = [];
  /** Paths read by the body. */
  #paths = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  /** `params => body` or `(params => body)`, and nothing after it. */
  function(): { body: Node } | undefined {
    let wrapped = false;
    // `((s) => …)` or `(s => …)`: one pair of parentheses around the whole function.
    if (this.#isPunct('(') && this.#closesAtEnd()) {
      const inner = this.#tokens[1];
      const second = this.#tokens[2];
      if (inner?.type === 'punct' && inner.text === '(') wrapped = true;
      else if (inner?.type === 'name' && second?.type === 'punct' && second.text === '=>') wrapped = true;
      if (wrapped) this.#at++;
    }
    const params = this.#params_();
    if (params === undefined || !this.#eat('=>')) return undefined;
    this.#scopes = [params];
    // `=> {` opens a block, not an object literal.
    if (this.#isPunct('{')) return undefined;
    const body = this.#expression();
    if (body === undefined) return undefined;
    if (wrapped && !this.#eat(')')) return undefined;
    if (this.#at !== this.#tokens.length) return undefined;
    // A constant (`() => 1`) is left to the isolate: nothing to gain, and it is what tests queue.
    return this.#paths > 0 ? { body } : undefined;
  }

  #params_(): string[] | undefined {
    const token = this.#tokens[this.#at];
    if (token?.type === 'name') {
      this.#at++;
      return RESERVED.has(token.text) ? undefined : [token.text];
    }
    if (!this.#eat('(')) return undefined;
    const names: string[] = [];
    while (!this.#eat(')')) {
      const name = this.#tokens[this.#at];
      if (name?.type !== 'name' || RESERVED.has(name.text) || names.includes(name.text)) return undefined;
      names.push(name.text);
      this.#at++;
      if (!this.#eat(',') && !this.#isPunct(')')) return undefined;
    }
    return names;
  }

  /**
   * An AssignmentExpression without assignments: `test ? a : b` over `??` or `||`/`&&` (JS forbids mixing
   * `??` with them unparenthesized), `===`/`!==`, `<`/`<=`/`>`/`>=`, `+`/`-`, `*`/`/`/`%`, unary `!`/`-`,
   * then a primary.
   */
  #expression(): Node | undefined {
    const test = this.#logical();
    if (test === undefined || !this.#eat('?')) return test;
    const then = this.#expression();
    if (then === undefined || !this.#eat(':')) return undefined;
    const otherwise = this.#expression();
    return otherwise === undefined ? undefined : { kind: 'conditional', test, then, otherwise };
  }

  #logical(): Node | undefined {
    let left = this.#binary(0);
    if (left === undefined) return undefined;
    if (this.#isPunct('??')) {
      while (this.#eat('??')) {
        const right = this.#binary(0);
        if (right === undefined) return undefined;
        left = { kind: 'logical', operator: '??', left, right };
      }
      return this.#isPunct('&&') || this.#isPunct('||') ? undefined : left;
    }
    left = this.#and(left);
    while (left !== undefined && this.#eat('||')) {
      const first = this.#binary(0);
      const right = first === undefined ? undefined : this.#and(first);
      left = right === undefined ? undefined : { kind: 'logical', operator: '||', left, right };
    }
    return left === undefined || this.#isPunct('??') ? undefined : left;
  }

  #and(first: Node): Node | undefined {
    let left = first;
    while (this.#eat('&&')) {
      const right = this.#binary(0);
      if (right === undefined) return undefined;
      left = { kind: 'logical', operator: '&&', left, right };
    }
    return left;
  }

  /** Left-associative binary operators, from the loosest level (`===`) to the tightest (`*`). */
  #binary(level: number): Node | undefined {
    const operators = BINARY_LEVELS[level];
    if (operators === undefined) return this.#unary();
    let left = this.#binary(level + 1);
    while (left !== undefined) {
      const token = this.#tokens[this.#at];
      const operator = operators.find((text) => token?.type === 'punct' && token.text === text);
      if (operator === undefined) break;
      this.#at++;
      const right = this.#binary(level + 1);
      left = right === undefined ? undefined : { kind: 'binary', operator, left, right };
    }
    return left;
  }

  #unary(): Node | undefined {
    for (const operator of ['!', '-'] as const) {
      if (!this.#eat(operator)) continue;
      const operand = this.#unary();
      return operand === undefined ? undefined : { kind: 'unary', operator, operand };
    }
    return this.#primary();
  }

  #primary(): Node | undefined {
    const token = this.#tokens[this.#at];
    if (token === undefined) return undefined;
    if (token.type === 'string' || token.type === 'number') {
      this.#at++;
      return { kind: 'literal', value: token.value };
    }
    if (token.type === 'name') {
      this.#at++;
      if (token.text === 'true' || token.text === 'false')
        return { kind: 'literal', value: token.text === 'true' };
      if (token.text === 'null') return { kind: 'literal', value: null };
      // A global no script can change (non-writable, non-configurable), and no parameter may shadow it.
      if (token.text === 'undefined') return { kind: 'literal', value: undefined };
      const root = this.#resolve(token.text);
      if (root === undefined) return undefined;
      this.#paths++;
      return this.#path(root);
    }
    if (this.#eat('(')) {
      const inner = this.#expression();
      return inner !== undefined && this.#eat(')') ? inner : undefined;
    }
    if (this.#eat('{')) return this.#object();
    if (this.#eat('[')) return this.#array();
    return undefined;
  }

  /** The innermost parameter of this name. */
  #resolve(name: string): Slot | undefined {
    for (let frame = this.#scopes.length - 1; frame >= 0; frame--) {
      const index = this.#scopes[frame]?.indexOf(name) ?? -1;
      if (index >= 0) return { frame, index };
    }
    return undefined;
  }

  /** After `.map`: `((item, index, array) => body)`, the callback's parameters in a new scope. */
  #mapCallback(): Node | undefined {
    if (!this.#eat('(')) return undefined;
    const params = this.#params_();
    if (params === undefined || params.length > 3 || !this.#eat('=>') || this.#isPunct('{')) return undefined;
    this.#scopes.push(params);
    const body = this.#expression();
    this.#scopes.pop();
    return body !== undefined && this.#eat(')') ? body : undefined;
  }

  #path(root: Slot): Node | undefined {
    const steps: Step[] = [];
    // A `.map(…)` ends the path: its array holds live values (an `undefined` element is not the JSON
    // image's null), which only the result's JSON copy may read.
    while (steps.at(-1)?.kind !== 'map') {
      const optional = this.#eat('?.');
      if (this.#eat('[')) {
        const key = this.#tokens[this.#at];
        if (key?.type === 'string') steps.push({ kind: 'get', key: key.value, optional });
        else if (key?.type === 'number' && Number.isInteger(key.value))
          steps.push({ kind: 'get', key: String(key.value), optional });
        else return undefined;
        this.#at++;
        if (!this.#eat(']')) return undefined;
        continue;
      }
      if (optional || this.#eat('.')) {
        const name = this.#tokens[this.#at];
        if (name?.type !== 'name') return undefined;
        this.#at++;
        if (name.text === 'map' && this.#isPunct('(')) {
          const body = this.#mapCallback();
          if (body === undefined) return undefined;
          steps.push({ kind: 'map', body, optional });
          continue;
        }
        steps.push({ kind: 'get', key: name.text, optional });
        continue;
      }
      break;
    }
    // A call (`(`) or anything else after the path that is not an operator is refused by the caller,
    // which expects an operator, `,`, `:`, a closing bracket or the end.
    return { kind: 'path', root, steps };
  }

  #object(): Node | undefined {
    const entries: [string, Node][] = [];
    while (!this.#eat('}')) {
      const key = this.#tokens[this.#at];
      let name: string;
      if (key?.type === 'name' || key?.type === 'string') name = key.type === 'name' ? key.text : key.value;
      else if (key?.type === 'number' && Number.isSafeInteger(key.value)) name = String(key.value);
      else return undefined;
      // `__proto__: x` sets the prototype of a literal rather than defining a member.
      if (name === '__proto__') return undefined;
      this.#at++;
      if (!this.#eat(':')) return undefined;
      const value = this.#expression();
      if (value === undefined) return undefined;
      entries.push([name, value]);
      if (!this.#eat(',') && !this.#isPunct('}')) return undefined;
    }
    return { kind: 'object', entries };
  }

  #array(): Node | undefined {
    const items: Node[] = [];
    while (!this.#eat(']')) {
      const item = this.#expression();
      if (item === undefined) return undefined;
      items.push(item);
      if (!this.#eat(',') && !this.#isPunct(']')) return undefined;
    }
    return { kind: 'array', items };
  }

  /** Whether the `(` at the start closes at the last token. */
  #closesAtEnd(): boolean {
    let depth = 0;
    for (let i = 0; i < this.#tokens.length; i++) {
      const token = this.#tokens[i];
      if (token?.type !== 'punct') continue;
      if (token.text === '(' || token.text === '[' || token.text === '{') depth++;
      else if (token.text === ')' || token.text === ']' || token.text === '}') {
        depth--;
        if (depth === 0) return i === this.#tokens.length - 1;
      }
    }
    return false;
  }

  #isPunct(text: string): boolean {
    const token = this.#tokens[this.#at];
    return token?.type === 'punct' && token.text === text;
  }

  #eat(text: string): boolean {
    if (!this.#isPunct(text)) return false;
    this.#at++;
    return true;
  }
}
