#!/usr/bin/env python3
"""systemd.py — deploy/systemd/luamcp.service, luamcp@.service and the notify protocol (ctest deploy.systemd).

  systemd.py SOURCE_DIR LUAMCP_BINARY

Each unit (luamcp.service, and the template luamcp@.service through an
instance) passes `systemd-analyze verify` with nothing on stderr, and its
exposure (`systemd-analyze security --offline=yes`) stays at most 2.0 (the
figures are printed). A token handed over as a systemd credential
($CREDENTIALS_DIRECTORY/token, LoadCredential=) is required and never logged,
and the data folder is $STATE_DIRECTORY. Served
with $NOTIFY_SOCKET (a datagram socket of this test's) and $WATCHDOG_USEC,
luamcp sends READY=1 once listening, WATCHDOG=1 pings, none while a call
holds the engine past --unhealthy-after (the call waits for a flag file: an
event, not a clock), pings again once it moves, RELOADING=1 then READY=1 on
SIGHUP, and STOPPING=1 on SIGTERM,
then exits 0. Exit 77 (skipped) without systemd-analyze."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

src, binary = sys.argv[1], os.path.abspath(sys.argv[2])
if not shutil.which('systemd-analyze'):
    print('systemd-analyze is not installed: skipped')
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix='luamcp-systemd-')
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print('FAIL', what)


def wait_for(pred, what, limit=60):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit(f'FAIL timed out waiting for {what}')


try:
    # {====== the units: luamcp.service, and the template luamcp@.service (one app per instance)
    def verify(name, keys):
        unit = open(os.path.join(src, 'deploy', 'systemd', name), encoding='utf-8').read()
        check('/usr/local/bin/luamcp' in unit, f'{name} runs /usr/local/bin/luamcp')
        mine = os.path.join(tmp, name)  # the binary it names must exist to verify
        open(mine, 'w', encoding='utf-8').write(unit.replace('/usr/local/bin/luamcp', binary))
        # a template is verified through an instance of it (an absolute path: the file beside it)
        path = mine.replace('@.service', '@demo.service')
        v = subprocess.run(['systemd-analyze', 'verify', '--man=no', path], capture_output=True, text=True)
        check(v.returncode == 0 and v.stderr.strip() == '', f'systemd-analyze verify {name}: rc {v.returncode}: {v.stderr}')
        sec = subprocess.run(['systemd-analyze', 'security', '--offline=yes', '--threshold=20', path],
                             capture_output=True, text=True)
        check(sec.returncode == 0, f'{name}: exposure above 2.0: {sec.stdout[-300:]}{sec.stderr}')
        figure = re.search(r'Overall exposure level for \S+: ([0-9.]+)', sec.stdout)
        print(f'{name}: exposure {figure.group(1) if figure else "?"}')
        for key in keys:
            check(key in unit, f'{name} sets {key}')
        return unit

    common = ('Type=notify', 'WatchdogSec=', 'DynamicUser=yes', 'MemoryMax=', 'SystemCallFilter=@system-service')
    verify('luamcp.service', common + ('StateDirectory=luamcp\n',))
    template = verify('luamcp@.service', common + ('StateDirectory=luamcp/%i\n', 'EnvironmentFile=/etc/luamcp/%i.conf',
                                                   'LoadCredential='))
    # }======

    # {====== secrets as systemd credentials ($CREDENTIALS_DIRECTORY, LoadCredential=)
    creds = os.path.join(tmp, 'credentials')
    os.makedirs(creds)
    open(os.path.join(creds, 'token'), 'w').write('credential-token-0123456789\n')
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        cport = s.getsockname()[1]
    state = os.path.join(tmp, 'state', 'demo')
    os.makedirs(state)
    cenv = dict(os.environ, CREDENTIALS_DIRECTORY=creds, STATE_DIRECTORY=state)
    cenv.pop('LUAMCP_TOKEN', None)
    served = subprocess.Popen([binary, 'serve', '--http', f'127.0.0.1:{cport}', '--no-watch',
                               os.path.join(src, 'tests', 'apps', 'db')],
                              env=cenv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def status(headers):
            req = urllib.request.Request(f'http://127.0.0.1:{cport}/mcp', data=json.dumps(
                {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}).encode(), method='POST', headers={
                'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream', **headers})
            try:
                return urllib.request.urlopen(req, timeout=10).status
            except urllib.error.HTTPError as e:
                return e.code
            except OSError:
                return None

        wait_for(lambda: status({}) is not None, 'the server with credentials to listen')
        check(status({}) == 401, 'the token credential is required')
        ok = status({'Authorization': 'Bearer credential-token-0123456789'})
        check(ok not in (401, 403, None),
              f'the token credential lets its bearer in: {ok}')
    finally:
        served.terminate()
        err = served.communicate(timeout=60)[1]
    check('credential-token' not in err, 'the token is never logged')
    check(f'data folder: {state}' in err, f'the data folder is $STATE_DIRECTORY: {err[-500:]}')
    # }======

    # {====== the notify protocol
    app = os.path.join(tmp, 'app')
    os.makedirs(os.path.join(app, 'scripts'))
    flag = os.path.join(tmp, 'go')
    open(os.path.join(app, 'scripts', 'wedge.lua'), 'w').write(
        'local mcp = require "mcp"\n'
        'mcp.tool { name = "wedge", description = "Blocks in C until its flag exists.",\n'
        '  input = { flag = mcp.string() },\n'
        '  handler = function(a) os.execute("until [ -e \'" .. a.flag .. "\' ]; do sleep 0.05; done") return "moved" end }\n')
    sock_path = os.path.join(tmp, 'notify')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.05)
    got = []

    def drain():
        while True:
            try:
                got.append(sock.recv(4096).decode())
            except (socket.timeout, BlockingIOError):
                return

    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC='200000')
    env.pop('WATCHDOG_PID', None)
    proc = subprocess.Popen([binary, 'serve', '--http', f'127.0.0.1:{port}', '--unhealthy-after', '0.3', '--no-watch', app],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (drain(), any(m.startswith('READY=1') for m in got))[1], 'READY=1')
        check(any(f'127.0.0.1:{port}/mcp' in m for m in got if m.startswith('READY=1')), f'READY names the URL: {got}')
        wait_for(lambda: (drain(), sum(m == 'WATCHDOG=1' for m in got) >= 2)[1], 'two WATCHDOG=1 pings')
        meta = {'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}}
        body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call',
                           'params': {'name': 'wedge', 'arguments': {'flag': flag}, '_meta': meta}}).encode()
        req = urllib.request.Request(f'http://127.0.0.1:{port}/mcp', data=body, method='POST', headers={
            'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
            'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'wedge'})
        answer = {}
        caller = threading.Thread(target=lambda: answer.update(r=urllib.request.urlopen(req, timeout=120).read()))
        caller.start()

        def unhealthy():
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=10)
                return False
            except urllib.error.HTTPError as e:
                return e.code == 503

        wait_for(unhealthy, '/healthz to say unhealthy')
        time.sleep(0.15)  # a ping decided just before the stall showed may still be on its way
        drain()
        got.clear()
        time.sleep(0.6)   # three intervals of WATCHDOG_USEC/2 while still wedged: none may come
        drain()
        check(not any(m == 'WATCHDOG=1' for m in got), f'no ping while wedged: {got}')
        open(flag, 'w').close()
        caller.join(120)
        check(b'moved' in answer.get('r', b''), f'the call moved: {answer}')
        got.clear()
        wait_for(lambda: (drain(), 'WATCHDOG=1' in got)[1], 'pings again once it moved')
        # systemctl reload (ExecReload: SIGHUP): RELOADING=1 at once, READY=1 once it is done
        got.clear()
        proc.send_signal(signal.SIGHUP)
        wait_for(lambda: (drain(), any(m.startswith('READY=1') for m in got))[1], 'READY=1 after the SIGHUP reload')
        first = [m for m in got if m.startswith(('RELOADING=1', 'READY=1'))]
        check(first[0].startswith('RELOADING=1\nMONOTONIC_USEC=') and first[1].startswith('READY=1'),
              f'RELOADING=1 (with MONOTONIC_USEC) before READY=1: {got}')
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: (drain(), 'STOPPING=1' in got)[1], 'STOPPING=1 on SIGTERM')
        check(proc.wait(60) == 0, f'exit status {proc.returncode}')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sock.close()
    # }======
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print('ok' if not failures else f'{len(failures)} failure(s)')
sys.exit(1 if failures else 0)
