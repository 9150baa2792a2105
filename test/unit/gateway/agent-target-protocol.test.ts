import { expect, it } from 'vitest';
import { inferProtocol } from '../../../agent/config.ts';

it("guesses a target's protocol from its well-known port, else tcp", () => {
  expect(inferProtocol(5432)).toBe('postgres');
  expect(inferProtocol(6379)).toBe('redis');
  expect(inferProtocol(22)).toBe('sftp');
  expect(inferProtocol(16379)).toBe('tcp');
});
