/**
 * The NTSTATUS codes an SMB2 server answers with that a step can meet, named as MS-ERREF names them and
 * said in words a user can act on. Codes not listed here are shown by number.
 */

export const STATUS = {
  SUCCESS: 0x00000000,
  PENDING: 0x00000103,
  NO_MORE_FILES: 0x80000006,
  MORE_PROCESSING_REQUIRED: 0xc0000016,
  END_OF_FILE: 0xc0000011,
  OBJECT_NAME_NOT_FOUND: 0xc0000034,
  OBJECT_PATH_NOT_FOUND: 0xc000003a,
  NO_SUCH_FILE: 0xc000000f,
} as const;

const KNOWN: Record<number, [name: string, meaning: string]> = {
  3221225581: ['STATUS_LOGON_FAILURE', 'authentication failed: the server refused the user name or password'],
  3221225582: ['STATUS_ACCOUNT_RESTRICTION', 'authentication failed: the account may not log on now'],
  3221225585: ['STATUS_PASSWORD_EXPIRED', "authentication failed: the account's password has expired"],
  3221225586: ['STATUS_ACCOUNT_DISABLED', 'authentication failed: the account is disabled'],
  3221226020: [
    'STATUS_PASSWORD_MUST_CHANGE',
    "authentication failed: the account's password must be changed",
  ],
  3221226036: ['STATUS_ACCOUNT_LOCKED_OUT', 'authentication failed: the account is locked out'],
  3221225819: [
    'STATUS_LOGON_TYPE_NOT_GRANTED',
    'authentication failed: the account may not log on over the network',
  ],
  3221225676: ['STATUS_BAD_NETWORK_NAME', 'share not found: the server has no share of that name'],
  3221225506: ['STATUS_ACCESS_DENIED', 'access denied'],
  3221225524: ['STATUS_OBJECT_NAME_NOT_FOUND', 'no such file or directory'],
  3221225530: ['STATUS_OBJECT_PATH_NOT_FOUND', 'no such directory on the path'],
  3221225487: ['STATUS_NO_SUCH_FILE', 'no such file or directory'],
  3221225525: ['STATUS_OBJECT_NAME_COLLISION', 'something already exists at that path'],
  3221225523: ['STATUS_OBJECT_NAME_INVALID', 'the path is not a valid name on this server'],
  3221225729: ['STATUS_DIRECTORY_NOT_EMPTY', 'the directory is not empty'],
  3221225658: ['STATUS_FILE_IS_A_DIRECTORY', 'the path is a directory'],
  3221225731: ['STATUS_NOT_A_DIRECTORY', 'a part of the path is not a directory'],
  3221225539: ['STATUS_SHARING_VIOLATION', 'the file is in use by another client'],
  3221225558: ['STATUS_DELETE_PENDING', 'the file is being deleted'],
  3221225599: ['STATUS_DISK_FULL', 'the disk is full'],
  3221225634: ['STATUS_MEDIA_WRITE_PROTECTED', 'the share is read-only'],
  3221225489: ['STATUS_END_OF_FILE', 'end of file'],
  3221225485: ['STATUS_INVALID_PARAMETER', 'the server refused a parameter'],
  3221225659: ['STATUS_NOT_SUPPORTED', 'the server does not support this request'],
  3221225474: ['STATUS_NOT_IMPLEMENTED', 'the server does not implement this request'],
  3221225987: ['STATUS_USER_SESSION_DELETED', 'the server ended the session'],
  3221226332: ['STATUS_NETWORK_SESSION_EXPIRED', 'the session expired'],
  3221225673: ['STATUS_NETWORK_NAME_DELETED', 'the share was disconnected'],
  3221225760: ['STATUS_CANCELLED', 'the request was cancelled'],
  3221225626: ['STATUS_INSUFFICIENT_RESOURCES', 'the server is out of resources'],
  3221225569: ['STATUS_PRIVILEGE_NOT_HELD', 'the account lacks a privilege this needs'],
  3221225653: ['STATUS_IO_TIMEOUT', 'the server timed out'],
  3221225473: ['STATUS_UNSUCCESSFUL', 'the request failed'],
  3221225477: ['STATUS_ACCESS_VIOLATION', 'the server rejected the request'],
  3221225488: ['STATUS_INVALID_DEVICE_REQUEST', 'the request does not apply to this file'],
  3221225679: ['STATUS_SHARING_PAUSED', 'the share is paused'],
  3221225680: ['STATUS_REQUEST_NOT_ACCEPTED', 'the server accepts no more connections'],
};

function hex(status: number): string {
  return `0x${status.toString(16).toUpperCase().padStart(8, '0')}`;
}

/** `STATUS_LOGON_FAILURE`, or the code in hex for one not listed. */
export function statusName(status: number): string {
  return KNOWN[status]?.[0] ?? hex(status);
}

/** What a status means, then its name: `access denied (STATUS_ACCESS_DENIED)`. */
export function describeStatus(status: number): string {
  const known = KNOWN[status];
  return known ? `${known[1]} (${known[0]})` : `the server answered ${hex(status)}`;
}

/** A request the server answered with an error status. */
export class SmbStatusError extends Error {
  override name = 'SmbStatusError';
  readonly status: number;
  readonly code: string;

  constructor(status: number) {
    super(describeStatus(status));
    this.status = status;
    this.code = statusName(status);
  }
}

/** Whether a status says nothing exists at the path. */
export function isNotFound(status: number): boolean {
  return (
    status === STATUS.OBJECT_NAME_NOT_FOUND ||
    status === STATUS.OBJECT_PATH_NOT_FOUND ||
    status === STATUS.NO_SUCH_FILE
  );
}
