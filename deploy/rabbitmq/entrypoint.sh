#!/bin/bash
# Renders definitions.json with the application user's credentials from the environment, then
# hands over to the image's own entrypoint. RabbitMQ creates no default user when definitions
# are imported at boot, so the user has to be in the file, and its password must not be in git.
set -euo pipefail

user="${MERX_AMQP_USER:-merx}"
password="${MERX_AMQP_PASSWORD:-}"
# The same password is embedded in AMQP_URL, and is spliced into JSON here: URL-safe only.
if [[ ! "$user" =~ ^[A-Za-z0-9._~-]+$ ]]; then
  echo "rabbitmq: MERX_AMQP_USER must use only A-Z a-z 0-9 . _ ~ -" >&2
  exit 78
fi
if [[ ! "$password" =~ ^[A-Za-z0-9._~-]{16,}$ ]]; then
  echo "rabbitmq: MERX_AMQP_PASSWORD must be at least 16 characters of A-Z a-z 0-9 . _ ~ - (e.g. openssl rand -hex 24)" >&2
  exit 78
fi

rendered_dir=/tmp/merx-rabbitmq
template=/etc/rabbitmq/merx/definitions.json
mkdir -p "$rendered_dir"
sed -e "s/__MERX_AMQP_USER__/${user}/g" -e "s/__MERX_AMQP_PASSWORD__/${password}/g" \
  "$template" > "$rendered_dir/definitions.json"
if [[ "$(id -u)" == 0 ]]; then
  chown -R rabbitmq:rabbitmq "$rendered_dir"
fi
chmod 0700 "$rendered_dir"
chmod 0600 "$rendered_dir/definitions.json"

exec docker-entrypoint.sh "$@"
