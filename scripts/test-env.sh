#!/usr/bin/env bash
# Prepares this machine for `npm test`: installs and starts what the tests need. Idempotent and quick when
# everything is already there. Slow artefacts are cached outside the clone under $CSTOR_CACHE.
set -euo pipefail
export CSTOR_CACHE="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}"
mkdir -p "$CSTOR_CACHE"
