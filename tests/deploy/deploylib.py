"""deploylib.py — what the deploy tests (image.py, package.py, bundle.py) share:
Debian packages they install when missing, the mmdebstrap minbase root they
cache in the build tree, a free port, checks, and waiting on a condition."""
import os
import shutil
import socket
import subprocess
import sys
import time

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print('FAIL', what, flush=True)
    return ok


def finish():
    print('ok' if not failures else f'{len(failures)} failure(s)', flush=True)
    sys.exit(1 if failures else 0)


def skip(why):
    print(f'{why}: skipped', flush=True)
    sys.exit(77)


def run(cmd, **kw):
    """cmd, its output captured as text; never raises on a status"""
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def need_packages(*pkgs):
    """Installs the Debian packages missing (as root, with apt-get); False
    when one is still missing."""
    missing = [p for p in pkgs if run(['dpkg-query', '-W', '-f=${Status}', p]).stdout != 'install ok installed']
    if missing and os.geteuid() == 0 and shutil.which('apt-get'):
        r = run(['apt-get', 'install', '-y', '--no-install-recommends', *missing],
                env=dict(os.environ, DEBIAN_FRONTEND='noninteractive'))
        if r.returncode != 0:
            print(r.stdout[-1000:], r.stderr[-1000:])
    return all(run(['dpkg-query', '-W', '-f=${Status}', p]).stdout == 'install ok installed' for p in pkgs)


def minbase(build_dir):
    """A minimal Debian 12 root as a tarball (`mmdebstrap --variant=minbase
    bookworm`), made once and kept in BUILD/deploy-cache; None when it cannot
    be made (no mmdebstrap, no mirror)."""
    cache = os.path.join(build_dir, 'deploy-cache')
    tar = os.path.join(cache, 'bookworm-minbase.tar')
    if os.path.exists(tar):
        return tar
    if not shutil.which('mmdebstrap'):
        return None
    os.makedirs(cache, exist_ok=True)
    t0 = time.monotonic()
    r = run(['mmdebstrap', '--variant=minbase', '--format=tar', 'bookworm', tar + '.tmp'])
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return None
    os.replace(tar + '.tmp', tar)
    print(f'made {tar} in {time.monotonic() - t0:.0f} s (kept for the next run)', flush=True)
    return tar


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for(pred, what, limit=120):
    """pred() polled until it is true (its value is returned); a failure
    naming what after limit seconds"""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise SystemExit(f'FAIL timed out waiting for {what}')
