/**
 * The logic behind the system form's protocols, without a browser: the dashboard's protocol table names
 * every scheme the contract does (contract/step-protocols.ts: the dashboard may import only its types),
 * a URL's scheme picks the protocol, a protocol's login has its fields, and changing the protocol keeps
 * every stored credential. The browser tests (test/integration/ui/systems.test.ts) use them through the form.
 */
import { describe, expect, it } from 'vitest';
import { NOT_YET_SUPPORTED_SCHEMES, STEP_SCHEMES } from '../../../contract/step-protocols.ts';
import { credentialsToSend, draftOf, fieldsFor, relayout } from '../../../ui/pages/systems/credentials.ts';
import {
  notYetName,
  PROTOCOL_ORDER,
  PROTOCOLS,
  protocolOfSystem,
  protocolOfUrl,
  withScheme,
} from '../../../ui/pages/systems/protocols.ts';

describe("the form's protocol table", () => {
  it('names every scheme a step speaks, under that protocol, and the ones no step speaks yet', () => {
    for (const [scheme, { protocol }] of Object.entries(STEP_SCHEMES)) {
      expect(PROTOCOLS[protocol].schemes, scheme).toContain(scheme);
      expect(PROTOCOLS[protocol].notYet, scheme).toBeUndefined();
    }
    for (const [scheme, name] of Object.entries(NOT_YET_SUPPORTED_SCHEMES)) {
      const entry = PROTOCOL_ORDER.find((protocol) => PROTOCOLS[protocol].schemes.includes(scheme));
      expect(entry && notYetName(entry), scheme).toBe(name);
    }
    const known = new Set([...Object.keys(STEP_SCHEMES), ...Object.keys(NOT_YET_SUPPORTED_SCHEMES)]);
    for (const protocol of PROTOCOL_ORDER) {
      for (const scheme of PROTOCOLS[protocol].schemes)
        expect(known, `${protocol}: ${scheme}`).toContain(scheme);
      expect(PROTOCOLS[protocol].schemes).toContain(`${PROTOCOLS[protocol].shape.split('//')[0]}`);
    }
  });

  it("gives each data store's login the fields its steps read", () => {
    const keys = (protocol: Parameters<typeof fieldsFor>[1]) =>
      fieldsFor('dataStore', protocol).map((field) => field.key);
    expect(keys('sftp')).toEqual(['username', 'password', 'privateKey', 'passphrase', 'hostFingerprint']);
    expect(keys('smb')).toEqual(['username', 'password', 'domain', 'url']);
    expect(keys('redis')).toEqual(['username', 'password', 'url', 'ca']);
    expect(keys('mysql')).toEqual(['username', 'password', 'url', 'ca']);
    expect(keys('postgres')).toEqual(['username', 'password', 'url']);
    expect(keys('ftp')).toEqual(['username', 'password', 'ca']);
    // Other methods keep their own fields whatever the protocol.
    expect(fieldsFor('bearer', 'graphql').map((field) => field.key)).toEqual(['bearerToken']);
  });
});

describe('the protocol of a URL', () => {
  it('follows the scheme typed, HTTP or GraphQL by what was chosen or the path', () => {
    expect(protocolOfUrl('redis://cache:6379/0')).toBe('redis');
    expect(protocolOfUrl('rediss://cache:6380/1')).toBe('redis');
    expect(protocolOfUrl('mariadb://db/shop')).toBe('mysql');
    expect(protocolOfUrl('mongodb+srv://cluster.example.net/events')).toBe('mongodb');
    expect(protocolOfUrl('https://api.example.com/v1')).toBe('http');
    expect(protocolOfUrl('https://api.example.com/graphql')).toBe('graphql');
    expect(protocolOfUrl('https://api.example.com/query', 'graphql')).toBe('graphql');
    expect(protocolOfUrl('gopher://old.example')).toBeUndefined();
    expect(protocolOfUrl('api.example.com')).toBeUndefined();
  });

  it("reads a stored system's protocol, GraphQL from its documentation URL's #graphql hint", () => {
    expect(protocolOfSystem({ url: 'smb://nas/files' })).toBe('smb');
    expect(
      protocolOfSystem({
        url: 'https://api.example.com',
        documentationUrl: 'https://api.example.com/query#graphql',
      }),
    ).toBe('graphql');
    expect(protocolOfSystem({})).toBe('http');
  });

  it("puts the chosen protocol's scheme in the URL, keeping the rest", () => {
    expect(withScheme('http://db.internal:3306/shop', 'mysql')).toBe('mysql://db.internal:3306/shop');
    expect(withScheme('rediss://cache/0', 'redis')).toBe('rediss://cache/0');
    expect(withScheme('', 'redis')).toBe('');
  });
});

describe('changing the protocol of a system with stored credentials', () => {
  it('keeps every stored key: a field that is gone becomes a row by name, sent back as its placeholder', () => {
    const stored = ['password', 'privateKey', 'username'];
    const sftp = fieldsFor('dataStore', 'sftp');
    const draft = draftOf(sftp, stored);
    expect(draft.extra).toEqual([]);
    const redis = fieldsFor('dataStore', 'redis');
    const moved = relayout({ ...draft, values: { password: 'typed-new-pw' } }, redis, stored);
    expect(moved.extra.map((row) => [row.key, row.stored])).toEqual([['privateKey', true]]);
    expect(credentialsToSend('files', redis, moved, stored)).toEqual({
      username: '<<files_username>>',
      password: 'typed-new-pw',
      privateKey: '<<files_privateKey>>',
    });
    // Back again: the row becomes the field it was.
    const back = relayout(moved, sftp, stored);
    expect(back.extra).toEqual([]);
    expect(credentialsToSend('files', sftp, back, stored)).toEqual({
      username: '<<files_username>>',
      password: 'typed-new-pw',
      privateKey: '<<files_privateKey>>',
    });
  });
});
