#!/usr/bin/env bash
# Set up nictune on a fresh Debian/Ubuntu machine: system tools and a Python venv in .venv.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for tool in iperf3:iperf3 ethtool:ethtool ip:iproute2 ssh:openssh-client sshd:openssh-server \
            taskset:util-linux flock:util-linux setpriv:util-linux ping:iputils-ping tc:iproute2 pgrep:procps chromium:chromium \
            sockperf:sockperf; do
  bin=${tool%%:*}; pkg=${tool##*:}
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || need+=("$pkg")
done
# Debian's python3 creates venvs only with python3-venv (ensurepip) installed.
python3 -c "import ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
log=$(mktemp)
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]" >"$log" 2>&1; then
  grep -v -E "^WARNING: Location .* is ignored" "$log" >&2 || true
  echo "setup: pip install failed" >&2
  exit 1
fi
rm -f "$log"
# TuneD's profile parser, for the test that loads an exported profile with it: its Debian
# package unpacked into .cache/tuned, not installed (no daemon starts, nothing on the host changes).
if [ ! -f .cache/tuned/usr/lib/python3/dist-packages/tuned/profiles/loader.py ] && command -v apt-get >/dev/null; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq tuned >/dev/null 2>&1) || { $SUDO apt-get update -qq && (cd "$tmp" && apt-get download -qq tuned >/dev/null); }; then
    mkdir -p .cache/tuned && dpkg-deb -x "$tmp"/tuned_*.deb .cache/tuned
  else
    echo "setup: could not download TuneD's package (the export test that loads a profile with TuneD will fail)" >&2
  fi
  rm -rf "$tmp"
fi
# Compile nictune's modules once: an editable install leaves them as sources, and where
# PYTHONDONTWRITEBYTECODE is set (as on the project's machines) every command would compile them again
# (about 0.4 s of each start). Python checks each .pyc against its source, so an edit is never stale.
.venv/bin/python -m compileall -q -j 0 nictune >/dev/null
.venv/bin/python -c "import nictune" && echo "setup: ready (.venv/bin/nictune)"
