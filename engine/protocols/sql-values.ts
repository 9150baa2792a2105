/** Database values as JSON without losing precision: what SQL steps (Postgres, MySQL) share. */

/** Significant digits a double holds exactly. */
const MAX_EXACT_DIGITS = 15;

/** An integer's text as a number when it is a safe integer, else the exact decimal text. */
export function safeInteger(text: string): number | string {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
}

/** An exact decimal's text as a number when at most 15 significant digits (exact in a double), else the text. */
export function exactDecimal(text: string): number | string {
  const digits = text
    .replace(/^[-+]?0*/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  const value = Number(text);
  return Number.isFinite(value) && digits.length <= MAX_EXACT_DIGITS ? value : text;
}
