#!/usr/bin/env bash
# Debian packages the test suites need beyond what a machine of this kind ships: docker-compose
# (the Compose file is checked by Compose itself; no engine is needed), the Python and PHP SDK
# suites (interpreters, pytest, mypy, PHPUnit, PSR packages) and the browser tests (Chromium). `npm test` and `.ci/run` both call this, so the README's test command works
# on a fresh machine: it installs only what is missing, as root or through sudo, and otherwise
# says exactly which command to run.
set -euo pipefail

readonly PACKAGES=(
  docker-compose
  python3 python3-venv python3-httpx python3-pytest python3-pytest-asyncio mypy python3-hatchling
  php-cli composer phpunit php-psr-http-client php-psr-http-factory php-psr-http-message
  php-nyholm-psr7 php-guzzlehttp-psr7 php-symfony-http-client php-curl php-mbstring
  chromium
)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

if [[ "$(id -u)" == 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  printf 'The tests need these Debian packages: %s\nInstall them with: sudo apt-get install -y --no-install-recommends %s\n' "${missing[*]}" "${missing[*]}" >&2
  exit 1
fi

printf '[test] installing Debian packages: %s\n' "${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
