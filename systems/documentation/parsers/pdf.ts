/** PDF text through unpdf (a serverless build of Mozilla's PDF.js, pure JavaScript). */
import { extractText } from 'unpdf';
import type { TextDocument } from './summary.ts';
import { parsePlainText } from './text.ts';

/** One section per page (longer pages split further); the page number is the section heading. */
export async function parsePdf(bytes: Uint8Array, source: string): Promise<TextDocument> {
  // PDF.js takes ownership of (detaches) the buffer it is given: hand it a copy.
  const { text } = await extractText(new Uint8Array(bytes), { mergePages: false });
  const labels = text.map((_, index) => `Page ${index + 1}`);
  return parsePlainText(text.join('\f'), source, 'pdf', labels);
}
