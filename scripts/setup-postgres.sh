#!/usr/bin/env bash
# Provision the PostgreSQL server binaries the shared-store tests start in a temporary directory
# (tests/share/pgserver.py): Debian's postgresql (15 or newer; initdb, pg_ctl, postgres) with pg_trgm.
# No cluster is created and no service is started. Idempotent: a second run only checks and exits.
set -euo pipefail
log() { printf '[setup-postgres] %s\n' "$*" >&2; }

have_server() {
  local bin
  for bin in /usr/lib/postgresql/*/bin; do
    local version; version="$(basename "$(dirname "$bin")")"
    if [[ "$version" =~ ^[0-9]+$ ]] && ((version >= 15)) && [[ -x "$bin/initdb" && -x "$bin/pg_ctl" ]] \
        && compgen -G "/usr/share/postgresql/$version/extension/pg_trgm.control" >/dev/null; then
      return 0
    fi
  done
  return 1
}

if have_server; then
  exit 0
fi
packages=(postgresql postgresql-contrib)
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  log "missing system packages: ${packages[*]} (run as root, with sudo, or install them yourself)"; exit 1
fi
log "apt-get install ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# policy-rc.d 101: the package must not start a system cluster (the tests start their own)
"${sudo[@]}" sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d.pimem && chmod +x /usr/sbin/policy-rc.d.pimem'
if [[ ! -e /usr/sbin/policy-rc.d ]]; then "${sudo[@]}" cp /usr/sbin/policy-rc.d.pimem /usr/sbin/policy-rc.d; added=1; fi
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
if [[ "${added:-0}" == 1 ]]; then "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; fi
"${sudo[@]}" rm -f /usr/sbin/policy-rc.d.pimem
have_server || { log "postgresql installed but no server of version 15 or newer with pg_trgm was found"; exit 1; }
