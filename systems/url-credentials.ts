/**
 * Credentials written into a URL's userinfo (`https://user:pass@host`) would be stored and returned in clear
 * wherever the URL is (a run's options, a System's spec). Such URLs are refused where they enter.
 */

/** `scheme://…@` before the first `/`, `?` or `#` of the authority. */
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

/** Whether the URL carries a user name or password, however it is spelled (`\` counts as `/` for http). */
export function hasUrlCredentials(url: string): boolean {
  if (USERINFO.test(url)) return true;
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}
