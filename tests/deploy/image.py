#!/usr/bin/env python3
"""image.py — deploy/container/Containerfile end to end with podman (ctest deploy.image).

  image.py SOURCE_DIR BUILD_DIR

Builds the image from a Debian 12 minbase root (mmdebstrap, cached in
BUILD_DIR/deploy-cache, imported as the BASE the Containerfile takes) with
tests/apps/db baked in, runs it with its port published on 127.0.0.1 and a
named volume, waits for its HEALTHCHECK (/readyz) to pass, writes a row
through a tool with the official client, restarts the container and reads
the row back (mcp.db is on the volume), then stops it: luamcp, PID 1,
handles SIGTERM and exits 0 (ignored, podman would kill it after 10 s:
status 137). The runtime image holds no compiler and runs as a user of its
own. podman's settings are in a private CONTAINERS_CONF (runc, ulimits:
/etc/containers is left alone); ip_forward and the NETAVARK firewall chains
podman's network changed are restored, and the images, container and volume
removed. Exit 77 (skipped) when podman or mmdebstrap cannot be installed or
run."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploylib import check, finish, free_port, minbase, need_packages, run, skip, wait_for  # noqa: E402

src, build_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
if os.geteuid() != 0:
    skip('not root (podman with a bridge network, mmdebstrap)')
if not need_packages('podman', 'mmdebstrap', 'runc', 'uidmap'):
    skip('podman, mmdebstrap, runc or uidmap cannot be installed')
tar = minbase(build_dir)
if not tar:
    skip('no Debian minbase root (mmdebstrap failed)')

tmp = tempfile.mkdtemp(prefix='luamcp-image-')
tag = f'{os.getpid()}-{int(time.time())}'
base, image = f'localhost/luamcp-test-base:{tag}', f'localhost/luamcp-test:{tag}'
name, volume = f'luamcp-test-{tag}', f'luamcp-test-data-{tag}'
conf = os.path.join(tmp, 'containers.conf')
# crun 1.8 refuses hybrid cgroups; root here cannot raise rlimits above the host's
open(conf, 'w').write('[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n'
                      '[engine]\nruntime = "runc"\n')
env = dict(os.environ, CONTAINERS_CONF=conf)


def podman(*args, check_rc=False):
    r = run(['podman', *args], env=env)
    if check_rc and r.returncode != 0:
        raise SystemExit(f'FAIL podman {" ".join(args)}: rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}')
    return r


# {====== the machine's network state, to put back
def firewall():
    """{(tool, table): set of `-S` lines} of iptables and ip6tables"""
    state = {}
    for tool in ('iptables', 'ip6tables'):
        if not shutil.which(tool):
            continue
        for table in ('filter', 'nat', 'mangle'):
            r = run([tool, '-t', table, '-S'])
            state[(tool, table)] = set(r.stdout.splitlines()) if r.returncode == 0 else set()
    return state


def links():
    return set(re.findall(r'^\d+: ([^:@]+)', run(['ip', '-o', 'link']).stdout, re.M))


forward_before = open('/proc/sys/net/ipv4/ip_forward').read().strip()
firewall_before, links_before = firewall(), links()


def restore_network():
    """the rules and chains podman's network added (NETAVARK*) removed, the
    bridge it made deleted, ip_forward as it was"""
    for (tool, table), after in firewall().items():
        new = after - firewall_before.get((tool, table), set())
        for rule in sorted(r for r in new if r.startswith('-A ') and 'NETAVARK' in r):
            run([tool, '-t', table, '-D', *shlex.split(rule[3:])])
        chains = [r.split()[1] for r in new if r.startswith('-N ') and 'NETAVARK' in r]
        for c in chains:
            run([tool, '-t', table, '-F', c])
        for c in chains:
            run([tool, '-t', table, '-X', c])
    for link in links() - links_before:
        if link.startswith(('podman', 'veth')):
            run(['ip', 'link', 'delete', link])
    open('/proc/sys/net/ipv4/ip_forward', 'w').write(forward_before + '\n')
# }======


def healthy():
    return podman('healthcheck', 'run', name).returncode == 0


def call(port, tool, args):
    r = run(['node', os.path.join(src, 'tests', 'deploy', 'mcp_call.mjs'), '--http',
             f'http://127.0.0.1:{port}/mcp', tool, json.dumps(args)])
    check(r.returncode == 0, f'the client called {tool}: {r.stderr[-1500:]}')
    return json.loads(r.stdout) if r.returncode == 0 else {}


def text(answer):
    try:
        return json.loads(answer['result']['content'][0]['text'])
    except (KeyError, IndexError, ValueError, TypeError):
        return None


try:
    if podman('info').returncode != 0:
        skip('podman does not run here')
    t0 = time.monotonic()
    podman('import', tar, base, check_rc=True)
    t1 = time.monotonic()
    # the docker format keeps HEALTHCHECK (OCI images have no field for it);
    # --layers=false: no intermediate images left behind
    podman('build', '--format', 'docker', '--layers=false', '--build-arg', f'BASE={base}',
           '--build-arg', 'APP=tests/apps/db', '-f', os.path.join(src, 'deploy', 'container', 'Containerfile'),
           '-t', image, src, check_rc=True)
    t2 = time.monotonic()
    print(f'base imported in {t1 - t0:.0f} s, image built in {t2 - t1:.0f} s', flush=True)

    hc = podman('image', 'inspect', '--format', '{{json .Config.Healthcheck}}', image).stdout
    check('/readyz' in hc, f'the image has a HEALTHCHECK on /readyz: {hc}')
    probe = podman('run', '--rm', '--entrypoint', 'sh', image, '-c',
                   'id -u; for p in gcc cc cmake make; do command -v $p; done; ls /usr/include | wc -l')
    lines = probe.stdout.split()
    check(probe.returncode == 0 and lines[:1] != ['0'] and lines[-1:] == ['0'] and len(lines) == 2,
          f'not root, no compiler, no headers in the runtime image: {probe.stdout!r} {probe.stderr[-500:]}')

    port = free_port()
    podman('volume', 'create', volume, check_rc=True)
    podman('run', '-d', '--name', name, '-p', f'127.0.0.1:{port}:8080', '-v', f'{volume}:/var/lib/luamcp',
           '--health-interval', 'disable', image, check_rc=True)
    wait_for(healthy, 'the container to be healthy')
    t3 = time.monotonic()
    print(f'healthy {t3 - t2:.1f} s after the build', flush=True)
    a = call(port, 'sql', {'op': 'exec', 'sql': "INSERT INTO kv(k, v) VALUES ('kept', 'across a restart')"})
    check(text(a) is not None and 'error' not in text(a), f'the row was written: {a}')
    check(a.get('server', {}).get('name') == 'db-test', f'the baked-in app answered: {a}')

    podman('restart', name, check_rc=True)
    wait_for(healthy, 'the container to be healthy again')
    a = call(port, 'sql', {'op': 'query', 'sql': "SELECT v FROM kv WHERE k = 'kept'"})
    check(text(a) == {'value': [{'v': 'across a restart'}]}, f'the row outlived the restart: {a}')
    check(podman('inspect', '--format', '{{.State.ExitCode}}', name).stdout.strip() == '0',
          'the restart stopped luamcp with SIGTERM, exit status 0')

    # podman's grace is 10 s, then SIGKILL (status 137): 0 says luamcp, PID 1, handled SIGTERM
    podman('stop', '-t', '10', name, check_rc=True)
    status = podman('inspect', '--format', '{{.State.ExitCode}}', name).stdout.strip()
    check(status == '0', f'SIGTERM ended luamcp (PID 1) with status 0, not a kill: {status}')
    logs = podman('logs', name).stderr + podman('logs', name).stdout
    check('finishing calls in flight' in logs, f'luamcp said it handled the signal: {logs[-800:]}')
finally:
    podman('rm', '-f', '-t', '0', name)
    podman('volume', 'rm', '-f', volume)
    podman('rmi', '-f', image, base)
    restore_network()
    shutil.rmtree(tmp, ignore_errors=True)
    check(open('/proc/sys/net/ipv4/ip_forward').read().strip() == forward_before, 'ip_forward restored')
    left = {k: v - firewall_before.get(k, set()) for k, v in firewall().items()}
    check(not any(left.values()), f'firewall as found: {left}')

finish()
