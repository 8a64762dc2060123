#!/usr/bin/env bash
# System packages the test suite needs beyond the virtualenv: kcat (Debian's), for tests/compat; Maven
# and a JDK for the Java clients' suite in tests/compat/java;
# chromium and chromium-driver (Debian's), for the console's browser tests in tests/console (Selenium is
# pointed at /usr/bin/chromedriver: nothing downloads a browser).
# Idempotent and quiet: does nothing when everything is present; runs `apt-get update` only when it
# has something to install. Without apt-get or root it only warns: the tests that need kcat skip
# (and fail when CI is set: tests/support/requirements.py).
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# Debian's ZooKeeper, for the cluster tests: only its jars are used (tests/support/zookeeper.py runs
# QuorumPeerMain with the machine's Java on a free port); the package starts no service.
[ -e /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
# Maven and a JDK, for the Java clients' suite (tests/compat/java): Maven resolves kafka-clients and JUnit
# from Maven Central into .cache/maven on first use.
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
# Chromium and its driver, for the console's browser tests (tests/console).
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "install-system-deps: not root; install ${missing[*]} to run the tests that need them" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: no apt-get; install ${missing[*]} to run the tests that need them" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "install-system-deps: could not install ${missing[*]}; the tests that need it will skip (fail under CI)" >&2
fi
