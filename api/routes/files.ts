import { KG_ERR_DOWNLOAD_LINK_INVALID, KG_ERR_FILE_NOT_FOUND } from '../../contract/api/errors.ts';
import type { FileUrlSigner } from '../../runs/file-urls.ts';
import type { StoreQueries } from '../../store/index.ts';
import type { HandlersOf } from './register.ts';

export interface FileDownloadRouteDeps {
  signer: FileUrlSigner;
  store: Pick<StoreQueries, 'getRunFile'>;
}

/** A MIME type safe to echo in a header; anything else (it came from a user's transform) is served as bytes. */
const MIME_TYPE =
  /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(?:\s*;\s*[A-Za-z0-9!#$&^_.+-]+=(?:[A-Za-z0-9!#$&^_.+-]+|"[^"\\\r\n]*"))*$/;

/**
 * `GET /v1/files/:runId/:fileKey?expires=…&signature=…`: the presigned download. It needs no API
 * key (the signature is the authorisation), so the signature is checked before the store is read.
 */
export function fileDownloadHandlers(deps: FileDownloadRouteDeps): HandlersOf<'downloadFile'> {
  return {
    downloadFile: {
      // A repeated parameter arrives as an array: such a URL was not made by the signer.
      invalid: () => KG_ERR_DOWNLOAD_LINK_INVALID(),
      handle: async ({ params: { runId, fileKey }, query }, _request, reply) => {
        deps.signer.verify(runId, fileKey, query);
        const file = await deps.store.getRunFile(runId, fileKey);
        if (file === undefined) throw KG_ERR_FILE_NOT_FOUND(fileKey, runId);
        return (
          reply
            .header(
              'Content-Type',
              MIME_TYPE.test(file.contentType) ? file.contentType : 'application/octet-stream',
            )
            .header('Content-Length', String(file.content.byteLength))
            .header('Content-Disposition', contentDisposition(file.filename))
            // The bytes come from a user's transform and are served from the API's origin: should a browser
            // render them anyway (an old one ignoring attachment, a user opening the link), they run in a
            // sandbox without scripts, forms or the origin's cookies, and their type is never guessed.
            .header('Content-Security-Policy', 'sandbox')
            .header('X-Content-Type-Options', 'nosniff')
            .send(Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength))
        );
      },
    },
  };
}

/** `attachment` with an ASCII fallback name and the exact name in RFC 8187 form. */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
