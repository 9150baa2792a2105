/** PEM keys and certificates pasted into single-line fields often arrive with literal `\n`. */
export function normalisePem(text: string): string {
  return text.includes('\n') ? text : text.replace(/\\n/g, '\n');
}
