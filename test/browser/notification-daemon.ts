import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import dbus from 'dbus-next';

/**
 * The desktop's notification server, faked at its wire protocol: a private D-Bus session bus
 * (`dbus-daemon`) on which this process owns `org.freedesktop.Notifications` (the freedesktop
 * Desktop Notifications spec). Chromium on Linux hands web notifications to that server, and a click
 * is the server's `ActionInvoked(id, "default")` signal: Chromium then dispatches a real, trusted
 * `notificationclick` to the service worker, the only kind allowed to open a window. Nothing in the
 * page or the worker is touched.
 */
export interface NotificationDaemon {
  /** Give it to Chromium as DBUS_SESSION_BUS_ADDRESS. */
  busAddress: string;
  /** Notifications Chromium asked the desktop to show, in order. */
  shown: { id: number; appName: string; summary: string; body: string; actions: string[] }[];
  /** Clicks a shown notification, as the user would on the desktop. */
  click(id: number): void;
  close(): Promise<void>;
}

/**
 * A session bus that activates nothing (no service directories) and lets this test own any name. It
 * listens on a socket file (`unix:path=`), which dbus-next reaches with Node's own `net`: an abstract
 * socket (`unix:tmpdir=` on Linux) would need its optional native `usocket`, which package.json's
 * `allowScripts` keeps from being compiled (nothing native is built at install).
 */
const busConfig = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`;

export async function startNotificationDaemon(): Promise<NotificationDaemon> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-dbus-'));
  const configFile = path.join(dir, 'session.conf');
  fs.writeFileSync(configFile, busConfig(path.join(dir, 'bus')));
  const daemon = spawn('dbus-daemon', [`--config-file=${configFile}`, '--nofork', '--print-address=1'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const busAddress = await new Promise<string>((resolve, reject) => {
    daemon.once('error', reject);
    daemon.once('exit', (code) => reject(new Error(`dbus-daemon exited (${code})`)));
    daemon.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim()));
  });

  const shown: NotificationDaemon['shown'] = [];
  let nextId = 1;
  class Notifications extends dbus.interface.Interface {
    GetCapabilities() {
      return ['actions', 'body'];
    }
    Notify(
      appName: string,
      replacesId: number,
      _icon: string,
      summary: string,
      body: string,
      actions: string[],
      _hints: unknown,
      _timeout: number,
    ) {
      const id = replacesId || nextId++;
      shown.push({ id, appName, summary, body, actions });
      return id;
    }
    CloseNotification(_id: number) {}
    GetServerInformation() {
      return ['herald-test', 'herald', '1.0', '1.2'];
    }
    ActionInvoked(id: number, key: string) {
      return [id, key];
    }
    NotificationClosed(id: number, reason: number) {
      return [id, reason];
    }
  }
  Notifications.configureMembers({
    methods: {
      GetCapabilities: { inSignature: '', outSignature: 'as' },
      Notify: { inSignature: 'susssasa{sv}i', outSignature: 'u' },
      CloseNotification: { inSignature: 'u', outSignature: '' },
      GetServerInformation: { inSignature: '', outSignature: 'ssss' },
    },
    signals: { ActionInvoked: { signature: 'us' }, NotificationClosed: { signature: 'uu' } },
  });
  const server = new Notifications('org.freedesktop.Notifications');
  const bus = dbus.sessionBus({ busAddress });
  bus.export('/org/freedesktop/Notifications', server);
  await bus.requestName('org.freedesktop.Notifications', 0);

  return {
    busAddress,
    shown,
    click: (id) => void server.ActionInvoked(id, 'default'),
    async close() {
      bus.disconnect();
      daemon.kill();
      await new Promise((resolve) => (daemon.exitCode === null ? daemon.once('exit', resolve) : resolve(null)));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
