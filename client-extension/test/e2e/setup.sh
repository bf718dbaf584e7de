#!/usr/bin/env bash
# Installs what the end-to-end test needs, idempotently (a second run does nothing):
#   - Debian packages: chromium (driven headless by playwright-core) and the build libraries that
#     code-server's native modules compile against;
#   - code-server 4.100.3 (VS Code 1.100 in a browser; the newest release that runs on Node 20)
#     into $HDCONTEXT_E2E_HOME (default ~/.cache/hdcontext-e2e), outside the repository.
# playwright-core is a devDependency of the extension itself (no browser download).
# Needs root (or sudo) for apt-get, and the Debian and npm registries. About 2 minutes the first time.
set -euo pipefail

CS_VERSION=4.100.3
E2E_HOME=${HDCONTEXT_E2E_HOME:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/hdcontext-e2e}
CS_DIR=$E2E_HOME/code-server-$CS_VERSION
CS_BIN=$CS_DIR/node_modules/.bin/code-server

APT_PACKAGES=(libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config ripgrep chromium)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup.sh: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ -x "$CS_BIN" ] && [ -f "$CS_DIR/.installed" ]; then
  echo "setup.sh: code-server $CS_VERSION already in $CS_DIR"
  exit 0
fi

echo "setup.sh: installing code-server $CS_VERSION into $CS_DIR"
rm -rf "$CS_DIR"
mkdir -p "$CS_DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# @vscode/ripgrep's postinstall downloads rg from the internet unless its cache (under $TMPDIR)
# already holds it: give it Debian's rg.
mkdir -p "$work/tmp/vscode-ripgrep-cache-1.15.11" "$work/stage"
cp "$(command -v rg)" "$work/stage/rg"
tar czf "$work/tmp/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$work/stage" rg
cd "$CS_DIR"
echo '{"name":"hdcontext-e2e-code-server","private":true}' > package.json
# npm 11 lost --unsafe-perm; node-pty's postinstall needs npx to say yes. Node headers come from
# /usr/include/node (npm's nodedir=/usr), so the native modules build offline.
TMPDIR=$work/tmp npm_config_yes=true npm_config_unsafe_perm=true \
  npm install --no-audit --no-fund --foreground-scripts "code-server@$CS_VERSION" > "$work/npm.log" 2>&1 \
  || { tail -50 "$work/npm.log"; echo "setup.sh: code-server install failed" >&2; exit 1; }
XDG_CONFIG_HOME=$work/xdg "$CS_BIN" --version
touch "$CS_DIR/.installed"
echo "setup.sh: done"
