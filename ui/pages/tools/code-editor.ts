/**
 * The JavaScript code editor of the step builder (transforms, loop selectors, stop conditions, the output
 * transform): CodeMirror 6 with JavaScript highlighting. This module is imported only with `import()` by
 * builder.tsx, so esbuild puts CodeMirror in a chunk of its own that only pages editing code fetch
 * (docs/developers/architecture.md has its size).
 *
 * The dashboard's CSP (`style-src 'self'`) refuses `<style>` elements, which CodeMirror (style-mod) writes
 * into a document's head. In a shadow root it uses constructable stylesheets (`adoptedStyleSheets`,
 * CSSOM) instead, which the policy does not govern: so each editor lives in an open shadow root of its
 * field, styled by its theme below (the page's CSS variables reach into it), and the policy stays as it is
 * (docs/security.md). The shadow root cannot point at the field's label by id, so the text box carries the
 * label's text as its aria-label, and its problems as an aria-description.
 */
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, syntaxHighlighting } from '@codemirror/language';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { EditorView, keymap, lineNumbers } from '@codemirror/view';
import { classHighlighter } from '@lezer/highlight';

export interface CodeEditorOptions {
  parent: HTMLElement;
  value: string;
  /** The field's label: the editor's text box is named by it. */
  label: string;
  /** What describes the field now (its problems, else its hint). */
  description: string | undefined;
  invalid: boolean;
  onChange: (value: string) => void;
}

export interface CodeEditorHandle {
  /** Shows `value` when the definition changed elsewhere (the JSON view, a moved card). */
  setValue(value: string): void;
  setAttributes(description: string | undefined, invalid: boolean): void;
  destroy(): void;
}

const contentAttributes = (label: string, description: string | undefined, invalid: boolean) => ({
  'aria-label': label,
  ...(description ? { 'aria-description': description } : {}),
  ...(invalid ? { 'aria-invalid': 'true' } : {}),
});

/** The editor's look, from the page's theme variables (light and dark alike). */
const theme = EditorView.theme({
  '&': {
    border: '1px solid var(--line)',
    borderRadius: '0.25rem',
    background: 'var(--bg)',
    color: 'var(--fg)',
    fontSize: '0.875rem',
    minHeight: '3.5rem',
  },
  '&.cm-focused': { outline: '2px solid var(--focus)' },
  '.cm-content': {
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
    caretColor: 'var(--fg)',
  },
  '.cm-gutters': { background: 'var(--panel)', color: 'var(--muted)', border: 'none' },
  '.tok-keyword, .tok-operator': { color: 'var(--accent)' },
  '.tok-string, .tok-string2': { color: 'var(--success)' },
  '.tok-number, .tok-bool, .tok-atom': { color: 'var(--running)' },
  '.tok-comment': { color: 'var(--muted)', fontStyle: 'italic' },
  '.tok-propertyName': { color: 'var(--aborted)' },
  '.tok-invalid': { color: 'var(--failed)' },
});

export function createCodeEditor(options: CodeEditorOptions): CodeEditorHandle {
  const { attributes, reconfigure } = attributeSlot();
  const root = options.parent.shadowRoot ?? options.parent.attachShadow({ mode: 'open' });
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc: options.value,
      extensions: [
        lineNumbers(),
        history(),
        bracketMatching(),
        // Tab indents; Escape then Tab leaves the editor (CodeMirror's documented keyboard escape).
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        javascript(),
        // Tokens get classes (tok-keyword, …) coloured by the theme below from the page's variables, so
        // they follow the light and dark themes with the contrast of the rest of the page.
        syntaxHighlighting(classHighlighter),
        theme,
        EditorView.lineWrapping,
        attributes.of(
          EditorView.contentAttributes.of(
            contentAttributes(options.label, options.description, options.invalid),
          ),
        ),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    setValue(value) {
      const current = view.state.doc.toString();
      if (current !== value) view.dispatch({ changes: { from: 0, to: current.length, insert: value } });
    },
    setAttributes(description, invalid) {
      view.dispatch({
        effects: reconfigure(
          EditorView.contentAttributes.of(contentAttributes(options.label, description, invalid)),
        ),
      });
    },
    destroy: () => view.destroy(),
  };
}

/** A compartment for the text box's attributes, changed as the field's problems come and go. */
function attributeSlot() {
  const compartment = new Compartment();
  return {
    attributes: compartment,
    reconfigure: (extension: Extension) => compartment.reconfigure(extension),
  };
}
