/** An error with the HTTP status the API answers with; its message is safe to show to the client. */
export class ApiError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export const notFound = (what: string) => new ApiError(404, `${what} not found`);
export const badRequest = (message: string) => new ApiError(400, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const conflict = (message: string) => new ApiError(409, message);
