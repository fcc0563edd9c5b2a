#!/usr/bin/env bash
# Installs the Debian packages Sluice needs to build and test. Idempotent and quiet when all are present.
set -euo pipefail

packages=(
    build-essential cmake ninja-build ccache pkg-config clang
    libboost1.81-all-dev liburing-dev libspdlog-dev libfmt-dev libcli11-dev libhowardhinnant-date-dev
    libgtest-dev libgmock-dev libbenchmark-dev libbz2-dev
    fio curl jq python3-jinja2 unicode-data prometheus
)

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
# Node.js may come from another source that bundles npm; only ask Debian for it when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
    echo "sluice: missing Debian packages: ${missing[*]}" >&2
    echo "sluice: run as root, or install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "sluice: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
