/**
 * The signed-in API key. It lives in this tab's sessionStorage (gone when the tab closes, never shared
 * with other tabs, never in localStorage or a URL) so a reload keeps the user signed in; sign out removes
 * it. What the key may do comes from `GET /v1/me`, asked at sign-in and after each reload.
 */
import { computed, signal } from '@preact/signals';
import * as routes from '../contract/api/route-paths.ts';
import { ApiClient, ApiFailure } from './api/client.ts';
import type { Me } from './api/types.ts';

const STORAGE_NAME = 'kubeglue.apiKey';

export interface Session {
  client: ApiClient;
  me: Me;
}

/** null: signed out (or the stored key is being checked). */
export const session = signal<Session | null>(null);
/** True while a key kept from before a reload is being checked. */
export const restoring = signal(false);
export const signedIn = computed(() => session.value !== null);

function stored(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_NAME);
  } catch {
    return null;
  }
}

/** Checks the key with GET /v1/me and signs in with it; throws the API's refusal (ApiFailure). */
export async function signIn(key: string): Promise<Me> {
  const trimmed = key.trim();
  if (!trimmed) {
    throw new ApiFailure({
      status: 0,
      message: 'Enter an API key',
      code: 'KEY_REQUIRED',
      hint: 'Paste a key that starts with kg_.',
    });
  }
  const client = new ApiClient(trimmed);
  const me = await client.call(routes.getMe);
  try {
    sessionStorage.setItem(STORAGE_NAME, trimmed);
  } catch {
    // Storage refused (a private mode): the key stays in memory for this page only.
  }
  session.value = { client, me };
  return me;
}

export function signOut(): void {
  try {
    sessionStorage.removeItem(STORAGE_NAME);
  } catch {
    // Nothing was stored.
  }
  session.value = null;
}

/** Signs in again with the key this tab kept; a key revoked meanwhile is dropped. */
export async function restoreSession(): Promise<void> {
  const key = stored();
  if (!key) return;
  restoring.value = true;
  try {
    await signIn(key);
  } catch (error) {
    if (error instanceof ApiFailure && (error.status === 401 || error.status === 403)) signOut();
  } finally {
    restoring.value = false;
  }
}

/** The client of the signed-in key; pages are only shown signed in. */
export function client(): ApiClient {
  const current = session.value;
  if (!current) throw new Error('not signed in');
  return current.client;
}
