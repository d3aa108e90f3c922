#!/usr/bin/env python3
"""package.py — debian/ and `make deb` end to end (ctest deploy.package).

  package.py SOURCE_DIR

Builds luamcp_VERSION_ARCH.deb from a copy of the checkout (`make deb`: the
build leaves obj-*/ and debian/luamcp/ behind, not in yours), checks that
lintian reports no error and no warning, that it holds what `make install`
installs (the binary, the TLS library, mcp.d.lua, the man page, docs/), the
two systemd units (calling /usr/bin/luamcp) and /etc/luamcp/luamcp.conf as
a conffile; installs it with apt-get (which pulls the runtime libraries),
serves an app with the command line of the installed luamcp@.service
(its variables filled in as systemd would, $STATE_DIRECTORY set), calls a
tool with the official client, serves TLS through the installed TLS library,
and purges the package and whatever it pulled in. Exit 77 (skipped) when not
root, when debhelper, lintian or the build dependencies cannot be installed,
or when a luamcp package is installed already (it is left alone)."""
import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploylib import check, finish, free_port, need_packages, run, skip, wait_for  # noqa: E402

src = os.path.abspath(sys.argv[1])
if os.geteuid() != 0:
    skip('not root (apt-get install)')
if run(['dpkg-query', '-W', '-f=${Status}', 'luamcp']).stdout.endswith('installed'):
    skip('a luamcp package is installed already')
if not need_packages('debhelper', 'lintian', 'dpkg-dev', 'build-essential'):
    skip('debhelper, lintian or dpkg-dev cannot be installed')
build_deps = re.sub(r'\([^)]*\)', '', re.search(r'^Build-Depends:(.*?)^\S', open(
    os.path.join(src, 'debian', 'control')).read(), re.S | re.M).group(1)).replace(',', ' ').split()
if not need_packages(*[d for d in build_deps if d != 'debhelper-compat']):
    skip('the build dependencies cannot be installed')

env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
tmp = tempfile.mkdtemp(prefix='luamcp-deb-')


def installed():
    return set(run(['dpkg-query', '-W', '-f=${Package}\\n']).stdout.split())


before = installed()
try:
    # {====== build from a copy of the checkout
    copy = os.path.join(tmp, 'src')
    files = run(['git', '-C', src, 'ls-files', '-co', '--exclude-standard'])
    if files.returncode == 0:
        for f in files.stdout.splitlines():
            if os.path.isfile(os.path.join(src, f)) and not f.startswith('tests/'):
                os.makedirs(os.path.dirname(os.path.join(copy, f)), exist_ok=True)
                shutil.copy2(os.path.join(src, f), os.path.join(copy, f))
    else:
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns('build*', 'node_modules', '.git', 'obj-*', 'tests'))
    r = run(['make', 'deb', 'BUILD=b'], cwd=copy, env=env)
    check(r.returncode == 0, f'make deb: rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}')
    debs = [f for f in os.listdir(os.path.join(copy, 'b', 'deb')) if re.fullmatch(r'luamcp_[0-9.]+_[a-z0-9]+\.deb', f)]
    check(len(debs) == 1, f'one luamcp_VERSION_ARCH.deb: {debs}')
    deb = os.path.join(copy, 'b', 'deb', debs[0])
    # }======

    # {====== what it holds
    lint = run(['lintian', '--fail-on', 'error,warning', deb])
    check(lint.returncode == 0 and not re.search(r'^[EW]:', lint.stdout, re.M),
          f'lintian: no error, no warning: {lint.stdout}{lint.stderr}')
    contents = set(line.split()[-1].lstrip('.') for line in run(['dpkg', '-c', deb]).stdout.splitlines())
    for path in ('/usr/bin/luamcp', '/usr/lib/luamcp/libluamcp-tls.so', '/usr/share/luamcp/mcp.d.lua',
                 '/usr/share/luamcp/mcp.test.d.lua', '/usr/share/man/man1/luamcp.1.gz',
                 '/usr/share/doc/luamcp/README.md', '/usr/share/doc/luamcp/docs/deploy.md',
                 '/usr/share/doc/luamcp/copyright', '/lib/systemd/system/luamcp.service',
                 '/lib/systemd/system/luamcp@.service', '/etc/luamcp/luamcp.conf'):
        check(path in contents, f'the package holds {path}')
    conffiles = run(['dpkg-deb', '-f', deb, 'Package']).stdout  # sanity: a readable control
    check(conffiles.strip() == 'luamcp', 'the package is luamcp')
    ctl = os.path.join(tmp, 'control')
    run(['dpkg-deb', '-e', deb, ctl])
    check('/etc/luamcp/luamcp.conf' in open(os.path.join(ctl, 'conffiles')).read(),
          '/etc/luamcp/luamcp.conf is a conffile')
    # }======

    # {====== installed, it serves as the unit would run it
    r = run(['apt-get', 'install', '-y', '--no-install-recommends', deb], env=env)
    check(r.returncode == 0, f'apt-get install ./deb: {r.stdout[-1500:]}{r.stderr[-1500:]}')
    unit = open('/lib/systemd/system/luamcp@.service').read()
    exec_start = re.search(r'^ExecStart=(.*)$', unit, re.M).group(1)
    check(exec_start.startswith('/usr/bin/luamcp '), f'the unit runs the installed binary: {exec_start}')
    app = os.path.join(tmp, 'srv', 'demo')
    shutil.copytree(os.path.join(src, 'tests', 'apps', 'db'), app)
    state = os.path.join(tmp, 'state', 'demo')
    os.makedirs(state)
    port = free_port()
    values = {'LUAMCP_LISTEN': f'127.0.0.1:{port}', 'LUAMCP_ARGS': '--no-watch', 'LUAMCP_APP': app}
    # systemd: ${VAR} is one word, $VAR splits at spaces
    argv = []
    for word in shlex.split(exec_start):
        m = re.fullmatch(r'\$(\w+)', word)
        argv += values[m.group(1)].split() if m else [re.sub(r'\$\{(\w+)\}', lambda x: values[x.group(1)], word)]
    served = subprocess.Popen(argv, env=dict(os.environ, STATE_DIRECTORY=state), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        def call(args):
            r = run(['node', os.path.join(src, 'tests', 'deploy', 'mcp_call.mjs'), '--http',
                     f'http://127.0.0.1:{port}/mcp', 'sql', json.dumps(args)])
            return json.loads(r.stdout) if r.returncode == 0 else None

        def ready():
            try:
                return urllib.request.urlopen(f'http://127.0.0.1:{port}/readyz', timeout=5).status == 200
            except OSError:
                return False

        wait_for(ready, 'the installed luamcp to be ready')
        a = call({'op': 'exec', 'sql': "INSERT INTO kv(k, v) VALUES ('deb', 'installed')"})
        check(a is not None and a['server']['name'] == 'db-test', f'the installed luamcp serves the app: {a}')
    finally:
        served.terminate()
        err = served.communicate(timeout=60)[1]
    check(served.returncode == 0, f'it stopped on SIGTERM, status 0: {served.returncode} {err[-500:]}')
    check(os.path.exists(os.path.join(state, 'db.sqlite')), 'mcp.db is in $STATE_DIRECTORY')

    # TLS through the installed library (/usr/lib/luamcp/libluamcp-tls.so)
    if shutil.which('openssl'):
        pem = os.path.join(tmp, 'tls.pem')
        run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
             '-keyout', pem, '-out', pem])
        tport = free_port()
        tls = subprocess.Popen(['/usr/bin/luamcp', 'serve', '--http', f'127.0.0.1:{tport}', '--cert', pem,
                                '--data', state, '--no-watch', app],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE

            def tls_ready():
                try:
                    return urllib.request.urlopen(f'https://127.0.0.1:{tport}/healthz', timeout=5, context=ctx).status
                except OSError:
                    return tls.poll() is not None and -1
            check(wait_for(tls_ready, 'TLS') == 200, 'TLS through the installed library')
        finally:
            tls.terminate()
            tls.communicate(timeout=60)
    # }======
finally:
    r = run(['apt-get', 'purge', '-y', 'luamcp'], env=env)
    pulled = sorted(installed() - before - {'luamcp'})
    if pulled:
        run(['apt-get', 'purge', '-y', *pulled], env=env)
    shutil.rmtree(tmp, ignore_errors=True)
check(not os.path.exists('/usr/bin/luamcp') and not os.path.exists('/etc/luamcp'), 'purged: no binary, no /etc/luamcp')
check(installed() == before, f'the packages as found: {sorted(installed() ^ before)}')
finish()
