/**
 * The code that runs inside every sandbox context, and the wrapping of user sources around it.
 *
 * Protocol (one call per evaluation):
 * 1. the driver script runs once per context; its completion value is the driver's `run` function,
 *    which the host keeps as a Reference (no global names it, so user code cannot reach it);
 * 2. a user source is compiled once per isolate as `(() => (<source>))`; run in a context, it gives
 *    a thunk (evaluating it runs no user code), kept per context and source;
 * 3. the host calls `run(thunk, input[, guarded[, capture]])` with the JSON text of the argument array
 *    (and of the guarded properties of the first argument, see GuardedProperty; and the name of a property
 *    of the first argument to answer as well). `run` evaluates the source to a function, installs the
 *    guards, calls it with the parsed arguments, awaits a thenable, and answers a string (or a promise of
 *    one):
 *    - the result as JSON text (which never starts with `E`); with `capture`, the JSON text of the pair
 *      `[result, first[capture]]`, the property as the call left it (how a transform's changes to
 *      `sourceData.persistedState` leave the sandbox), or
 *    - `E` followed by a JSON failure record `{kind, name, message, line?, column?}`.
 * The driver captures the intrinsics it needs before any user code runs, so a source that
 * replaces `JSON.parse` or `Promise.prototype.then` only affects its own results.
 */

/** Script name of user code; stack frames carrying it give the line and column in the source. */
export const USER_FILENAME = 'user-source';
export const DRIVER_FILENAME = 'kubeglue-sandbox-driver';

/** Longest error message taken out of the sandbox (a thrown 10 MB string stays inside). */
const MAX_MESSAGE_CHARS = 2000;
/** Results nested deeper than this are not inspected for functions (JSON.stringify still runs). */
const MAX_INSPECTED_DEPTH = 256;

/**
 * The user source, wrapped so that it is evaluated lazily inside the driver: running the script gives
 * a thunk. The source sits on its own lines; compile it with `lineOffset: -1` and positions are those
 * of the user's text.
 */
export function wrapUserSource(source: string): string {
  return `(() => (\n${normalizeSource(source)}\n));`;
}

export const EMPTY_SOURCE_MESSAGE =
  'the source must be a function expression such as (sourceData) => sourceData.items, but it is empty';

/** Trailing whitespace and one trailing `;` are tolerated (`(s) => s.x;` is a common paste). */
export function normalizeSource(source: string): string {
  const trimmed = source.trimEnd();
  return trimmed.endsWith(';') ? trimmed.slice(0, -1) : trimmed;
}

/**
 * Memory V8 commits outside the ArrayBuffer allocator is not counted by isolated-vm's memory limit:
 * WebAssembly memories (`new WebAssembly.Memory({initial: 4096})`, 256 MB, got through a 128 MB
 * limit) and resizable or growable buffers (`new ArrayBuffer(n, {maxByteLength})`,
 * `new SharedArrayBuffer(n, {maxByteLength})`), which reserve address space and commit it as they
 * grow. They cannot be counted from outside V8, so before any user code runs in a context:
 * - `WebAssembly` is deleted. Nothing else refers to it, so nothing brings it back: not
 *   `Function('return this')()` or indirect eval (the same global), and a script cannot create
 *   another context. (A process-wide V8 flag would disable it in the host too, where undici
 *   compiles its HTTP parser to WebAssembly.)
 * - `ArrayBuffer` and `SharedArrayBuffer` become constructors that refuse `maxByteLength` and
 *   otherwise construct through the original (fixed-length buffers are counted). Both references to
 *   each original, the global and `prototype.constructor`, are replaced, so
 *   `Object.getPrototypeOf(buffer).constructor`, `class extends ArrayBuffer` and `Reflect.construct`
 *   meet the new one; `instanceof`, `isView` and species behave as before.
 */
const LOCKDOWN_SOURCE = `
  delete globalThis.WebAssembly;
  for (const name of ['ArrayBuffer', 'SharedArrayBuffer']) {
    const Original = globalThis[name];
    if (typeof Original !== 'function') continue;
    const construct = Reflect.construct;
    const Fixed = function (length, options) {
      if (new.target === undefined) throw new TypeError("Constructor " + name + " requires 'new'");
      if (options !== null && typeof options === 'object' && options.maxByteLength !== undefined) {
        throw new RangeError('resizable ' + name + 's (maxByteLength) are not available in the sandbox: their memory would escape its memory limit');
      }
      return construct(Original, [length], new.target);
    };
    Object.defineProperty(Fixed, 'name', { value: name });
    Object.defineProperty(Fixed, 'length', { value: 1 });
    for (const key of Reflect.ownKeys(Original)) {
      if (key === 'name' || key === 'length' || key === 'prototype') continue;
      Object.defineProperty(Fixed, key, Object.getOwnPropertyDescriptor(Original, key));
    }
    Object.defineProperty(Fixed, 'prototype', { value: Original.prototype, writable: false, enumerable: false, configurable: false });
    Object.defineProperty(Original.prototype, 'constructor', { value: Fixed, writable: true, enumerable: false, configurable: true });
    Object.defineProperty(globalThis, name, { value: Fixed, writable: true, enumerable: false, configurable: true });
  }
`;

/** What the sandbox tells about a missing WebAssembly (decodeReply adds it to the ReferenceError). */
export const WEBASSEMBLY_UNAVAILABLE =
  'WebAssembly is not available in the sandbox: its memory would escape the memory limit';

export const DRIVER_SOURCE = `(function () {
  'use strict';
  ${LOCKDOWN_SOURCE}
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const apply = Reflect.apply;
  const getPrototypeOf = Object.getPrototypeOf;
  const objectKeys = Object.keys;
  const isArray = Array.isArray;
  const objectProto = Object.prototype;
  const PromiseCtor = Promise;
  const promiseResolve = Promise.resolve;
  const promiseThen = Promise.prototype.then;
  const stringOf = String;
  const regExpExec = RegExp.prototype.exec;
  const stringSlice = String.prototype.slice;
  const defineProperty = Object.defineProperty;
  const hasOwn = Object.prototype.hasOwnProperty;
  const ErrorCtor = Error;
  const userFrame = /\\n\\s*at [^\\n]*?${USER_FILENAME}:(\\d+):(\\d+)/;
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

  function clip(text) {
    return text.length > ${MAX_MESSAGE_CHARS} ? apply(stringSlice, text, [0, ${MAX_MESSAGE_CHARS}]) + '…' : text;
  }

  // Strings go through JSON.stringify as primitives, so no user-installed toJSON can interfere.
  function encodeFailure(kind, name, message, line, column) {
    let text = 'E{"kind":' + jsonStringify(kind) + ',"message":' + jsonStringify(clip(message));
    if (typeof name === 'string' && name !== '') text += ',"name":' + jsonStringify(clip(name));
    if (line > 0) text += ',"line":' + line + ',"column":' + column;
    return text + '}';
  }

  function renderThrown(value) {
    if (typeof value === 'string') return value;
    try {
      const json = jsonStringify(value);
      if (typeof json === 'string') return json;
    } catch {}
    return stringOf(value);
  }

  function encodeThrown(error) {
    try {
      if (error !== null && typeof error === 'object' && typeof error.message === 'string') {
        const name = typeof error.name === 'string' ? error.name : 'Error';
        const stack = typeof error.stack === 'string' ? error.stack : '';
        const at = apply(regExpExec, userFrame, [stack]);
        const line = at ? +at[1] : 0;
        const column = at ? +at[2] : 0;
        return encodeFailure('runtime', name, error.message, line, column);
      }
      return encodeFailure('runtime', '', 'Uncaught ' + renderThrown(error), 0, 0);
    } catch {
      return encodeFailure('runtime', '', 'an exception was thrown that cannot be described', 0, 0);
    }
  }

  function describe(value) {
    if (value === null) return 'null';
    const type = typeof value;
    if (type === 'function') return 'a function';
    if (type === 'symbol') return 'a symbol';
    if (type === 'bigint') return 'a BigInt';
    if (type !== 'object') return 'a ' + type;
    const proto = getPrototypeOf(value);
    const ctor = proto !== null ? proto.constructor : undefined;
    const name = typeof ctor === 'function' && typeof ctor.name === 'string' && ctor.name ? ctor.name : 'Object';
    if (name === 'Promise') return 'a Promise (await it, e.g. await Promise.all(...))';
    return 'a ' + name + ' object';
  }

  function member(key) {
    return apply(regExpExec, identifier, [key]) ? '.' + key : '[' + jsonStringify(key) + ']';
  }

  // Finds the first value JSON.stringify would silently drop or mangle: functions, symbols,
  // BigInts, and objects other than plain objects and arrays (Map, Set, Promise, class instances).
  // Objects with a toJSON method (Date) are left to JSON.stringify.
  function findNonJson(value, depth) {
    if (value === null) return undefined;
    const type = typeof value;
    if (type === 'string' || type === 'number' || type === 'boolean' || type === 'undefined') return undefined;
    if (type !== 'object') return { what: describe(value), path: '' };
    if (depth > ${MAX_INSPECTED_DEPTH} || typeof value.toJSON === 'function') return undefined;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const found = findNonJson(value[i], depth + 1);
        if (found !== undefined) {
          found.path = '[' + i + ']' + found.path;
          return found;
        }
      }
      return undefined;
    }
    const proto = getPrototypeOf(value);
    if (proto !== objectProto && proto !== null) return { what: describe(value), path: '' };
    const keys = objectKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const found = findNonJson(value[keys[i]], depth + 1);
      if (found !== undefined) {
        found.path = member(keys[i]) + found.path;
        return found;
      }
    }
    return undefined;
  }

  function encodeResult(value) {
    try {
      const found = findNonJson(value, 0);
      if (found !== undefined) {
        const what = found.path === '' ? 'it is ' + found.what : 'it contains ' + found.what + ' at $' + found.path;
        return encodeFailure('runtime', 'TypeError', 'the result is not JSON: ' + what, 0, 0);
      }
      const json = jsonStringify(value);
      return typeof json === 'string' ? json : 'null';
    } catch (error) {
      return encodeThrown(error);
    }
  }

  // The pair [result, first[capture]]: the property is read after the call, so both a changed key and a
  // replaced object count. It must be JSON like a result (a function in it fails the evaluation).
  function encodeCaptured(value, first, capture) {
    const result = encodeResult(value);
    if (capture === undefined || result.charCodeAt(0) === 69) return result;
    try {
      const kept = first !== null && typeof first === 'object' ? first[capture] : undefined;
      const found = findNonJson(kept, 0);
      if (found !== undefined) {
        const what = found.path === '' ? 'it is ' + found.what : 'it contains ' + found.what + ' at $' + found.path;
        return encodeFailure('runtime', 'TypeError', 'sourceData.' + capture + ' is not JSON: ' + what, 0, 0);
      }
      const json = jsonStringify(kept);
      return '[' + result + ',' + (typeof json === 'string' ? json : 'null') + ']';
    } catch (error) {
      return encodeThrown(error);
    }
  }

  // A guarded property exists (its name shows in Object.keys and in errors) but reading it throws the
  // given message; the value never entered the context. Assigning replaces it with an ordinary value.
  function defineGuard(holder, key, message) {
    defineProperty(holder, key, {
      get() {
        throw new ErrorCtor(message);
      },
      set(value) {
        defineProperty(holder, key, { value, writable: true, enumerable: true, configurable: true });
      },
      enumerable: true,
      configurable: true,
    });
  }

  // Objects missing on a guard's path are created; a path through a value that is not an object is
  // left alone (nothing is there to read).
  function installGuards(root, guards) {
    for (let i = 0; i < guards.length; i++) {
      const path = guards[i].path;
      let holder = root;
      for (let j = 0; j < path.length - 1 && holder !== undefined; j++) {
        const key = path[j];
        if (!apply(hasOwn, holder, [key])) {
          const created = {};
          defineProperty(holder, key, { value: created, writable: true, enumerable: true, configurable: true });
          holder = created;
        } else {
          const next = holder[key];
          holder = next !== null && typeof next === 'object' && !isArray(next) ? next : undefined;
        }
      }
      if (holder !== undefined) defineGuard(holder, path[path.length - 1], guards[i].message);
    }
  }

  function isThenable(value) {
    return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';
  }

  function run(thunk, input, guarded, capture) {
    let fn;
    try {
      fn = thunk();
    } catch (error) {
      return encodeThrown(error);
    }
    if (typeof fn !== 'function') {
      return encodeFailure('compile', 'TypeError',
        'the source must be a function expression such as (sourceData) => ..., but it evaluates to ' + describe(fn), 0, 0);
    }
    try {
      const args = jsonParse(input);
      const first = args[0];
      if (guarded !== undefined && first !== null && typeof first === 'object' && !isArray(first)) {
        installGuards(first, jsonParse(guarded));
      }
      const result = apply(fn, undefined, args);
      const encode = capture === undefined ? encodeResult : (value) => encodeCaptured(value, first, capture);
      if (isThenable(result)) {
        return apply(promiseThen, apply(promiseResolve, PromiseCtor, [result]), [encode, encodeThrown]);
      }
      return encode(result);
    } catch (error) {
      return encodeThrown(error);
    }
  }

  return run;
})();`;
