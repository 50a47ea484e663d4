import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { listenOnLoopback } from '../helpers/ports.js';

const run = promisify(execFile);

export interface LocalRegistry {
  /** For npm's `--registry`. */
  url: string;
  /** Package names npm asked for (a request for anything else is answered 404). */
  requested: string[];
  close(): Promise<void>;
}

/**
 * An npm registry on loopback serving the packages of `nodeModules` (one version each, the installed
 * one), packed on demand into `dir`: an install that needs a package from "the registry" gets it
 * with no network, through npm's own registry protocol (a packument, then the tarball with its
 * integrity). Scoped names are served too.
 */
export async function startLocalRegistry(nodeModules: string, dir: string): Promise<LocalRegistry> {
  const requested: string[] = [];
  const tarballs = new Map<string, Promise<string>>();
  const pack = (name: string) => {
    let packed = tarballs.get(name);
    if (!packed) {
      packed = run('npm', [
        'pack',
        '--json',
        '--ignore-scripts',
        '--pack-destination',
        dir,
        path.join(nodeModules, name),
      ]).then(({ stdout }) => path.join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename));
      tarballs.set(name, packed);
    }
    return packed;
  };
  let base = '';
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').slice(1));
    const tarball = /^-\/(.+)\.tgz$/.exec(url)?.[1];
    const name = tarball ?? url;
    const manifestFile = path.join(nodeModules, name, 'package.json');
    if (!/^(@[a-z0-9._-]+\/)?[a-z0-9._-]+$/.test(name) || !fs.existsSync(manifestFile)) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    void pack(name).then(
      (file) => {
        const body = fs.readFileSync(file);
        if (tarball) {
          res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
          return;
        }
        requested.push(name);
        const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as Record<string, unknown> & {
          version: string;
        };
        const version = {
          ...manifest,
          _id: `${name}@${manifest.version}`,
          dist: {
            tarball: `${base}/-/${encodeURIComponent(name)}.tgz`,
            integrity: `sha512-${crypto.createHash('sha512').update(body).digest('base64')}`,
            shasum: crypto.createHash('sha1').update(body).digest('hex'),
          },
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            name,
            'dist-tags': { latest: manifest.version },
            versions: { [manifest.version]: version },
          }),
        );
      },
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return {
    url: base,
    requested,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
