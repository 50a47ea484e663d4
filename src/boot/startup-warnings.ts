import ipaddr from 'ipaddr.js';
import type { Config } from '../config.js';
import { exposedDataFiles } from '../lib/data-dir.js';

/** Whether HOST listens on this machine only (a loopback address or `localhost`). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (!ipaddr.isValid(bare)) return false;
  const address = ipaddr.process(bare);
  return address.range() === 'loopback';
}

/**
 * What an operator should hear once at start about a configuration that works but is risky:
 * keys sent in clear text over a public interface, and tenant data other local users may read.
 */
export function startupWarnings(
  config: Pick<Config, 'role' | 'host' | 'tlsCertFile' | 'behindTlsProxy' | 'databaseUrl' | 'dataDir'>,
): { message: string; fields: Record<string, unknown> }[] {
  const warnings: { message: string; fields: Record<string, unknown> }[] = [];
  if (
    config.role !== 'worker' &&
    config.tlsCertFile === undefined &&
    !config.behindTlsProxy &&
    !isLoopbackHost(config.host)
  )
    warnings.push({
      message:
        `serving plain HTTP on ${config.host}, beyond this machine: project keys would cross the network in clear text. ` +
        'Set TLS_CERT_FILE and TLS_KEY_FILE, or put a TLS-terminating proxy in front (deploy/) and set BEHIND_TLS_PROXY=true, ' +
        'or listen on HOST=127.0.0.1',
      fields: { host: config.host },
    });
  const exposed = config.databaseUrl === undefined ? exposedDataFiles(config.dataDir) : [];
  if (exposed.length > 0) {
    const files = exposed.filter((e) => e.path !== config.dataDir).map((e) => e.path);
    const fixes = [
      ...(files.length < exposed.length ? [`chmod 700 ${config.dataDir}`] : []),
      ...(files.length > 0 ? [`chmod 600 ${files.join(' ')}`] : []),
    ];
    warnings.push({
      message:
        "DATA_DIR is readable by other users of this machine, and it holds every project's data and the key that " +
        `seals push credentials: ${fixes.join(' and ')}`,
      fields: { data_dir: config.dataDir, exposed: exposed.map((e) => `${e.path} (${e.mode})`) },
    });
  }
  return warnings;
}
