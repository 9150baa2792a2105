import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Paths of the throwaway PKI a test control plane runs on. Nothing here outlives the temp dir. */
export interface ControlPlanePki {
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  frontProxyCaCert: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
  /** Serving cert for other loopback servers (fault proxy, webhooks) that clients reach with the cluster CA. */
  loopbackCert: string;
  loopbackKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

const DAYS = '7';

/** Every SAN a pod or a kubeconfig could use to reach the API server of a loopback-only cluster. */
const APISERVER_SANS = [
  'DNS:localhost',
  'DNS:kubernetes',
  'DNS:kubernetes.default',
  'DNS:kubernetes.default.svc',
  'DNS:kubernetes.default.svc.cluster.local',
  'IP:127.0.0.1',
  'IP:::1',
  'IP:10.0.0.1',
];

/**
 * Generates the PKI with EC P-256 keys made in-process (much faster than RSA, and every Kubernetes
 * component accepts them) and certificates signed by the openssl CLI, in parallel where independent.
 */
export async function generatePki(dir: string): Promise<ControlPlanePki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = (name: string) => join(dir, name);
  const key = async (name: string) => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(file(`${name}.key`), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
    return publicKey.export({ type: 'spki', format: 'pem' });
  };
  const [saPub] = await Promise.all(
    ['sa', 'ca', 'front-proxy-ca', 'apiserver', 'front-proxy-client', 'loopback'].map(key),
  );
  await writeFile(file('sa.pub'), saPub ?? '');

  await Promise.all([
    selfSignedCa(file('ca'), 'kubeglue-test-ca'),
    selfSignedCa(file('front-proxy-ca'), 'kubeglue-test-front-proxy-ca'),
  ]);
  await Promise.all([
    leaf(dir, 'apiserver', 'ca', '/CN=kube-apiserver', 'serverAuth', APISERVER_SANS),
    leaf(dir, 'loopback', 'ca', '/CN=kubeglue-test-loopback', 'serverAuth', [
      'DNS:localhost',
      'IP:127.0.0.1',
    ]),
    leaf(dir, 'front-proxy-client', 'front-proxy-ca', '/CN=front-proxy-client', 'clientAuth', []),
  ]);
  return {
    caCert: file('ca.crt'),
    caKey: file('ca.key'),
    apiserverCert: file('apiserver.crt'),
    apiserverKey: file('apiserver.key'),
    frontProxyCaCert: file('front-proxy-ca.crt'),
    frontProxyClientCert: file('front-proxy-client.crt'),
    frontProxyClientKey: file('front-proxy-client.key'),
    loopbackCert: file('loopback.crt'),
    loopbackKey: file('loopback.key'),
    serviceAccountKey: file('sa.key'),
    serviceAccountPub: file('sa.pub'),
  };
}

async function selfSignedCa(base: string, cn: string): Promise<void> {
  await run('openssl', [
    ...['req', '-x509', '-new', '-key', `${base}.key`, '-out', `${base}.crt`, '-days', DAYS],
    ...['-subj', `/CN=${cn}`, '-addext', 'basicConstraints=critical,CA:TRUE'],
    ...['-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature'],
  ]);
}

async function leaf(
  dir: string,
  name: string,
  ca: string,
  subject: string,
  usage: 'serverAuth' | 'clientAuth',
  sans: string[],
): Promise<void> {
  const base = join(dir, name);
  // x509 -req with an extfile instead of `req -x509 -CA` (OpenSSL 3 only) so OpenSSL 1.1 works too.
  const ext = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${usage}`,
    ...(sans.length > 0 ? [`subjectAltName=${sans.join(',')}`] : []),
  ].join('\n');
  await writeFile(`${base}.ext`, `${ext}\n`);
  await run('openssl', ['req', '-new', '-key', `${base}.key`, '-subj', subject, '-out', `${base}.csr`]);
  await run('openssl', [
    ...[
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      join(dir, `${ca}.crt`),
      '-CAkey',
      join(dir, `${ca}.key`),
    ],
    ...['-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', DAYS],
    ...['-extfile', `${base}.ext`, '-out', `${base}.crt`],
  ]);
}
