import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from './server.js';

describe('freePort', () => {
  it('hands out distinct ports that can be listened on, below the ephemeral range outgoing connections take theirs from', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 200; i += 1) ports.push(await freePort());
    assert.equal(new Set(ports).size, ports.length, 'no port is handed out twice');
    const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    for (const port of ports) assert.ok(port < ephemeralStart, `${port} is below ${ephemeralStart}`);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(ports[0], '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});
